"""Cost plan: the price catalog's rows, the arithmetic, the unknown path and the guardrail."""
from __future__ import annotations

import csv
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest

from vxtrain import model
from vxtrain.catalog import prices
from vxtrain.loading.document import Document, NativeSpec, Position
from vxtrain.planning import bandwidth, cost

PRICES_CSV = Path(prices.__file__).with_name("prices.csv")
N1S4 = 0.21849885  # copied: n1-standard-4, us-central1
H100 = 9.79655057  # copied: NVIDIA_H100_80GB, us-central1
HIGHCPU16 = 0.65180712  # unverified: n1-highcpu-16, us-central1 (Compute Engine × 1.15)


def _rows() -> list[dict[str, str]]:
    with open(PRICES_CSV, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


def job(**over: Any) -> dict[str, Any]:
    """A three-node n1-standard-4 job in us-central1 with a 2 h timeout."""
    data: dict[str, Any] = {
        "display_name": "j", "region": "us-central1", "scheduling": {"timeout": "2h"},
        "defaults": {"image": "gcr.io/p/t:1", "machine_type": "n1-standard-4"},
        "chief": {}, "workers": {"replicas": 2},
    }
    data.update(over)
    return data


def cost_of(data: dict[str, Any]) -> cost.Cost:
    return cost.plan(model.build(data))


# --- the price catalog -----------------------------------------------------------

@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['region']}/{r['name']}")
def test_every_price_row_is_sourced_dated_and_positive(row: dict[str, str]) -> None:
    assert row["source"].startswith("https://"), row
    assert row["confidence"] in {"documented", "copied", "derived", "unverified"}, row
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["as_of"]), row
    assert row["kind"] in {prices.MACHINE, prices.ACCELERATOR}, row
    assert float(row["usd_per_hour"]) > 0, row
    assert not row["spot_usd_per_hour"] or float(row["spot_usd_per_hour"]) > 0, row


@pytest.mark.parametrize("row", [r for r in _rows() if r["training_premium"]],
                         ids=lambda r: f"{r['region']}/{r['name']}")
def test_a_price_with_two_parts_is_compute_engine_plus_the_premium(row: dict[str, str]) -> None:
    ce, premium = float(row["compute_engine_usd_per_hour"]), float(row["training_premium"])
    assert ce > 0 and premium >= 0
    assert float(row["usd_per_hour"]) == pytest.approx(ce * (1 + premium), abs=1e-8)


def test_the_inferred_premium_is_never_more_than_unverified() -> None:
    """Only a figure read from Google's page (or a copy) may be better than unverified."""
    for row in _rows():
        if "vertex-ai" not in row["source"]:
            assert row["confidence"] == "unverified", row


def test_the_copied_figures_are_the_ones_read() -> None:
    n1s4 = prices.machine_price("us-central1", "n1-standard-4")
    h100 = prices.accelerator_price("us-central1", "NVIDIA_H100_80GB")
    assert n1s4 is not None and h100 is not None
    assert (n1s4.usd_per_hour, n1s4.confidence) == (N1S4, "copied")
    assert (h100.usd_per_hour, h100.confidence) == (H100, "copied")
    assert (n1s4.compute_engine_usd_per_hour, n1s4.training_premium) == (0.189999, 0.15)


def test_no_accelerator_optimized_machine_is_priced_as_a_vertex_machine() -> None:
    """A2/A3/G2 Compute Engine totals include their GPUs; Vertex bills GPUs as separate lines."""
    assert not [r for r in _rows() if r["kind"] == prices.MACHINE and not r["name"].startswith("n1-")]


def test_prices_csv_is_what_the_generator_writes() -> None:
    gen = Path(__file__).resolve().parents[2] / "scripts" / "gen_prices.py"
    spec = importlib.util.spec_from_file_location("gen_prices", gen)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build() == PRICES_CSV.read_text(encoding="utf-8"), "run: python scripts/gen_prices.py"


