"""The emulator's PersistentResourceService through the unmodified
``aiplatform_v1.PersistentResourceServiceClient`` (and the backend's
``get_persistent_resource`` over it)."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1 as v1
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports import (
    PersistentResourceServiceGrpcTransport,
)

from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, pool, py, wait_until
from vxtrain import errors
from vxtrain.backends import vertex
from vxtrain.backends.emulator import EmulatorHandle
from vxtrain.backends.emulator.persistent_resources import STATE_LABEL
from vxtrain.vocab.kinds import CUSTOM

Resource = v1.PersistentResource


@pytest.fixture
def handle(make_emulator: Any) -> EmulatorHandle:
    return make_emulator()  # type: ignore[no-any-return]


@pytest.fixture
def client(handle: EmulatorHandle) -> Iterator[v1.PersistentResourceServiceClient]:
    channel = vertex.emulator_channel(handle.address)
    yield v1.PersistentResourceServiceClient(transport=PersistentResourceServiceGrpcTransport(channel=channel))
    channel.close()


def resource(labels: dict[str, str] | None = None, **pool_fields: Any) -> dict[str, Any]:
    one = {"machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 2, **pool_fields}
    return {"display_name": "pool", "resource_pools": [one], "labels": labels or {}}


def create(client: v1.PersistentResourceServiceClient, resource_id: str = "train-pool", **kwargs: Any) -> Any:
    return client.create_persistent_resource(parent=PARENT, persistent_resource_id=resource_id,
                                             persistent_resource=resource(**kwargs))


def test_create_is_a_done_operation_and_the_resource_runs(client: v1.PersistentResourceServiceClient) -> None:
    operation = create(client)
    assert operation.done()  # no polling: the operation came back done
    created = operation.result(timeout=1)
    assert isinstance(created, Resource)
    assert created.name == f"{PARENT}/persistentResources/train-pool"
    assert created.state == Resource.State.RUNNING and created.create_time and created.start_time
    assert [p.id for p in created.resource_pools] == ["pool-0"]
    assert isinstance(operation.metadata, v1.CreatePersistentResourceOperationMetadata)
    assert operation.operation.name.startswith(f"{created.name}/operations/")


def test_get_list_delete(client: v1.PersistentResourceServiceClient) -> None:
    names = [create(client, f"pool-{i}").result().name for i in range(3)]
    got = client.get_persistent_resource(name=names[1])
    assert got.name == names[1] and got.resource_pools[0].replica_count == 2
    assert [r.name for r in client.list_persistent_resources(parent=PARENT)] == names
    pager = client.list_persistent_resources(request={"parent": PARENT, "page_size": 2})
    assert [r.name for r in pager] == names  # the pager follows the page token
    first = client.list_persistent_resources(request={"parent": PARENT, "page_size": 2}).pages
    assert len(next(iter(first)).persistent_resources) == 2
    assert list(client.list_persistent_resources(parent="projects/other/locations/us-central1")) == []
    deleted = client.delete_persistent_resource(name=names[0])
    assert deleted.done()
    deleted.result(timeout=1)
    with pytest.raises(gexc.NotFound, match="does not exist"):
        client.get_persistent_resource(name=names[0])
    with pytest.raises(gexc.NotFound):
        client.delete_persistent_resource(name=names[0])
    assert [r.name for r in client.list_persistent_resources(parent=PARENT)] == names[1:]


def test_other_methods_are_unimplemented(client: v1.PersistentResourceServiceClient) -> None:
    name = create(client).result().name
    with pytest.raises(gexc.MethodNotImplemented):
        client.reboot_persistent_resource(name=name)


@pytest.mark.parametrize("bad", ["Train", "1pool", "pool-", "pool_1", "a" * 64, "", "projects/p/x"])
def test_an_invalid_id_is_refused(client: v1.PersistentResourceServiceClient, bad: str) -> None:
    with pytest.raises(gexc.InvalidArgument, match="persistent_resource_id"):
        create(client, bad)


@pytest.mark.parametrize("good", ["a", "a1", "train-pool-2", "a" * 63])
def test_a_valid_id_is_taken(client: v1.PersistentResourceServiceClient, good: str) -> None:
    assert create(client, good).result().name.endswith(f"/persistentResources/{good}")


def test_missing_duplicate_and_malformed(client: v1.PersistentResourceServiceClient) -> None:
    with pytest.raises(gexc.NotFound, match="train-pool does not exist"):
        client.get_persistent_resource(name=f"{PARENT}/persistentResources/train-pool")
    create(client)
    with pytest.raises(gexc.AlreadyExists):
        create(client)
    with pytest.raises(gexc.InvalidArgument, match="Invalid PersistentResource name"):
        client.get_persistent_resource(name="train-pool")
    with pytest.raises(gexc.InvalidArgument, match="Invalid parent"):
        client.create_persistent_resource(parent="projects/p", persistent_resource_id="x",
                                          persistent_resource=resource())


def test_pools_are_checked(client: v1.PersistentResourceServiceClient) -> None:
    with pytest.raises(gexc.InvalidArgument, match="resource_pools; Message: Required field is not set"):
        client.create_persistent_resource(parent=PARENT, persistent_resource_id="x",
                                          persistent_resource={"resource_pools": []})
    with pytest.raises(gexc.InvalidArgument, match="accelerator_type"):
        create(client, machine_spec={"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100"})
    with pytest.raises(gexc.InvalidArgument, match="min_replica_count"):
        create(client, autoscaling_spec={"min_replica_count": 0, "max_replica_count": 4})
    autoscaled = create(client, autoscaling_spec={"min_replica_count": 1, "max_replica_count": 4}).result()
    assert autoscaled.resource_pools[0].autoscaling_spec.max_replica_count == 4


def test_a_label_or_set_state_puts_a_resource_in_another_state(client: v1.PersistentResourceServiceClient,
                                                                 handle: EmulatorHandle) -> None:
    provisioning = create(client, "p1", labels={STATE_LABEL: "provisioning"}).result()
    assert provisioning.state == Resource.State.PROVISIONING and "start_time" not in provisioning
    with pytest.raises(gexc.InvalidArgument, match=STATE_LABEL):
        create(client, "p2", labels={STATE_LABEL: "asleep"})
    running = create(client, "p3").result()
    handle.resources.set_state(running.name, "error")
    broken = client.get_persistent_resource(name=running.name)
    assert broken.state == Resource.State.ERROR and "ERROR" in broken.error.message


def test_deleting_a_resource_cancels_the_jobs_on_it(client: v1.PersistentResourceServiceClient,
                                                    handle: EmulatorHandle, connect: Any) -> None:
    """PRD: "if there are custom jobs running on the persistent resource when you delete
    it, those custom jobs are automatically cancelled"."""
    jobs = connect(handle)
    name = create(client).result().name
    body = custom_job(pools=[pool(py("import time; time.sleep(60)"))])
    on_it = jobs.create_custom_job(parent=PARENT, custom_job={
        **body, "job_spec": {**body["job_spec"], "persistent_resource_id": "train-pool"}})
    elsewhere = jobs.create_custom_job(parent=PARENT, custom_job=body)
    client.delete_persistent_resource(name=name).result()
    assert wait_until(jobs, on_it.name, TERMINAL).state == State.JOB_STATE_CANCELLED
    assert jobs.get_custom_job(name=elsewhere.name).state not in TERMINAL
    jobs.cancel_custom_job(name=elsewhere.name)


def test_the_backend_reads_a_resource_as_rest_json(client: v1.PersistentResourceServiceClient,
                                                   handle: EmulatorHandle) -> None:
    name = create(client, autoscaling_spec={"min_replica_count": 1, "max_replica_count": 4},
                  disk_spec={"boot_disk_size_gb": 200}).result().name
    with vertex.connect(endpoint=handle.address) as backend:
        got = backend.get_persistent_resource(name)
        assert got["name"] == name and got["state"] == "RUNNING"
        assert got["resourcePools"] == [{
            "id": "pool-0", "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "2",
            "diskSpec": {"bootDiskSizeGb": 200}, "autoscalingSpec": {"minReplicaCount": "1", "maxReplicaCount": "4"}}]
        with pytest.raises(errors.NotFoundError, match="persistent resource not found in us-central1.*nope"):
            backend.get_persistent_resource(f"{PARENT}/persistentResources/nope")
        assert backend.list(CUSTOM, PARENT) == []  # both services on one backend
    assert backend._clients == {}  # close() closed both channels
