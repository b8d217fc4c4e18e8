"""Cost plan: the price catalog's rows, the arithmetic, the unknown path and the guardrail."""
from __future__ import annotations

import csv
import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from vxtrain import api, model
from vxtrain.backends.emulator import EmulatorHandle
from vxtrain.cli import main
from vxtrain.catalog import prices
from vxtrain.loading.document import Document, NativeSpec, Position
from vxtrain.planning import bandwidth, cost
from vxtrain.render import cost as cost_text

PRICES_CSV = Path(prices.__file__).with_name("prices.csv")
N1S4 = 0.21849885  # copied: n1-standard-4, us-central1
H100 = 11.2660332  # copied: NVIDIA_H100_80GB, us-central1 (the billed SKU)
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


def prices_of(name: str) -> float:
    """The on-demand us-central1 price of a machine type or accelerator."""
    row = prices.machine_price("us-central1", name) or prices.accelerator_price("us-central1", name)
    assert row is not None
    return row.usd_per_hour


def cost_of(data: dict[str, Any]) -> cost.Cost:
    return cost.plan(model.build(data))


# --- the price catalog -----------------------------------------------------------

@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['region']}/{r['name']}")
def test_every_price_row_is_sourced_dated_and_positive(row: dict[str, str]) -> None:
    assert row["source"].startswith("https://"), row
    assert row["confidence"] in {"documented", "copied", "derived", "unverified"}, row
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", row["as_of"]), row
    assert row["kind"] in {prices.MACHINE, prices.ACCELERATOR}, row
    assert row["pricing"] in {prices.ON_DEMAND, prices.SPOT, prices.FLEX_START}, row
    assert float(row["usd_per_hour"]) > 0, row


def _on_demand_ce(row: dict[str, str]) -> float:
    (base,) = [r for r in _rows() if (r["region"], r["kind"], r["name"], r["pricing"])
               == (row["region"], row["kind"], row["name"], prices.ON_DEMAND)]
    return float(base["compute_engine_usd_per_hour"])


@pytest.mark.parametrize("row", _rows(), ids=lambda r: f"{r['region']}/{r['name']}/{r['pricing']}")
def test_a_price_is_compute_engine_plus_a_fee_of_15_percent_of_its_on_demand_price(row: dict[str, str]) -> None:
    ce, fee = float(row["compute_engine_usd_per_hour"]), float(row["management_fee_usd_per_hour"])
    assert ce > 0 and fee > 0
    assert float(row["usd_per_hour"]) == pytest.approx(ce + fee, abs=2e-8)  # each part rounded to 8 places
    # the copied SKUs are rounded to 7 decimals, the Compute Engine copies to 5: hence the tolerance
    assert fee == pytest.approx(0.15 * _on_demand_ce(row), rel=1e-4)


def test_spot_is_cheaper_than_on_demand() -> None:
    for row in _rows():
        if row["pricing"] == prices.SPOT:
            assert float(row["compute_engine_usd_per_hour"]) < _on_demand_ce(row), row


def test_only_vertex_ai_figures_are_better_than_unverified() -> None:
    """A figure read from Vertex AI's page or SKUs (a copy's URL) may be copied or derived; one built
    from Compute Engine prices with the inferred rule is unverified."""
    compute_engine = ("Cyclenerd/google-cloud-pricing-cost-calculator", "skypilot-org/skypilot-catalog")
    for row in _rows():
        assert (row["confidence"] == "unverified") == any(s in row["source"] for s in compute_engine), row


def test_the_copied_figures_are_the_ones_read() -> None:
    n1s4 = prices.machine_price("us-central1", "n1-standard-4")
    h100 = prices.accelerator_price("us-central1", "NVIDIA_H100_80GB")
    assert n1s4 is not None and h100 is not None
    assert (n1s4.usd_per_hour, n1s4.confidence) == (N1S4, "copied")
    assert (h100.usd_per_hour, h100.confidence) == (H100, "copied")
    assert (n1s4.compute_engine_usd_per_hour, n1s4.management_fee_usd_per_hour) == (0.189999, 0.02849985)
    assert (h100.compute_engine_usd_per_hour, h100.management_fee_usd_per_hour) == (9.7965506, 1.4694826)