def test_a_price_the_catalog_lacks_is_none() -> None:
    assert prices.machine_price("us-central1", "a3-highgpu-8g") is None
    assert prices.accelerator_price("us-central1", "NVIDIA_TESLA_V100") is None
    assert prices.machine_price("mars-north1", "n1-standard-4") is None


# --- arithmetic --------------------------------------------------------------------

def test_pool_per_hour_is_replicas_times_per_node_and_the_job_sums_pools() -> None:
    c = cost_of(job())
    assert [(p.role, p.replicas, p.per_node_hour) for p in c.pools] == [
        ("chief", 1, N1S4), ("workers", 2, N1S4)]
    assert c.pools[1].per_hour == pytest.approx(2 * N1S4)
    assert c.per_hour == pytest.approx(3 * N1S4)
    assert c.max_total == pytest.approx(3 * N1S4 * 2)
    assert c.unknown == [] and c.confidence == "copied"


def test_accelerators_add_count_times_their_price_to_each_node() -> None:
    data = job(workers={"replicas": 2, "accelerator": {"type": "NVIDIA_H100_80GB", "count": 2}})
    c = cost_of(data)
    assert c.pools[1].per_node_hour == pytest.approx(N1S4 + 2 * H100)
    assert c.pools[1].per_hour == pytest.approx(2 * (N1S4 + 2 * H100))
    assert c.per_hour == pytest.approx(N1S4 + 2 * (N1S4 + 2 * H100))


def test_the_reduction_server_pool_is_in_the_sum() -> None:
    data = job(reduction_server={"replicas": 4})  # n1-highcpu-16 by default
    c = cost_of(data)
    rs = c.pools[-1]
    assert (rs.index, rs.role, rs.machine_type, rs.confidence) == (2, "reduction_server", "n1-highcpu-16",
                                                                   "unverified")
    assert rs.per_hour == pytest.approx(4 * HIGHCPU16)
    assert c.per_hour == pytest.approx(3 * N1S4 + 4 * HIGHCPU16)
    assert c.confidence == "unverified"  # the weakest price sets it


def test_auto_reduction_server_is_priced_once_resolved() -> None:
    data = job(reduction_server={"replicas": "auto"})
    j = model.build(data)
    resolved = bandwidth.resolve(j, bandwidth.plan(j))
    c = cost.plan(resolved)
    assert c.pools[-1].replicas == resolved.pools["reduction_server"].replicas
    assert c.pools[-1].per_hour is not None


def test_without_a_timeout_the_bound_is_vertex_default_of_seven_days() -> None:
    c = cost_of(job(scheduling=None))
    assert c.timeout_default and c.timeout_seconds == 7 * 24 * 3600
    assert c.max_total == pytest.approx(3 * N1S4 * 168)
    assert c.to_json()["timeout_hours"] == 168


