"""TPU rules (vxtrain/validation/tpu_rules.py, region_rules.py, catalog/tpu_machines.csv):
every false accept of issue 19's TPU bullet is refused at the line of the key that
breaks it, with what would be accepted; the documented shapes pass; and every TPU
machine row of the catalog carries its rules."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vxtrain import api, catalog
from vxtrain.diagnostics import Diagnostic

IMAGE = "us-docker.pkg.dev/p/train/img:1"
V5E = "ct5lp-hightpu-4t"


def check(tmp_path: Path, data: dict[str, Any], text: str | None = None) -> list[Diagnostic]:
    path = tmp_path / "job.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False))
    return api.check_file(path, api.Options(environ={})).diagnostics


def job(region: str = "us-central1", scheduling: dict[str, Any] | None = None, extra: dict[str, Any] | None = None,
        **pools: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = {"display_name": "tpu", "region": region}
    data.update({role: {"image": IMAGE, **pool} for role, pool in pools.items()})
    if scheduling is not None:
        data["scheduling"] = scheduling
    if extra is not None:
        data["extra"] = extra
    return data


def errors(diags: list[Diagnostic]) -> list[tuple[str, str]]:
    return sorted((d.code, d.path) for d in diags if d.severity == "error")


def tpu(machine_type: str, topology: str | None = None, acc: str | None = None, count: int | None = None,
        **more: Any) -> dict[str, Any]:
    pool: dict[str, Any] = {"machine_type": machine_type, **more}
    if topology is not None:
        pool["tpu_topology"] = topology
    if acc is not None:
        pool["accelerator"] = {"type": acc, "count": count or 1}
    return pool


def extra_topology(topology: str) -> dict[str, Any]:
    return {"jobSpec": {"workerPoolSpecs": [{"machineSpec": {"tpuTopology": topology}}]}}


# --- the issue's false accepts, each refused at its key ------------------------------

@pytest.mark.parametrize("name, data, expected", [
    ("v5e-4t-without-topology", job(chief=tpu(V5E)), [("tpu-topology-missing", "chief.machine_type")]),
    ("v5e-1t-16x16-via-extra", job(chief=tpu("ct5lp-hightpu-1t"), extra=extra_topology("16x16")),
     [("tpu-topology", "extra.jobSpec.workerPoolSpecs[0].machineSpec.tpuTopology")]),
    ("v5e-1t-16x16-native", job(chief=tpu("ct5lp-hightpu-1t", "16x16")), [("tpu-topology", "chief.tpu_topology")]),
    ("chief-and-two-workers", job(chief=tpu(V5E, "2x2"), workers=tpu(V5E, "2x2", replicas=2)),
     [("tpu-single-pool", "workers")]),
    ("v2-times-4", job(chief=tpu("cloud-tpu", acc="TPU_V2", count=4)),
     [("tpu-accelerator-count", "chief.accelerator.count")]),
    ("v2-times-16", job(chief=tpu("cloud-tpu", acc="TPU_V2", count=16)),
     [("tpu-accelerator-count", "chief.accelerator.count")]),
    ("v3-times-48", job("europe-west4", chief=tpu("cloud-tpu", acc="TPU_V3", count=48)),
     [("tpu-accelerator-count", "chief.accelerator.count")]),
    ("cloud-tpu-with-t4", job(chief=tpu("cloud-tpu", acc="NVIDIA_TESLA_T4", count=1)),
     [("tpu-accelerator", "chief.accelerator.type")]),
    ("cloud-tpu-without-tpus", job(chief=tpu("cloud-tpu")), [("tpu-accelerator-missing", "chief.machine_type")]),
    ("ct5lp-with-tpu-v2", job(chief=tpu(V5E, "2x2", acc="TPU_V2", count=8)),
     [("tpu-accelerator", "chief.accelerator.type")]),
    ("tpu7x-with-8-h100", job(chief=tpu("tpu7x-standard-4t", "2x2x1", acc="NVIDIA_H100_80GB", count=8)),
     [("tpu-accelerator", "chief.accelerator.type")]),
    ("ct6e-with-v5e-chips", job(chief=tpu("ct6e-standard-4t", "2x2", acc="TPU_V5_LITEPOD", count=4)),
     [("tpu-accelerator", "chief.accelerator.type")]),
    ("v5e-in-europe-west4", job("europe-west4", chief=tpu(V5E, "2x2")),
     [("accelerator-not-in-region", "chief.machine_type")]),
    ("v5e-in-us-south1", job("us-south1", chief=tpu(V5E, "2x2")),
     [("accelerator-not-in-region", "chief.machine_type")]),
    ("v5e-in-asia-east1", job("asia-east1", chief=tpu(V5E, "2x2")),
     [("accelerator-not-in-region", "chief.machine_type")]),
    ("v3-pod-in-us-central1", job(chief=tpu("cloud-tpu", acc="TPU_V3", count=32)),
     [("accelerator-not-in-region", "chief.accelerator.type")]),
    ("spot-multi-host-slice", job(scheduling={"strategy": "SPOT"}, chief=tpu(V5E, "4x4")),
     [("spot-tpu-pod", "scheduling.strategy")]),
    ("spot-via-extra", job(chief=tpu(V5E, "8x8"), extra={"jobSpec": {"scheduling": {"strategy": "SPOT"}}}),
     [("spot-tpu-pod", "extra.jobSpec.scheduling.strategy")]),
    ("spot-v2-pod", job(scheduling={"strategy": "SPOT"}, chief=tpu("cloud-tpu", acc="TPU_V2", count=32)),
     [("spot-tpu-pod", "scheduling.strategy")]),
    ("spot-tpu7x-two-hosts", job(scheduling={"strategy": "SPOT"}, chief=tpu("tpu7x-standard-4t", "2x2x2")),
     [("spot-tpu-pod", "scheduling.strategy")]),
    ("topology-on-a-gpu-machine", job(chief={"machine_type": "n1-standard-8", "tpu_topology": "2x2"}),
     [("tpu-topology-not-tpu", "chief.tpu_topology")]),
    ("topology-via-extra-on-cpu", job(chief={"machine_type": "n1-standard-8"}, extra=extra_topology("2x2")),
     [("tpu-topology-not-tpu", "extra.jobSpec.workerPoolSpecs[0].machineSpec.tpuTopology")]),
    # a TPU type on a GPU or CPU machine: accelerator_rules.py's one diagnostic, never a second one
    ("tpu-v2-on-n1", job(chief=tpu("n1-standard-8", acc="TPU_V2", count=8)),
     [("accelerator-not-supported", "chief.accelerator.type")]),
    ("v5e-chips-on-e2", job(chief=tpu("e2-standard-8", acc="TPU_V5_LITEPOD", count=4)),
     [("accelerator-not-supported", "chief.accelerator.type")]),
    ("tpu-v4-pod-once", job(chief=tpu("cloud-tpu", acc="TPU_V4_POD", count=32)),
     [("accelerator-not-supported", "chief.accelerator.type")]),
    ("tpu-in-the-workers-pool", job(chief={"machine_type": "n1-standard-8"}, workers=tpu(V5E, "2x2")),
     [("tpu-single-pool", "workers")]),
    ("topology-on-a-typo-once", job(chief=tpu("ct5lp-hightpu-4", "2x2")),
     [("unknown-machine-type", "chief.machine_type")]),
    ("topology-in-defaults", job(chief={"machine_type": "ct5lp-hightpu-1t"}) | {"defaults": {"tpu_topology": "2x2"}},
     [("tpu-topology", "defaults.tpu_topology")]),
])
def test_refused_at_its_key(tmp_path: Path, name: str, data: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert errors(check(tmp_path, data)) == expected


@pytest.mark.parametrize("name, data", [
    ("v5e-slice", job(chief=tpu(V5E, "2x4"))),
    ("v5e-1t", job("us-west4", chief=tpu("ct5lp-hightpu-1t", "1x1"))),
    ("v5e-with-its-enum", job(chief=tpu(V5E, "2x2", acc="TPU_V5_LITEPOD", count=4))),
    ("v5e-topology-via-extra", job(chief=tpu(V5E), extra=extra_topology("16x16"))),
    ("v6e", job("asia-northeast1", chief=tpu("ct6e-standard-8t", "2x4"))),
    ("tpu7x-pod", job(chief=tpu("tpu7x-standard-4t", "8x8x16"))),
    ("v2-single", job("asia-east1", chief=tpu("cloud-tpu", acc="TPU_V2", count=8))),
    ("v2-pod", job(chief=tpu("cloud-tpu", acc="TPU_V2", count=128))),
    ("v3-pod", job("europe-west4", chief=tpu("cloud-tpu", acc="TPU_V3", count=64))),
    ("spot-single-host", job(scheduling={"strategy": "SPOT"}, chief=tpu(V5E, "2x2"))),
    ("spot-v3-single", job(scheduling={"strategy": "SPOT"}, chief=tpu("cloud-tpu", acc="TPU_V3", count=8))),
    ("standard-pod", job(scheduling={"strategy": "STANDARD"}, chief=tpu(V5E, "16x16"))),
    ("extra-overrides-spot", job(scheduling={"strategy": "SPOT"}, chief=tpu(V5E, "16x16"),
                                 extra={"jobSpec": {"scheduling": {"strategy": "STANDARD"}}})),
])
def test_documented_shapes_pass(tmp_path: Path, name: str, data: dict[str, Any]) -> None:
    assert errors(check(tmp_path, data)) == []


# --- messages: what would be accepted, and the line --------------------------------------

def test_missing_topology_lists_the_machine_types_topologies(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job(chief=tpu(V5E)))
    assert 'machine type "ct5lp-hightpu-4t" needs tpu_topology' in d.message
    assert "2x2 (4 chips, 1 host), 2x4 (8 chips, 2 hosts)" in d.message and "16x16 (256 chips, 64 hosts)" in d.message
    lines = (tmp_path / "job.yaml").read_text().splitlines()
    assert d.line is not None and "machine_type: ct5lp-hightpu-4t" in lines[d.line - 1]


def test_the_issue_16x16_on_1t_via_extra_is_at_the_extra_line(tmp_path: Path) -> None:
    text = f"""display_name: tpu