def test_an_a3_node_costs_what_the_billed_skus_add_up_to() -> None:
    """The walk-through's on-demand a3-highgpu-8g bill: $101.5429684/h, of which $0.53561644 is its
    2,000 GB boot disk (not in vxtrain's figures); the machine is priced without its GPUs."""
    data = {"display_name": "j", "region": "us-central1",
            "chief": {"image": "i", "machine_type": "a3-highgpu-8g",
                      "accelerator": {"type": "NVIDIA_H100_80GB", "count": 8}}}
    c = cost_of(data)
    assert c.per_hour == pytest.approx(101.5429684 - 0.53561644, abs=1e-6)
    assert c.confidence == "derived"


def _generator() -> Any:
    gen = Path(__file__).resolve().parents[2] / "scripts" / "gen_prices.py"
    spec = importlib.util.spec_from_file_location("gen_prices", gen)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prices_csv_is_what_the_generator_writes() -> None:
    assert _generator().build() == PRICES_CSV.read_text(encoding="utf-8"), "run: python scripts/gen_prices.py"


def test_a_gpu_priced_from_a_machine_total_matches_the_billed_sku() -> None:
    """The H100 worked out of Compute Engine's a3-highgpu-8g total (minus the VM part and the Local SSD,
    / 8) is the Compute Engine part of Vertex AI's H100 SKU: the method behind the other built-in GPUs."""
    derived = {(r[0], r[2]): r for r in _generator()._bundled_gpus()}
    sku = prices.accelerator_price("us-central1", "NVIDIA_H100_80GB")
    assert sku is not None and sku.confidence == "copied"
    row = derived[("us-central1", "NVIDIA_H100_80GB")]
    assert float(row[5]) == pytest.approx(sku.compute_engine_usd_per_hour, abs=1e-5)


def test_a_price_the_catalog_lacks_is_none() -> None:
    assert prices.machine_price("us-east1", "a3-highgpu-8g") is None  # not in the copy
    assert prices.accelerator_price("us-central1", "NVIDIA_H200_141GB") is None
    assert prices.accelerator_price("us-central1", "NVIDIA_H100_80GB", prices.SPOT) is None
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
    # The plan contract: max_total is null without a timeout; the 7-day bound sits beside it.
    assert c.to_json()["max_total"] is None
    assert c.to_json()["max_total_at_default_timeout"] == pytest.approx(3 * N1S4 * 168)


