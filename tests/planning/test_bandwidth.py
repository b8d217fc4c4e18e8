"""Bandwidth plan: Reduction Server sizing, diagnostics, all-reduce math, and its text (vxtrain.render.bandwidth)."""
from __future__ import annotations

import json
import math
from typing import Any

import pytest

from vxtrain.planning import bandwidth as planning
from vxtrain.render import bandwidth as bandwidth_text
from vxtrain import model
from vxtrain.loading.document import Document, NativeSpec, Position

V100X8 = {"type": "NVIDIA_TESLA_V100", "count": 8}
BIG = {"machine_type": "n1-highmem-96", "accelerator": V100X8}


def google_example(**rs: Any) -> dict[str, Any]:
    """Google's documented example: chief + 4 workers of n1-highmem-96 with 8 × V100."""
    return {
        "display_name": "bert", "region": "us-central1",
        "defaults": {"image": "gcr.io/p/train:1", "command": ["python", "train.py"]},
        "chief": dict(BIG), "workers": {"replicas": 4, **BIG},
        "reduction_server": {"replicas": "auto", **rs},
    }


def native_for(data: dict[str, Any]) -> NativeSpec:
    positions = {("reduction_server",): Position("job.yaml", 20, 1),
                 ("reduction_server", "replicas"): Position("job.yaml", 21, 3)}
    return NativeSpec(data=data, format="native", source=Document(data, "job.yaml", positions))


def test_google_reduction_server_example_sizes_16_n1_highcpu_16() -> None:
    result = planning.plan(model.build(google_example()))
    out = result.to_json()
    assert out["training_gbps"] == 500
    assert out["reduction_server"]["machine_type"] == "n1-highcpu-16"
    assert out["reduction_server"]["replicas"] == 16
    assert out["reduction_server"]["gbps_per_replica"] == 32
    assert out["server_gbps"] == 512
    assert result.diagnostics == []


def test_pool_rows_have_the_contract_shape() -> None:
    out = planning.plan(model.build(google_example())).to_json()
    assert list(out)[:4] == ["training_gbps", "server_gbps", "reduction_server", "pools"]
    keys = ["index", "role", "replicas", "machine_type", "accelerator_type", "accelerator_count",
            "gbps_per_node", "total_gbps", "confidence", "source", "gpu_network", "gpu_network_source"]
    assert all(list(row) == keys for row in out["pools"])
    assert [(r["index"], r["role"], r["replicas"], r["total_gbps"]) for r in out["pools"]] == [
        (0, "chief", 1, 100), (1, "workers", 4, 400), (2, "reduction_server", 16, 512)]
    assert "allreduce" not in out
    json.dumps(out)  # plain JSON


@pytest.mark.parametrize(("workers", "expected"), [(0, 4), (1, 7), (4, 16), (7, 25), (15, 50)])
def test_auto_replicas_is_ceil_of_training_over_rs_node(workers: int, expected: int) -> None:
    data = google_example()
    if workers:
        data["workers"]["replicas"] = workers
    else:
        del data["workers"]
    rs = planning.plan(model.build(data)).reduction_server
    assert rs is not None and rs.replicas == expected
    assert rs.replicas == math.ceil((workers + 1) * 100 / 32)


def test_reduction_server_without_a_count_is_sized_like_auto() -> None:
    data = google_example()
    del data["reduction_server"]["replicas"]
    job = model.build(data)
    result = planning.plan(job)
    assert result.reduction_server is not None and result.reduction_server.auto
    assert planning.resolve(job, result).pools["reduction_server"].replicas == 16