region: us-central1
chief:
  machine_type: ct5lp-hightpu-1t
  image: {IMAGE}
extra:
  jobSpec:
    workerPoolSpecs:
      - machineSpec: {{tpuTopology: 16x16}}
"""
    (d,) = check(tmp_path, {}, text)
    assert (d.code, d.line) == ("tpu-topology", 9)
    assert 'tpu_topology "16x16" is not supported for machine type "ct5lp-hightpu-1t": it takes 1x1 (1 chip, 1 host)' \
        in d.message
    assert '16x16 is a topology of "ct5lp-hightpu-4t"' in d.message


def test_cloud_tpu_count_says_8_or_multiples_of_32(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job(chief=tpu("cloud-tpu", acc="TPU_V2", count=16)))
    assert ('The accelerator count "16" is not allowed for TPU_V2 on "cloud-tpu": it takes 8 (one TPU) or '
            "32, 64, 96, … (a TPU Pod)") in d.message


def test_single_pool_names_the_rule(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job(chief=tpu(V5E, "2x2"), workers=tpu(V5E, "2x2", replicas=2)))
    assert "a TPU job has one worker pool, pool 0 (chief), with one replica" in d.message
    assert "remove workers" in d.message and "hosts come from the topology" in d.message


def test_region_says_dagger_and_where_it_trains(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job("europe-west4", chief=tpu(V5E, "2x2")))
    assert 'TPU_V5_LITEPOD (machine type "ct5lp-hightpu-4t") is not offered for training in europe-west4' in d.message
    assert "marked †: not available for training" in d.message
    assert "regions that offer it: us-central1, us-east1, us-west1, us-west4" in d.message
    (d,) = check(tmp_path, job("asia-east1", chief=tpu(V5E, "2x2")))
    assert "†" not in d.message


def test_spot_on_a_pod_quotes_the_page_and_offers_single_host(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job(scheduling={"strategy": "SPOT"}, chief=tpu(V5E, "4x4")))
    assert d.message.startswith("Using Spot VMs with TPU Pods isn't supported")
    assert "4x4 on \"ct5lp-hightpu-4t\" spans 4 hosts" in d.message and "a single-host topology (2x2)" in d.message


def test_wrong_chip_says_leave_the_accelerator_out(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job(chief=tpu("tpu7x-standard-4t", "2x2x1", acc="NVIDIA_H100_80GB", count=8)))
    assert "NVIDIA_H100_80GB is a GPU" in d.message and "leave accelerator out" in d.message


def test_tpu_type_on_a_gpu_machine_points_at_the_tpu_machine(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job(chief=tpu("n1-standard-8", acc="TPU_V2", count=8)))
    assert "TPU_V2 is a TPU: it goes on machine type cloud-tpu" in d.message


def test_topology_on_cloud_tpu_is_a_warning(tmp_path: Path) -> None:
    diags = check(tmp_path, job(chief=tpu("cloud-tpu", "2x2", acc="TPU_V2", count=8)))
    assert [(d.severity, d.code) for d in diags] == [("warning", "tpu-topology-cloud-tpu")]


def test_gcloud_input_gets_the_same_checks(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(f"""workerPoolSpecs:
  - machineSpec: {{machineType: ct5lp-hightpu-1t, tpuTopology: 2x4}}
    replicaCount: 1
    containerSpec: {{imageUri: {IMAGE}}}