def test_a_study_multiplies_by_trials_and_runs_parallel_trials_per_hour() -> None:
    study = {"metric": {"id": "acc", "goal": "maximize"}, "max_trials": 10, "parallel_trials": 3,
             "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}
    c = cost_of(job(study=study, scheduling={"timeout": "30m"}))
    trial = 3 * N1S4
    assert c.per_trial_hour == pytest.approx(trial)
    assert c.per_hour == pytest.approx(3 * trial)
    assert c.max_total == pytest.approx(trial * 0.5 * 10)
    assert c.to_json()["study"] == {"per_trial_hour": round(trial, 8), "max_trials": 10, "parallel_trials": 3}
    assert "3 trials at a time" in cost_text.total_lines(c)[0] and "(10 trials × 0.5 h timeout)" in cost_text.total_lines(c)[0]


def test_a_one_trial_at_a_time_study_says_trial() -> None:
    study = {"metric": {"id": "acc", "goal": "maximize"}, "max_trials": 1, "parallel_trials": 1,
             "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}
    line = cost_text.total_lines(cost_of(job(study=study, scheduling={"timeout": "1h"})))[0]
    assert "1 trial at a time" in line and "(1 trial × 1 h timeout)" in line


def test_spot_uses_spot_prices() -> None:
    row = prices.machine_price("us-central1", "n1-standard-4", prices.SPOT)
    assert row is not None and row.usd_per_hour < N1S4
    c = cost_of(job(scheduling={"timeout": "1h", "strategy": "SPOT"}))
    assert c.pricing == "spot" and c.confidence == "unverified"
    assert c.per_hour == pytest.approx(3 * row.usd_per_hour)
    assert cost_of(job()).per_hour == pytest.approx(3 * N1S4)  # on-demand unchanged


# --- unknown prices ------------------------------------------------------------------

def test_an_unknown_price_nulls_the_pool_and_the_job_and_is_listed() -> None:
    data = job(workers={"replicas": 2, "accelerator": {"type": "NVIDIA_H200_141GB", "count": 1}})
    out = cost_of(data).to_json()
    assert out["per_hour"] is None and out["max_total"] is None
    assert out["pools"][0]["per_hour"] == pytest.approx(N1S4)  # the known pool keeps its figure
    assert out["pools"][1]["per_node_hour"] is None and out["pools"][1]["confidence"] == "unknown"
    assert out["unknown"] == [{"pool": 1, "role": "workers", "kind": "accelerator",
                               "name": "NVIDIA_H200_141GB", "region": "us-central1",
                               "pricing": "on_demand"}]
    json.dumps(out)


H100_SPOT = {"scheduling": {"strategy": "SPOT"},
             "workers": {"replicas": 2, "machine_type": "a3-highgpu-8g",
                         "accelerator": {"type": "NVIDIA_H100_80GB", "count": 8}}}


def test_spot_without_a_spot_price_is_unknown_not_the_on_demand_price() -> None:
    c = cost_of(job(**H100_SPOT))
    assert c.per_hour is None
    assert {(u.kind, u.name, u.pricing) for u in c.unknown} == {("accelerator", "NVIDIA_H100_80GB", "spot")}


def test_flex_start_uses_dws_prices_where_the_catalog_has_them() -> None:
    """The walk-through's FLEX_START a3-highgpu-8g bill: $52.0306163/h with its $0.53561644/h boot disk
    (left out here); its Local SSD line used the monthly SKU price / 730, the catalog the rounded hourly
    figure it quotes, hence the tolerance."""
    data = {"display_name": "j", "region": "us-central1", "scheduling": {"strategy": "FLEX_START", "timeout": "2h"},
            "chief": {"image": "i", "machine_type": "a3-highgpu-8g",
                      "accelerator": {"type": "NVIDIA_H100_80GB", "count": 8}}}
    flex = cost_of(data)
    assert flex.pricing == "flex_start" and flex.confidence == "derived"
    assert flex.per_hour == pytest.approx(52.0306163 - 0.53561644, abs=1e-4)
    assert flex.per_hour < cost_of({**data, "scheduling": {"timeout": "2h"}}).per_hour  # cheaper than on-demand
    n1 = cost_of(job(scheduling={"strategy": "FLEX_START"}))  # no DWS price for N1 in the catalog
    assert n1.per_hour is None and {(u.name, u.pricing) for u in n1.unknown} == {("n1-standard-4", "flex_start")}
    assert "FLEX_START (Dynamic Workload Scheduler) price" in n1.unknown[0].message()


def test_no_region_is_unknown_once_for_the_job() -> None:
    data = job()
    del data["region"]
    nowhere = cost_of(data)
    assert nowhere.per_hour is None and [u.kind for u in nowhere.unknown] == ["region"]


def test_unknown_prices_are_warnings_at_the_key_that_asks_for_them() -> None:
    data = job(workers={"replicas": 2, "accelerator": {"type": "NVIDIA_H200_141GB", "count": 1}},
               defaults={"image": "i", "machine_type": "a3-ultragpu-8g"})
    positions: dict[tuple[str | int, ...], Position] = {("defaults", "machine_type"): Position("job.yaml", 5, 3),
                 ("workers", "accelerator", "type"): Position("job.yaml", 9, 11)}
    native = NativeSpec(data=data, format="native", source=Document(data, "job.yaml", positions))
    diags = cost.diagnostics(cost_of(data), native)
    assert {(d.severity, d.code, d.path, d.line) for d in diags} == {
        ("warning", "price-unknown", "defaults.machine_type", 5),
        ("warning", "price-unknown", "workers.accelerator.type", 9)}
    assert all("a3-ultragpu-8g" in d.message or "NVIDIA_H200_141GB" in d.message for d in diags)


# --- the guardrail ------------------------------------------------------------------

def test_over_limit_refuses_a_job_above_the_limit_and_passes_one_below() -> None:
    c = cost_of(job())
    assert cost.over_limit(c, 1.0) is None
    refused = cost.over_limit(c, 0.5)
    assert refused is not None and refused.severity == "error" and refused.code == "max-hourly-cost"
    assert "$0.6555" in refused.message


def test_over_limit_refuses_an_unknown_cost() -> None:
    refused = cost.over_limit(cost_of(job(**H100_SPOT)), 1000.0)
    assert refused is not None and "unknown" in refused.message and "NVIDIA_H100_80GB" in refused.message


# --- text --------------------------------------------------------------------------

def test_text_shows_pools_totals_and_the_reduction_server_trade_off() -> None:
    from rich.console import Console

    v100 = {"machine_type": "n1-highmem-96", "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 8}}
    data = job(chief=dict(v100), workers={"replicas": 4, **v100}, reduction_server={"replicas": 16})
    j = model.build(data)
    bw = bandwidth.plan(j, gradient_bytes=1.3e9)
    console = Console(width=140, record=True)
    c = cost.plan(j)
    for item in cost_text.items(c, bw):
        console.print(item)
    text = console.export_text()
    assert "n1-highcpu-16" in text and "unverified" in text
    assert c.per_hour == pytest.approx(5 * (prices_of("n1-highmem-96") + 8 * prices_of("NVIDIA_TESLA_V100"))
                                       + 16 * HIGHCPU16)
    assert f"Job: {cost.usd(c.per_hour)}/h" in text
    assert f"Reduction Server: {cost.usd(16 * HIGHCPU16)}/h" in text and "saved per step" in text


# --- the command line ------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
RS = ROOT / "configs" / "examples" / "reduction-server.yaml"


def spec_file(tmp_path: Path, **over: Any) -> Path:
    """A spec of :func:`job` whose chief exits at once (the emulator runs nothing but it)."""
    data = job(**over)
    data["defaults"]["command"] = ["python", "-c", "pass"]
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main([*argv, "--output", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_plan_json_has_the_cost_shape(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, doc = run_json(capsys, "plan", str(spec_file(tmp_path)))
    assert code == 0 and doc["diagnostics"] == []
    out = doc["cost"]
    assert {"currency", "region", "per_hour", "max_total", "pools", "unknown"} <= set(out)
    assert (out["currency"], out["region"], out["unknown"]) == ("USD", "us-central1", [])
    assert out["per_hour"] == pytest.approx(3 * N1S4) and out["max_total"] == pytest.approx(6 * N1S4)
    assert {"pool", "role", "replicas", "machine_type", "per_node_hour", "per_hour", "confidence",
            "source"} <= set(out["pools"][1])
    assert (out["pools"][1]["pool"], out["pools"][1]["role"], out["pools"][1]["confidence"]) == (
        1, "workers", "copied")


def test_plan_warns_about_an_unknown_price_and_validate_does_not(capsys: pytest.CaptureFixture[str],
                                                                 tmp_path: Path) -> None:
    h200 = tmp_path / "h200.yaml"  # no H200 or A3 Ultra price is in the catalog
    h200.write_text("display_name: h200\nregion: us-central1\nchief:\n  machine_type: a3-ultragpu-8g\n"
                    "  image: gcr.io/p/t:1\n  accelerator: {type: NVIDIA_H200_141GB, count: 8}\n")
    code, doc = run_json(capsys, "plan", str(h200))
    assert code == 0 and doc["cost"]["per_hour"] is None and doc["cost"]["max_total"] is None
    warned = [(d["code"], d["path"], d["line"]) for d in doc["diagnostics"]]
    assert warned == [("price-unknown", "chief.machine_type", 4), ("price-unknown", "chief.accelerator.type", 6)]
    code, doc = run_json(capsys, "validate", str(h200))
    assert code == 0 and doc["files"][0]["diagnostics"] == []
    code, doc = run_json(capsys, "plan", str(RS))  # the Reduction Server example is priced in full
    assert code == 0 and doc["cost"]["per_hour"] > 0 and doc["diagnostics"] == []


def test_plan_text_has_the_cost_table_under_the_bandwidth_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", str(RS), "--gradient-size", "1.3GB"]) == 0
    out = capsys.readouterr().out
    assert out.index("Bandwidth plan") < out.index("Cost plan")
    assert "Reduction Server: $10.43/h (7% of the job's cost) for all-reduce" in out and "saved per step" in out


def test_max_hourly_cost_on_plan(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    spec = str(spec_file(tmp_path))
    assert run_json(capsys, "plan", spec, "--max-hourly-cost", "1")[0] == 0
    code, doc = run_json(capsys, "plan", spec, "--max-hourly-cost", "0.5")
    assert code == 1 and doc["custom_job"] is None
    assert doc["cost"]["per_hour"] == pytest.approx(3 * N1S4)  # the reason is still shown
    assert [d["code"] for d in doc["diagnostics"]] == ["max-hourly-cost"]
    assert main(["plan", spec, "--max-hourly-cost", "-1"]) == 2


def test_diff_shows_cost_changes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["diff", str(RS), "--after-set", "workers.replicas=9", "--output", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    changed = {c["path"]: (c["before"], c["after"]) for c in doc["cost"]}
    assert changed["pools[1].replicas"] == (4, 9)
    assert changed["pools[2].per_hour"] == (pytest.approx(16 * HIGHCPU16), pytest.approx(32 * HIGHCPU16))


def test_the_python_api_plan_has_the_cost(tmp_path: Path) -> None:
    result = api.plan(spec_file(tmp_path))
    assert result.cost.per_hour == pytest.approx(3 * N1S4)


# --- the guardrail sends nothing -------------------------------------------------------

def listed(capsys: pytest.CaptureFixture[str], emulator: EmulatorHandle) -> list[Any]:
    code, doc = run_json(capsys, "list", "--endpoint", emulator.address, "--project", "p",
                         "--region", "us-central1")
    assert code == 0
    return list(doc["jobs"])


@pytest.mark.parametrize("over", [{"scheduling": {"timeout": "2h"}}, H100_SPOT], ids=["over", "unknown"])
def test_submit_over_the_limit_sends_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                             emulator: EmulatorHandle, over: dict[str, Any]) -> None:
    spec = str(spec_file(tmp_path, **over))
    code = main(["submit", spec, "--endpoint", emulator.address, "--project", "p", "--max-hourly-cost", "0.5"])
    err = capsys.readouterr().err
    assert code == 1 and "[max-hourly-cost]" in err
    assert emulator.jobs() == [] and listed(capsys, emulator) == []


def test_submit_under_the_limit_is_sent(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                        emulator: EmulatorHandle) -> None:
    """The control: the same path does reach the emulator when the job is within the limit."""
    spec = str(spec_file(tmp_path))
    assert main(["submit", spec, "--endpoint", emulator.address, "--project", "p", "--max-hourly-cost", "1"]) == 0
    capsys.readouterr()
    assert len(emulator.jobs()) == 1 and len(listed(capsys, emulator)) == 1


def test_the_text_says_which_prices_it_used() -> None:
    spot = cost_text.source_lines(cost_of(job(scheduling={"strategy": "SPOT"})))
    assert spot[0].startswith("Spot list prices") and "Cyclenerd" in spot[1]
    assert cost_text.source_lines(cost_of(job()))[0].startswith("On-demand list prices")


# --- TPU hosts -----------------------------------------------------------------------

def tpu_job(machine: str = "ct5lp-hightpu-4t", **over: Any) -> dict[str, Any]:
    """A one-replica TPU job in us-central1 (the chief only, as Vertex AI requires)."""
    data: dict[str, Any] = {"display_name": "t", "region": "us-central1", "scheduling": {"timeout": "2h"},
                            "chief": {"image": "gcr.io/p/t:1", "machine_type": machine}}
    data["chief"].update(over)
    return data


def test_a_tpu_host_is_priced_per_machine_with_its_chips() -> None:
    host = prices.machine_price("us-central1", "ct5lp-hightpu-4t")
    assert host is not None and host.usd_per_hour == pytest.approx(4 * 1.2 * 1.15)
    c = cost_of(tpu_job())
    assert c.per_hour == pytest.approx(host.usd_per_hour) and c.confidence == "unverified" and c.unknown == []
    # the chips named as an accelerator are in the host's price already: no second line, nothing unknown
    named = cost_of(tpu_job(accelerator={"type": "TPU_V5_LITEPOD", "count": 4}))
    assert named.per_hour == pytest.approx(host.usd_per_hour) and named.unknown == []
    assert [line.name for line in named.pools[0].lines] == ["ct5lp-hightpu-4t"]


def test_a_multi_host_slice_costs_hosts_times_one_host() -> None:
    """A 2x4 slice of ct5lp-hightpu-4t is one replica of 2 hosts: 8 chips, what one ct5lp-hightpu-8t costs."""
    one = cost_of(tpu_job())
    slice_ = cost.plan(model.build(tpu_job()), hosts={"chief": 2})
    eight = cost_of(tpu_job("ct5lp-hightpu-8t"))
    assert slice_.pools[0].hosts == 2 and slice_.pools[0].per_node_hour == one.pools[0].per_node_hour
    assert slice_.per_hour == pytest.approx(2 * one.per_hour) == pytest.approx(eight.per_hour)
    assert slice_.max_total == pytest.approx(2 * 2 * one.per_hour)
    out = slice_.to_json()["pools"][0]
    assert (out["replicas"], out["hosts"], out["per_hour"]) == (1, 2, pytest.approx(2 * one.per_hour))
    assert cost_of(job()).to_json()["pools"][1]["hosts"] == 1  # every other pool: one host per replica
    from rich.console import Console

    console = Console(width=140, record=True)
    for item in cost_text.items(slice_):
        console.print(item)
    assert "1 × 2 hosts" in console.export_text()


def test_tpu_spot_and_the_tpus_without_a_price() -> None:
    spot = cost_of(tpu_job("ct6e-standard-8t", **{}) | {"scheduling": {"strategy": "SPOT", "timeout": "1h"}})
    assert spot.pricing == "spot" and spot.per_hour == pytest.approx(4.35366 + 0.15 * 21.6)
    for machine, accelerator in [("tpu7x-standard-4t", None), ("cloud-tpu", {"type": "TPU_V3", "count": 8})]:
        over = {"accelerator": accelerator} if accelerator else {}
        unknown = cost_of(tpu_job(machine, **over))
        assert unknown.per_hour is None and (prices.MACHINE, machine) in {(u.kind, u.name) for u in unknown.unknown}
    outside = cost_of(tpu_job() | {"region": "europe-west4"})  # v5e is not trained there: no price either
    assert outside.per_hour is None


# --- persistent resources ------------------------------------------------------------

def test_a_job_on_a_persistent_resource_is_not_billed_per_job() -> None:
    c = cost.plan(model.build(job()), persistent_resource="train-pool", project="p")
    assert (c.pricing, c.billed_via) == ("persistent_resource",
                                          "projects/p/locations/us-central1/persistentResources/train-pool")
    assert c.per_hour == 0 and c.max_total == 0 and c.unknown == [] and c.confidence == "documented"
    out = c.to_json()
    assert (out["pricing"], out["billed_via"], out["per_hour"], out["max_total"]) == (
        "persistent_resource", c.billed_via, 0, 0)
    assert [(p["role"], p["per_node_hour"], p["per_hour"], p["prices"]) for p in out["pools"]] == [
        ("chief", 0, 0, []), ("workers", 0, 0, [])]
    assert out["source"] == cost.PERSISTENT_RESOURCE_BILLING
    assert cost.over_limit(c, 0.01) is None  # --max-hourly-cost passes it
    assert cost.diagnostics(c) == []
    json.dumps(out)


def test_a_persistent_resource_job_needs_no_price_and_no_region() -> None:
    """What the catalog cannot price (H200) or a job without a region is still 0 per job: the resource is billed."""
    data = job(workers={"replicas": 2, "machine_type": "a3-ultragpu-8g",
                        "accelerator": {"type": "NVIDIA_H200_141GB", "count": 8}})
    del data["region"]
    c = cost.plan(model.build(data), persistent_resource="train-pool")
    assert c.billed_via == "train-pool" and c.per_hour == 0 and c.unknown == []
    assert cost.over_limit(c, 1.0) is None
    study = {"metric": {"id": "acc", "goal": "maximize"}, "max_trials": 10, "parallel_trials": 3,
             "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}
    trials = cost.plan(model.build(job(study=study)), persistent_resource="train-pool")
    assert trials.per_hour == 0 and trials.max_total == 0


def test_the_text_says_the_persistent_resource_is_billed_while_it_runs() -> None:
    from rich.console import Console

    c = cost.plan(model.build(job()), persistent_resource="train-pool", project="p")
    console = Console(width=200, record=True)
    for item in cost_text.items(c):
        console.print(item, markup=not isinstance(item, str))  # as `vxtrain plan` prints them
    text = " ".join(console.export_text().split())  # the title wraps at the table's width
    assert "billed via persistent resource projects/p/locations/us-central1/persistentResources/train-pool" in text
    (line,) = cost_text.total_lines(c)
    assert line.startswith("Job: $0 per job") and "billed for as long as it is running" in line
    assert line.endswith("[documented]") and "[documented]" in text
    assert cost.PERSISTENT_RESOURCE_BILLING in cost_text.source_lines(c)[0]
    assert "n1-standard-4" in text and "documented" in text