def test_a_study_multiplies_by_trials_and_runs_parallel_trials_per_hour() -> None:
    study = {"metric": {"id": "acc", "goal": "maximize"}, "max_trials": 10, "parallel_trials": 3,
             "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}
    c = cost_of(job(study=study, scheduling={"timeout": "30m"}))
    trial = 3 * N1S4
    assert c.per_trial_hour == pytest.approx(trial)
    assert c.per_hour == pytest.approx(3 * trial)
    assert c.max_total == pytest.approx(trial * 0.5 * 10)
    assert c.to_json()["study"] == {"per_trial_hour": round(trial, 8), "max_trials": 10, "parallel_trials": 3}


def test_spot_uses_spot_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    row = prices.machine_price("us-central1", "n1-standard-4")
    assert row is not None
    spot = prices.Price(**{**row.__dict__, "spot_usd_per_hour": 0.06})
    monkeypatch.setitem(prices._prices(), ("us-central1", "machine", "n1-standard-4"), spot)
    c = cost_of(job(scheduling={"timeout": "1h", "strategy": "SPOT"}))
    assert c.pricing == "spot"
    assert c.per_hour == pytest.approx(3 * 0.06)
    assert cost_of(job()).per_hour == pytest.approx(3 * N1S4)  # on-demand unchanged


# --- unknown prices ------------------------------------------------------------------

def test_an_unknown_price_nulls_the_pool_and_the_job_and_is_listed() -> None:
    data = job(workers={"replicas": 2, "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 1}})
    out = cost_of(data).to_json()
    assert out["per_hour"] is None and out["max_total"] is None
    assert out["pools"][0]["per_hour"] == pytest.approx(N1S4)  # the known pool keeps its figure
    assert out["pools"][1]["per_node_hour"] is None and out["pools"][1]["confidence"] == "unknown"
    assert out["unknown"] == [{"pool": 1, "role": "workers", "kind": "accelerator",
                               "name": "NVIDIA_TESLA_V100", "region": "us-central1",
                               "pricing": "on_demand"}]
    json.dumps(out)


def test_spot_without_a_spot_price_is_unknown_not_the_on_demand_price() -> None:
    c = cost_of(job(scheduling={"strategy": "SPOT"}))
    assert c.per_hour is None
    assert {(u.kind, u.name, u.pricing) for u in c.unknown} == {("machine", "n1-standard-4", "spot")}


def test_flex_start_and_no_region_are_unknown_once_for_the_job() -> None:
    flex = cost_of(job(scheduling={"strategy": "FLEX_START"}))
    assert flex.per_hour is None and [u.kind for u in flex.unknown] == ["pricing"]
    data = job()
    del data["region"]
    nowhere = cost_of(data)
    assert nowhere.per_hour is None and [u.kind for u in nowhere.unknown] == ["region"]


def test_unknown_prices_are_warnings_at_the_key_that_asks_for_them() -> None:
    data = job(workers={"replicas": 2, "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 1}},
               defaults={"image": "i", "machine_type": "a3-highgpu-8g"})
    positions: dict[tuple[str | int, ...], Position] = {("defaults", "machine_type"): Position("job.yaml", 5, 3),
                 ("workers", "accelerator", "type"): Position("job.yaml", 9, 11)}
    native = NativeSpec(data=data, format="native", source=Document(data, "job.yaml", positions))
    diags = cost.diagnostics(cost_of(data), native)
    assert {(d.severity, d.code, d.path, d.line) for d in diags} == {
        ("warning", "price-unknown", "defaults.machine_type", 5),
        ("warning", "price-unknown", "workers.accelerator.type", 9)}
    assert all("a3-highgpu-8g" in d.message or "NVIDIA_TESLA_V100" in d.message for d in diags)


# --- the guardrail ------------------------------------------------------------------

def test_over_limit_refuses_a_job_above_the_limit_and_passes_one_below() -> None:
    c = cost_of(job())
    assert cost.over_limit(c, 1.0) is None
    refused = cost.over_limit(c, 0.5)
    assert refused is not None and refused.severity == "error" and refused.code == "max-hourly-cost"
    assert "$0.6555" in refused.message


def test_over_limit_refuses_an_unknown_cost() -> None:
    refused = cost.over_limit(cost_of(job(scheduling={"strategy": "SPOT"})), 1000.0)
    assert refused is not None and "unknown" in refused.message and "n1-standard-4" in refused.message


# --- text --------------------------------------------------------------------------

def test_text_shows_pools_totals_and_the_reduction_server_trade_off() -> None:
    from rich.console import Console

    v100 = {"machine_type": "n1-highmem-96", "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 8}}
    data = job(chief=dict(v100), workers={"replicas": 4, **v100}, reduction_server={"replicas": 16})
    j = model.build(data)
    bw = bandwidth.plan(j, gradient_bytes=1.3e9)
    console = Console(width=140, record=True)
    for item in cost.render(cost.plan(j), bw):
        console.print(item)
    text = console.export_text()
    assert "n1-highcpu-16" in text and "unverified" in text
    assert "Job: cost unknown (no price for NVIDIA_TESLA_V100 in us-central1)" in text
    assert f"Reduction Server: {cost.usd(16 * HIGHCPU16)}/h" in text and "saved per step" in text