""")
    diags = api.check_file(path, api.Options(environ={}, region="us-central1")).diagnostics
    (d,) = [d for d in diags if d.severity == "error"]
    assert d.code == "tpu-topology" and d.line == 2


def test_gcloud_pools_are_named_as_written(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    pool = f"machineSpec: {{machineType: ct5lp-hightpu-4t, tpuTopology: 2x2}}, containerSpec: {{imageUri: {IMAGE}}}"
    path.write_text(f"workerPoolSpecs:\n  - {{{pool}, replicaCount: 1}}\n  - {{{pool}, replicaCount: 2}}\n")
    diags = api.check_file(path, api.Options(environ={}, region="us-central1")).diagnostics
    (d,) = [d for d in diags if d.severity == "error"]
    assert (d.code, d.path, d.line) == ("tpu-single-pool", "workerPoolSpecs[1]", 3)
    assert "workerPoolSpecs[0] uses the TPU machine" in d.message and "remove workerPoolSpecs[1]" in d.message


# --- the catalog: every TPU machine type carries its rules ---------------------------

TPU_MACHINES = catalog.tpu_machines()


def test_every_tpu_machine_training_lists_has_rules() -> None:
    """A TPU machine type in the training list without rows in tpu_machines.csv fails here."""
    tpu_like = {t for t in catalog.training_machine_types() if t.startswith(("cloud-tpu", "ct", "tpu"))}
    assert tpu_like == set(catalog.tpu_machine_types())
    assert all(catalog.offered(m.machine_type) for m in TPU_MACHINES)


@pytest.mark.parametrize("tpu_machine", TPU_MACHINES, ids=lambda m: m.machine_type)
def test_each_tpu_machine_has_sizes_and_regions(tpu_machine: catalog.TpuMachine) -> None:
    assert tpu_machine.generation and tpu_machine.sizes
    for size in tpu_machine.sizes:
        # a topology (TPU VM slice) or an accelerator count (cloud-tpu), never neither
        assert (size.topology is None) != (size.accelerator_count is None), size
        if size.topology is not None:
            assert size.chips and size.hosts and size.hosts <= size.chips, size
            dims = [int(x) for x in size.topology.split("x")]
            product = 1
            for x in dims:
                product *= x
            assert product == size.chips, size  # the topology's shape is its chip count
        else:
            assert size.accelerator_type is not None and catalog.training_accelerator(size.accelerator_type)
        # the generation trains somewhere: its region key is in region_accelerators.csv
        assert catalog.regions_offering(size.region_key), size
        assert size.source.startswith("https://") and size.confidence in ("documented", "copied", "derived")


@pytest.mark.parametrize("tpu_machine", TPU_MACHINES, ids=lambda m: m.machine_type)
def test_each_tpu_machine_validates_at_every_size_and_refuses_the_wrong_one(
        tmp_path: Path, tpu_machine: catalog.TpuMachine) -> None:
    for size in tpu_machine.sizes:
        region = catalog.regions_offering(size.region_key)[0]
        if size.topology is not None:
            pool = tpu(tpu_machine.machine_type, size.topology)
        else:
            pool = tpu(tpu_machine.machine_type, acc=size.accelerator_type, count=size.accelerator_count)
        assert errors(check(tmp_path, job(region, chief=pool))) == [], size
    region = catalog.regions_offering(tpu_machine.sizes[0].region_key)[0]
    if tpu_machine.needs_topology:
        assert errors(check(tmp_path, job(region, chief=tpu(tpu_machine.machine_type)))) == [
            ("tpu-topology-missing", "chief.machine_type")]
        assert errors(check(tmp_path, job(region, chief=tpu(tpu_machine.machine_type, "3x3")))) == [
            ("tpu-topology", "chief.tpu_topology")]
    else:
        acc = tpu_machine.accelerator_types[0]
        assert errors(check(tmp_path, job(region, chief=tpu(tpu_machine.machine_type, acc=acc, count=12)))) == [
            ("tpu-accelerator-count", "chief.accelerator.count")]


def machine(machine_type: str) -> catalog.TpuMachine:
    found = catalog.tpu_machine(machine_type)
    assert found is not None
    return found


def size_of(machine_type: str, topology: str | None, acc: str | None = None,
            count: int | None = None) -> catalog.TpuSize:
    found = catalog.tpu_size(machine_type, topology, acc, count)
    assert found is not None
    return found


def test_v5e_v6e_and_7x_topologies_as_the_page_lists_them() -> None:
    v5e_4t = ("2x2", "2x4", "4x4", "4x8", "8x8", "8x16", "16x16")
    assert machine("ct5lp-hightpu-4t").topologies == v5e_4t
    assert machine("ct6e-standard-4t").topologies == v5e_4t
    assert machine("ct5lp-hightpu-1t").topologies == ("1x1",)
    assert machine("ct5lp-hightpu-8t").topologies == ("2x4",)
    assert machine("tpu7x-standard-4t").topologies == (
        "2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4", "4x4x8", "4x8x8", "8x8x8", "8x8x16")
    size = size_of("ct5lp-hightpu-4t", "2x4")
    assert (size.chips, size.hosts, size.multi_host) == (8, 2, True)
    assert size_of("ct5lp-hightpu-8t", "2x4").multi_host is False
    assert size_of("cloud-tpu", None, "TPU_V3", 96).region_key == "TPU_V3 (pod)"
    assert catalog.tpu_size("cloud-tpu", None, "TPU_V3", 40) is None


def test_a_tpu_chief_with_more_replicas_is_told_to_grow_the_slice_not_to_add_workers(tmp_path: Path) -> None:
    diags = check(tmp_path, {"display_name": "t", "region": "us-central1", "chief": {
        "machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x4", "replicas": 2, "image": "i:1"}})
    (d,) = [d for d in diags if d.code == "chief-replicas"]
    assert "larger tpu_topology" in d.message and "workers" not in d.message
