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