def test_explicit_short_reduction_server_warns_with_the_count_that_suffices() -> None:
    data = google_example()
    data["reduction_server"]["replicas"] = 8
    result = planning.plan(model.build(data), native_for(data))
    [diag] = result.diagnostics
    assert (diag.severity, diag.code) == ("warning", "rs-bandwidth")
    assert "replicas: 16" in diag.message and "256 Gbps" in diag.message and "500 Gbps" in diag.message
    assert (diag.path, diag.file, diag.line, diag.column) == (
        "reduction_server.replicas", "job.yaml", 21, 3)
    assert result.reduction_server is not None and result.reduction_server.replicas == 8
    assert result.server_gbps == 256


def test_explicit_short_reduction_server_without_native_still_has_a_path() -> None:
    data = google_example()
    data["reduction_server"]["replicas"] = 15
    [diag] = planning.plan(model.build(data)).diagnostics
    assert diag.path == "reduction_server.replicas" and diag.line is None


@pytest.mark.parametrize("replicas", [16, 17, 40])
def test_explicit_sufficient_reduction_server_is_quiet(replicas: int) -> None:
    data = google_example()
    data["reduction_server"]["replicas"] = replicas
    assert planning.plan(model.build(data)).diagnostics == []


def test_unknown_training_machine_is_shown_unknown_and_auto_is_an_error() -> None:
    data = google_example()
    data["workers"] = {"replicas": 2, "machine_type": "zz-custom-1"}
    result = planning.plan(model.build(data), native_for(data))
    row = result.to_json()["pools"][1]
    assert (row["gbps_per_node"], row["total_gbps"], row["confidence"]) == (None, None, "unknown")
    assert result.training_gbps == 100 and not result.training_known
    [diag] = result.diagnostics
    assert (diag.severity, diag.code, diag.line) == ("error", "rs-auto-unknown", 21)
    assert "zz-custom-1" in diag.message and "give a number" in diag.message
    assert result.reduction_server is not None and result.reduction_server.replicas is None


def test_unknown_rs_machine_with_explicit_count_does_not_crash_or_warn() -> None:
    data = google_example(machine_type="zz-rs-box")
    data["reduction_server"]["replicas"] = 3
    result = planning.plan(model.build(data))
    assert result.diagnostics == []
    assert result.server_gbps == 0.0
    assert result.to_json()["pools"][2]["confidence"] == "unknown"


def test_missing_machine_type_is_unknown() -> None:
    job = model.build({"display_name": "x", "chief": {"image": "i"}})
    [row] = planning.plan(job).to_json()["pools"]
    assert (row["machine_type"], row["gbps_per_node"], row["confidence"]) == (None, None, "unknown")


def test_parameter_servers_count_as_server_bandwidth_without_rs_section() -> None:
    job = model.build({"display_name": "ps", "chief": {"machine_type": "n1-standard-8"},
                       "workers": {"replicas": 3, "machine_type": "n1-standard-8"},
                       "parameter_servers": {"replicas": 2, "machine_type": "n1-standard-16"},
                       "evaluators": {"machine_type": "n1-standard-4"}})
    out = planning.plan(job).to_json()
    assert out["reduction_server"] is None
    assert out["training_gbps"] == 4 * 16
    assert out["server_gbps"] == 2 * 32
    assert [r["index"] for r in out["pools"]] == [0, 1, 2, 3]


# --- all-reduce ----------------------------------------------------------------

def _ring(nodes: int, size: float, gbps: float) -> float:
    return 2 * (nodes - 1) / nodes * size / (gbps * 1e9 / 8)


def test_allreduce_google_example() -> None:
    out = planning.plan(model.build(google_example()), gradient_bytes=1.25e9).to_json()
    ar = out["allreduce"]
    assert ar["gradient_bytes"] == 1.25e9 and ar["training_nodes"] == 5 and ar["node_gbps"] == 100
    # 100 Gbps = 12.5 GB/s: ring = 2·4/5 · 1.25 GB / 12.5 GB/s = 0.16 s; RS = 0.1 s
    assert ar["ring_seconds"] == pytest.approx(0.16)
    assert ar["reduction_server_seconds"] == pytest.approx(0.1)
    assert ar["reduction_server_keeps_up"] is True
    assert ar["speedup"] == pytest.approx(1.6)


