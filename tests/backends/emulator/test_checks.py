"""Request validation: what is refused, and where the message points."""
from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc

from tests.backends.emulator.conftest import PARENT, custom_job, pool


INVALID = [
    ("projects/p", custom_job(), "parent"),
    (PARENT, custom_job(display_name=""), "display_name"),
    (PARENT, custom_job(pools=[]), "job_spec.worker_pool_specs"),
    (PARENT, custom_job(pools=[{}, pool()]), "job_spec.worker_pool_specs[0]"),
    (PARENT, custom_job(pools=[pool(replicas=2)]), "job_spec.worker_pool_specs[0].replica_count"),
    (PARENT, custom_job(pools=[pool(), {"replica_count": 2, "container_spec": {"image_uri": "i"}}]),
     "job_spec.worker_pool_specs[1].machine_spec.machine_type"),
    (PARENT, custom_job(pools=[{"replica_count": 1, "machine_spec": {"machine_type": "n1-standard-4"}}]),
     "job_spec.worker_pool_specs[0].task"),
    (PARENT, custom_job(pools=[pool(accelerator_type="NVIDIA_TESLA_T4")]),
     "job_spec.worker_pool_specs[0].machine_spec.accelerator_type"),
    # vxtrain's own rules (issue 34: the emulator took what Vertex AI refuses)
    ("projects/p/locations/\u00e9\u00e9", custom_job(), "Location '\u00e9\u00e9' is not a Vertex AI location"),
    ("projects/p/locations/global", custom_job(), "Location 'global' is not a Vertex AI location"),
    (PARENT, custom_job(pools=[pool(machine_type="\u043f1-standard-4")]),  # a Cyrillic "п"
     "job_spec.worker_pool_specs[0].machine_spec.machine_type; Message: Machine type"),
    (PARENT, custom_job(pools=[pool(), pool(machine_type="c3-standard-8")]),  # Compute Engine's, not training's
     "job_spec.worker_pool_specs[1].machine_spec.machine_type; Message: Machine type 'c3-standard-8'"),
    (PARENT, custom_job(pools=[pool()] * 5), "At most 4 worker pool specs are allowed"),
    (PARENT, custom_job(pools=[pool()] * 5000), "got 5000"),
]


@pytest.mark.parametrize(("parent", "job", "where"), INVALID)
def test_invalid_create_requests(make_emulator: Any, connect: Any, parent: str, job: dict[str, Any],
                                 where: str) -> None:
    handle = make_emulator(simulate_seconds=30)
    with pytest.raises(gexc.InvalidArgument) as info:
        connect(handle).create_custom_job(parent=parent, custom_job=job)
    assert where in str(info.value)
    assert handle.jobs() == []


def test_pool0_replica_count_message(make_emulator: Any, connect: Any) -> None:
    with pytest.raises(gexc.InvalidArgument) as info:
        connect(make_emulator()).create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(replicas=3)]))
    assert "List of found errors:" in str(info.value) and "must be 1, got 3" in str(info.value)


def test_bad_names_and_unknown_jobs(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator(simulate_seconds=30))
    with pytest.raises(gexc.InvalidArgument):
        client.get_custom_job(name="customJobs/1")
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=f"{PARENT}/customJobs/123")
    with pytest.raises(gexc.InvalidArgument):
        client.list_custom_jobs(parent="nope")
    running = client.create_custom_job(parent=PARENT, custom_job=custom_job()).name
    with pytest.raises(gexc.FailedPrecondition):  # Vertex refuses deleting a job that has not ended
        client.delete_custom_job(name=running)


# VPC peering: using-private-ip, "Vertex AI Training doesn't support VPC Peering with H100-mega,
# H200 and B200 accelerators" (the accelerators are validation's, catalog vpc_peering.csv).
NETWORK = "projects/123/global/networks/default"
NO_PEERING = [
    pool(machine_type="a3-megagpu-8g", accelerator_type="NVIDIA_H100_MEGA_80GB", accelerator_count=8),
    pool(machine_type="a3-ultragpu-8g", accelerator_type="NVIDIA_H200_141GB", accelerator_count=8),
    pool(machine_type="a4-highgpu-8g", accelerator_type="NVIDIA_B200", accelerator_count=8),
    pool(machine_type="a3-ultragpu-8g"),  # the machine's own GPUs (H200), unstated
]


def _with_network(job: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {**job, "job_spec": {**job["job_spec"], **spec}}


@pytest.mark.parametrize("gpu_pool", NO_PEERING)
def test_vpc_peering_is_refused_on_h100_mega_h200_and_b200(make_emulator: Any, connect: Any,
                                                           gpu_pool: dict[str, Any]) -> None:
    handle = make_emulator(simulate_seconds=30)
    job = _with_network(custom_job(pools=[pool(), gpu_pool]), network=NETWORK)
    with pytest.raises(gexc.InvalidArgument) as info:
        connect(handle).create_custom_job(parent=PARENT, custom_job=job)
    assert "job_spec.network" in str(info.value) and "doesn't support VPC Peering" in str(info.value)
    assert handle.jobs() == []


def test_vpc_peering_elsewhere_and_psc_i_on_b200_are_created(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator(simulate_seconds=30))
    a100 = pool(machine_type="a2-highgpu-1g", accelerator_type="NVIDIA_TESLA_A100", accelerator_count=1)
    peered = _with_network(custom_job(pools=[a100]), network=NETWORK)
    b200 = _with_network(custom_job(pools=[NO_PEERING[2]]),
                         psc_interface_config={"network_attachment": "my-attachment"})
    for job in (peered, b200):
        assert client.create_custom_job(parent=PARENT, custom_job=job).name.startswith(PARENT)
