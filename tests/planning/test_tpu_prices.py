"""TPU and new-accelerator prices: every TPU machine type is priced or deliberately unknown, and the
priced rows are reproduced from their transcribed input (scripts/prices/cloud_tpu.csv)."""
from __future__ import annotations

import csv
import importlib.util
import shutil
from pathlib import Path
from typing import Any

import pytest

from vxtrain.catalog import prices

ROOT = Path(__file__).resolve().parents[2]
CATALOG = ROOT / "vxtrain" / "catalog"
INPUTS = ROOT / "scripts" / "prices"
#: Vertex AI's key for a TPU generation in region_accelerators.csv, per machine-type prefix.
TRAINING_KEY = {"ct5lp-": "TPU_V5_LITEPOD", "ct6e-": "TPU v6e (ct6e)"}


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("gen_prices", ROOT / "scripts" / "gen_prices.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


UNPRICED = {(r["kind"], r["name"]): r["reason"] for r in _csv(INPUTS / "unpriced.csv")}
PRICED = {(p.kind, p.name) for p in prices.all_prices()}
TPU_MACHINES = [r["name"] for r in _csv(CATALOG / "training_machines.csv") if "TPU" in r["family"]]


def test_the_training_list_has_tpu_machine_types() -> None:
    assert {"cloud-tpu", "ct5lp-hightpu-4t", "ct6e-standard-8t", "tpu7x-standard-4t"} <= set(TPU_MACHINES)


@pytest.mark.parametrize("name", TPU_MACHINES)
def test_every_tpu_machine_type_is_priced_or_unknown_with_a_reason(name: str) -> None:
    """A TPU type added to training_machines.csv fails here until someone prices it (scripts/prices/) or
    lists it in scripts/prices/unpriced.csv with the reason it has no price."""
    key = (prices.MACHINE, name)
    assert (key in PRICED) != (key in UNPRICED), f"{name}: price it or list it in scripts/prices/unpriced.csv"
    if key in UNPRICED:
        assert len(UNPRICED[key]) > 20, f"{name}: say why it has no price"


@pytest.mark.parametrize("key", sorted(UNPRICED), ids=lambda k: k[1])
def test_what_is_unpriced_has_no_row_and_a_reason(key: tuple[str, str]) -> None:
    assert key not in PRICED and UNPRICED[key].strip()


def test_h200_b200_and_gb200_stay_unknown() -> None:
    for region in ("us-central1", "us-east4", "us-west1"):
        assert prices.machine_price(region, "a3-ultragpu-8g") is None
        assert prices.accelerator_price(region, "NVIDIA_H200_141GB") is None
        assert prices.machine_price(region, "a4-highgpu-8g") is None
        assert prices.accelerator_price(region, "NVIDIA_B200") is None
    assert prices.machine_price("us-central1", "a4x-highgpu-4g") is None


def test_tpu_rows_are_only_in_regions_where_vertex_trains_that_tpu() -> None:
    offered = {(r["region"], r["accelerator"]) for r in _csv(CATALOG / "region_accelerators.csv")
               if r["offered_for_training"] == "yes"}
    rows = [p for p in prices.all_prices() if p.name.startswith(tuple(TRAINING_KEY))]
    assert len(rows) == 2 * 3 * (4 + 6)  # on-demand and Spot × 1t/4t/8t × (v5e regions + v6e regions)
    for p in rows:
        key = next(v for k, v in TRAINING_KEY.items() if p.name.startswith(k))
        assert (p.region, key) in offered, p
        assert p.kind == prices.MACHINE and p.confidence == "unverified" and "skypilot-catalog" in p.source


@pytest.mark.parametrize(("region", "machine", "pricing", "ce", "usd"), [
    # Cloud TPU v5e: $1.20 per chip-hour in us-central1 (tpu-v5litepod-4: $4.80); + 15 % of on-demand
    ("us-central1", "ct5lp-hightpu-4t", prices.ON_DEMAND, 4.8, 5.52),
    ("us-west4", "ct5lp-hightpu-1t", prices.SPOT, 0.48, 0.66),
    # Cloud TPU v6e: $2.97 per chip-hour in europe-west4 (tpu-v6e-8: $23.76)
    ("europe-west4", "ct6e-standard-8t", prices.ON_DEMAND, 23.76, 27.324),
    ("us-east5", "ct6e-standard-1t", prices.SPOT, 1.215, 1.62),
])
def test_tpu_rows_reproduce_their_input(region: str, machine: str, pricing: str, ce: float, usd: float) -> None:
    row = prices.machine_price(region, machine, pricing)
    assert row is not None
    assert (row.compute_engine_usd_per_hour, row.usd_per_hour) == (pytest.approx(ce), pytest.approx(usd))
    (read,) = [r for r in _csv(INPUTS / "cloud_tpu.csv") if (r["region"], r["machine"]) == (region, machine)]
    column = "usd_per_hour" if pricing == prices.ON_DEMAND else "spot_usd_per_hour"
    assert float(read[column]) == ce


def test_a_tpu_host_costs_its_chips_times_one_per_chip_price() -> None:
    """The rows of a region agree on one per-chip price (4t = 4 × 1t, 8t = 8 × 1t): Cloud TPU bills per chip."""
    for p in prices.all_prices():
        if p.name.endswith("-1t") and p.pricing == prices.ON_DEMAND:
            family = p.name[:-len("1t")]
            for chips in (4, 8):
                host = prices.machine_price(p.region, f"{family}{chips}t")
                assert host is not None and host.usd_per_hour == pytest.approx(chips * p.usd_per_hour), host


@pytest.fixture
def inputs_copy(tmp_path: Path) -> tuple[Any, Path]:
    """The generator reading a copy of scripts/prices/ (so a test can break one input)."""
    gen = _generator()
    copy = tmp_path / "prices"
    shutil.copytree(INPUTS, copy)
    gen.INPUTS = copy
    return gen, copy


def test_the_generator_refuses_to_price_what_is_listed_unpriced(inputs_copy: tuple[Any, Path]) -> None:
    gen, copy = inputs_copy
    assert gen.build() == (CATALOG / "prices.csv").read_text(encoding="utf-8")  # the copy builds the catalog
    with open(copy / "unpriced.csv", "a", encoding="utf-8") as f:
        f.write('ct5lp-hightpu-4t,machine,"a test"\n')
    with pytest.raises(SystemExit, match="ct5lp-hightpu-4t"):
        gen.build()


def test_the_generator_refuses_a_tpu_row_from_another_sku(inputs_copy: tuple[Any, Path]) -> None:
    gen, copy = inputs_copy
    path = copy / "cloud_tpu.csv"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "ct5lp-hightpu-4t,4,tpu-v5litepod-4,us-west4,us-west4-a,4.8,", "ct5lp-hightpu-4t,4,tpu-v5litepod-4,us-west4,"
        "us-west4-a,2.4,"), encoding="utf-8")  # a DWS-like half price: not 4 × the 1-chip host's
    with pytest.raises(SystemExit, match="not 4 x"):
        gen.build()