@pytest.mark.parametrize(("workers", "size"), [(1, 1e9), (3, 4e8), (7, 2.5e9), (31, 1e6)])
def test_allreduce_ring_formula(workers: int, size: float) -> None:
    job = model.build({**google_example(), "workers": {"replicas": workers, **BIG}})
    ar = planning.plan(job, gradient_bytes=size).allreduce
    assert ar is not None
    assert ar.ring_seconds == pytest.approx(_ring(workers + 1, size, 100))
    assert ar.reduction_server_seconds == pytest.approx(size / 12.5e9)


def test_allreduce_uses_the_slowest_training_node() -> None:
    data = google_example()
    data["chief"] = {"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}}
    result = planning.plan(model.build(data), gradient_bytes=1e9)
    slow = result.pools[0].gbps_per_node
    assert slow is not None and slow < 100
    assert result.allreduce is not None and result.allreduce.node_gbps == slow
    assert result.allreduce.ring_seconds == pytest.approx(_ring(5, 1e9, slow))


def test_allreduce_short_reduction_server_sets_the_pace() -> None:
    data = google_example()
    data["reduction_server"]["replicas"] = 4  # 128 Gbps for 500 Gbps of training
    ar = planning.plan(model.build(data), gradient_bytes=1e9).allreduce
    assert ar is not None and ar.reduction_server_keeps_up is False
    assert ar.reduction_server_seconds == pytest.approx(5 * 1e9 / (128e9 / 8))


def test_allreduce_without_pool_2_assumes_a_sized_reduction_server() -> None:
    data = google_example()
    del data["reduction_server"]
    ar = planning.plan(model.build(data), gradient_bytes=1e9).allreduce
    assert ar is not None and ar.reduction_server_keeps_up is None
    assert ar.reduction_server_seconds == pytest.approx(1e9 / 12.5e9)


def test_allreduce_single_node_ring_is_free() -> None:
    job = model.build({"display_name": "one", "chief": dict(BIG)})
    ar = planning.plan(job, gradient_bytes=1e9).allreduce
    assert ar is not None and ar.ring_seconds == 0.0


def test_allreduce_with_unknown_bandwidth_is_null() -> None:
    job = model.build({"display_name": "x", "chief": {"machine_type": "zz-unknown"}})
    ar = planning.plan(job, gradient_bytes=1e9).to_json()["allreduce"]
    assert ar["ring_seconds"] is None and ar["reduction_server_seconds"] is None


# --- resolve / render --------------------------------------------------------------

def test_resolve_fills_auto_replicas_in_a_copy() -> None:
    job = model.build(google_example())
    resolved = planning.resolve(job, planning.plan(job))
    assert resolved.pools["reduction_server"].replicas == 16
    assert job.pools["reduction_server"].replicas is None  # the input is untouched
    assert resolved is not job


def test_resolve_keeps_explicit_and_unknown_counts() -> None:
    data = google_example()
    data["reduction_server"]["replicas"] = 3
    job = model.build(data)
    assert planning.resolve(job, planning.plan(job)).pools["reduction_server"].replicas == 3
    data["reduction_server"] = {"replicas": "auto", "machine_type": "zz-rs"}
    job = model.build(data)
    assert planning.resolve(job, planning.plan(job)).pools["reduction_server"].replicas is None


def _render_text(result: planning.Plan) -> str:
    from rich.console import Console

    console = Console(record=True, width=160, color_system=None)
    for item in bandwidth_text.items(result):
        console.print(item)
    return console.export_text()


def test_render_shows_pools_coverage_and_estimate() -> None:
    text = _render_text(planning.plan(model.build(google_example()), gradient_bytes=1.25e9))
    assert "16 × n1-highcpu-16 = 512 Gbps ≥ 500 Gbps training" in text
    assert "8 × V100" in text and "n1-highmem-96" in text and "documented" in text
    assert "ring ≈ 160.0 ms" in text and "Reduction Server ≈ 100.0 ms" in text


def test_render_short_and_unknown() -> None:
    data = google_example()
    data["reduction_server"]["replicas"] = 8
    text = _render_text(planning.plan(model.build(data)))
    assert "8 × n1-highcpu-16 = 256 Gbps < 500 Gbps training" in text and "16 replicas" in text
    data["workers"]["machine_type"] = "zz-x"
    text = _render_text(planning.plan(model.build(data), gradient_bytes=1e6))
    assert "coverage not checked" in text and "not estimated" in text and "unknown" in text


def test_allreduce_with_a_zero_reduction_server_has_no_estimate_not_a_division_by_zero() -> None:
    data = google_example()
    data["reduction_server"]["replicas"] = 0  # the schema's error; plan still runs
    ar = planning.plan(model.build(data), gradient_bytes=1e9).allreduce
    assert ar is not None and ar.reduction_server_seconds is None and ar.ring_seconds is not None


# --- each pool's GPU network (catalog/gpu_networks.csv) -----------------------------------------

def gpu_networks_example() -> dict[str, Any]:
    return {"display_name": "nets", "region": "us-central1", "defaults": {"image": "gcr.io/p/train:1"},
            "chief": {"machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 8}},
            "workers": {"replicas": 2, "machine_type": "a3-megagpu-8g"},  # its GPUs are built in
            "parameter_servers": {"replicas": 1, "machine_type": "n1-standard-16"},
            "evaluators": {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}}}


def test_pools_carry_their_gpu_network_and_its_source() -> None:
    rows = planning.plan(model.build(gpu_networks_example())).to_json()["pools"]
    assert [(r["role"], r["gpu_network"]) for r in rows] == [
        ("chief", "gpudirect-rdma"), ("workers", "gpudirect-tcpxo"), ("parameter_servers", None),
        ("evaluators", "tcp")]
    assert all(r["gpu_network_source"].startswith("https://") for r in rows if r["gpu_network"])
    assert rows[2]["gpu_network_source"] is None  # no GPUs, no GPU network
    assert "configure-compute" in rows[0]["gpu_network_source"]


def test_every_rdma_machine_of_the_catalog_is_a_training_machine_with_gpus() -> None:
    from vxtrain import catalog
    from vxtrain.catalog import networking

    assert networking.rdma_machine_types() == ("a3-ultragpu-8g", "a4-highgpu-8g", "a4x-highgpu-4g")
    for machine in networking.rdma_machine_types():
        assert catalog.offered(machine) and catalog.builtin_accelerator(machine) is not None, machine


def test_render_has_a_gpu_network_column() -> None:
    text = _render_text(planning.plan(model.build(gpu_networks_example())))
    header = next(line for line in text.splitlines() if "GPU network" in line)
    rows = {line.split("│")[2].strip(): line.split("│")[6].strip() for line in text.splitlines()
            if line.startswith("│")}
    assert header.index("GPUs") < header.index("GPU network") < header.index("Gbps/node")
    assert rows == {"chief": "gpudirect-rdma", "workers": "gpudirect-tcpxo", "parameter_servers": "-",
                    "evaluators": "tcp"}


def test_plan_json_of_the_a4_example_shows_gpudirect_rdma(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.conftest import ROOT
    from vxtrain.cli import main

    code = main(["plan", str(ROOT / "configs" / "examples" / "a4-multinode.yaml"), "--output", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [p["gpu_network"] for p in doc["bandwidth"]["pools"]] == ["gpudirect-rdma", "gpudirect-rdma"]
    assert doc["custom_job"]["jobSpec"]["pscInterfaceConfig"]["networkAttachment"].endswith("/vertex-training")
    assert not [d for d in doc["diagnostics"] if d["code"] == "gpudirect-nccl-env"]
