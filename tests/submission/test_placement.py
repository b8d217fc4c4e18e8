"""A job on a persistent resource: the pure check (vxtrain.submission.placement) as a
table, then submit against resources the real PersistentResourceServiceClient
created on the emulator (Python API, the CLI in process, and ``python -m vxtrain``):
a job that fits is created; one that does not is exit 1 and nothing is created."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud import aiplatform_v1 as v1
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports import (
    PersistentResourceServiceGrpcTransport,
)

from tests.conftest import ROOT
from vxtrain import errors
from vxtrain.submission.retry import Backoff
from tests.submission.helpers import session, submit_job
from vxtrain.backends import vertex
from vxtrain.backends.emulator import EmulatorHandle
from vxtrain.backends.emulator.persistent_resources import STATE_LABEL
from vxtrain.backends.vertex import VertexBackend
from vxtrain.submission.placement import placement_problems, pool_shape
from tests.incli import run

PROJECT, REGION = "p", "us-central1"
PARENT = f"projects/{PROJECT}/locations/{REGION}"
NAME = f"{PARENT}/persistentResources/train-pool"
FAST = Backoff(initial=0.01, maximum=0.05, deadline=5.0)
A100 = {"machineType": "a2-highgpu-1g", "acceleratorType": "NVIDIA_TESLA_A100", "acceleratorCount": 1}
CPU = {"machineType": "n1-standard-4"}


# --- the pure check ----------------------------------------------------------------------

def wps(machine: dict[str, Any], replicas: int = 1, disk: dict[str, Any] | None = None,
        command: list[str] | None = None) -> dict[str, Any]:
    """A WorkerPoolSpec (REST JSON)."""
    pool: dict[str, Any] = {"machineSpec": machine, "replicaCount": replicas,
                            "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/train:1",
                                              **({"command": command} if command else {})}}
    if disk is not None:
        pool["diskSpec"] = disk
    return pool


def job_on(*pools: dict[str, Any], resource_id: str = "train-pool", tuning: bool = False,
           **spec: Any) -> dict[str, Any]:
    """A CustomJob (or a tuning job's trialJobSpec) on ``resource_id``."""
    body = {"workerPoolSpecs": list(pools), "persistentResourceId": resource_id, **spec}
    if tuning:
        return {"displayName": "study", "maxTrialCount": 1, "parallelTrialCount": 1,
                "studySpec": {"metrics": [{"metricId": "acc", "goal": "MAXIMIZE"}],
                              "parameters": [{"parameterId": "lr",
                                              "doubleValueSpec": {"minValue": 0.1, "maxValue": 0.2}}]},
                "trialJobSpec": body}
    return {"displayName": "on-resource", "jobSpec": body}


def rpool(machine: dict[str, Any], replicas: int | str = 2, disk: dict[str, Any] | None = None,
          pool_id: str = "", **more: Any) -> dict[str, Any]:
    """A ResourcePool (REST JSON: int64 fields as strings, as MessageToDict writes them)."""
    pool: dict[str, Any] = {"machineSpec": machine, "replicaCount": str(replicas), **more}
    if pool_id:
        pool["id"] = pool_id
    if disk is not None:
        pool["diskSpec"] = disk
    return pool


def res(*pools: dict[str, Any], state: str = "RUNNING", **more: Any) -> dict[str, Any]:
    return {"name": NAME, "state": state, "resourcePools": list(pools), **more}


def codes(problems: list[Any]) -> list[str]:
    return [d.code for d in problems]


@pytest.mark.parametrize(("job_pool", "resource_pool"), [
    (wps(CPU), rpool(CPU)),
    # Vertex's defaults on both sides: pd-ssd, 100 GB; acceleratorCount 0 is no accelerator.
    (wps(CPU), rpool(CPU, disk={"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100})),
    (wps(CPU, disk={"bootDiskType": "pd-ssd", "bootDiskSizeGb": 100}), rpool(CPU)),
    (wps({**CPU, "acceleratorCount": 0}), rpool({**CPU, "acceleratorType": "ACCELERATOR_TYPE_UNSPECIFIED"})),
    (wps(A100), rpool({**A100, "acceleratorCount": 1})),
    # a3-ultragpu-8g and a4-highgpu-8g boot from hyperdisk-balanced by default.
    (wps({"machineType": "a3-ultragpu-8g", "acceleratorType": "NVIDIA_H200_141GB", "acceleratorCount": 8}),
     rpool({"machineType": "a3-ultragpu-8g", "acceleratorType": "NVIDIA_H200_141GB", "acceleratorCount": 8},
           disk={"bootDiskType": "hyperdisk-balanced"})),
    # NO_RESERVATION is the same as no reservation affinity.
    (wps({**CPU, "reservationAffinity": {"reservationAffinityType": "NO_RESERVATION"}}), rpool(CPU)),
    # Replicas up to the pool's count, or its autoscaling maximum.
    (wps(CPU, replicas=2), rpool(CPU, replicas=2)),
    (wps(CPU, replicas=4), rpool(CPU, replicas=1, autoscalingSpec={"minReplicaCount": "1", "maxReplicaCount": "4"})),
])
def test_a_pool_that_fits(job_pool: dict[str, Any], resource_pool: dict[str, Any]) -> None:
    first = wps(CPU) if job_pool["replicaCount"] != 1 else job_pool
    pools = [first] if first is job_pool else [first, job_pool]
    resource_pools = [resource_pool] if first is job_pool else [rpool(CPU, replicas=1, pool_id="chief"),
                                                                resource_pool]
    assert placement_problems(job_on(*pools), res(*resource_pools)) == []


@pytest.mark.parametrize(("job_pool", "resource_pool", "field", "mine", "theirs"), [
    (wps(CPU), rpool({"machineType": "n1-standard-8"}), "machineSpec.machineType", "n1-standard-4", "n1-standard-8"),
    (wps({**A100, "acceleratorType": "NVIDIA_TESLA_T4", "machineType": "a2-highgpu-1g"}), rpool(A100),
     "machineSpec.acceleratorType", "NVIDIA_TESLA_T4", "NVIDIA_TESLA_A100"),
    (wps({**A100, "acceleratorCount": 2}), rpool(A100), "machineSpec.acceleratorCount", "2", "1"),
    (wps(CPU), rpool(A100), "machineSpec.machineType", "n1-standard-4", "a2-highgpu-1g"),
    (wps(CPU, disk={"bootDiskType": "pd-standard", "bootDiskSizeGb": 100}), rpool(CPU),
     "diskSpec.bootDiskType", "pd-standard", "pd-ssd"),
    (wps(CPU, disk={"bootDiskSizeGb": 200}), rpool(CPU), "diskSpec.bootDiskSizeGb", "200", "100"),
    (wps({"machineType": "a4-highgpu-8g", "acceleratorType": "NVIDIA_B200", "acceleratorCount": 8}),
     rpool({"machineType": "a4-highgpu-8g", "acceleratorType": "NVIDIA_B200", "acceleratorCount": 8},
           disk={"bootDiskType": "pd-ssd"}), "diskSpec.bootDiskType", "hyperdisk-balanced", "pd-ssd"),
    (wps({**A100, "reservationAffinity": {"reservationAffinityType": "ANY_RESERVATION"}}), rpool(A100),
     "machineSpec.reservationAffinity.reservationAffinityType", "ANY_RESERVATION", "(not set)"),
])
def test_a_pool_that_does_not_match(job_pool: dict[str, Any], resource_pool: dict[str, Any], field: str,
                                    mine: str, theirs: str) -> None:
    problems = placement_problems(job_on(job_pool), res({**resource_pool, "id": "gpus"}))
    assert codes(problems) == ["persistent-resource-mismatch"]
    message = problems[0].message
    assert problems[0].path == f"jobSpec.workerPoolSpecs[0].{field}"
    assert f"chief (jobSpec.workerPoolSpecs[0])" in message and NAME in message and "pool gpus" in message
    assert f"{field} is {mine} in the job, {theirs} in the pool" in message
    assert "nothing was created" in message


def test_each_pool_is_named_by_role_and_index() -> None:
    job = job_on(wps(CPU), wps(A100, replicas=2), {}, wps(CPU))
    problems = placement_problems(job, res(rpool(CPU, replicas=2), rpool({**A100, "acceleratorCount": 2})))
    assert codes(problems) == ["persistent-resource-mismatch"]
    assert problems[0].message.startswith("workers (jobSpec.workerPoolSpecs[1]) matches no pool")
    assert "machineSpec.acceleratorCount is 1 in the job, 2 in the pool" in problems[0].message
    assert "pool-0" not in problems[0].message  # the pools have ids only when the resource gives them


def test_too_many_replicas() -> None:
    problems = placement_problems(job_on(wps(CPU), wps(A100, replicas=3)),
                                  res(rpool(CPU, replicas=1), rpool(A100, replicas=2, pool_id="gpus")))
    assert codes(problems) == ["persistent-resource-replicas"]
    assert problems[0].path == "jobSpec.workerPoolSpecs[1].replicaCount"
    assert ("workers (jobSpec.workerPoolSpecs[1]) asks for 3 replicas, but pool gpus (resourcePools[1]) of "
            f"persistent resource {NAME} has at most 2 (replicaCount)") in problems[0].message
    autoscaled = rpool(A100, replicas=1, autoscalingSpec={"minReplicaCount": "1", "maxReplicaCount": "2"})
    problems = placement_problems(job_on(wps(CPU), wps(A100, replicas=3)), res(rpool(CPU), autoscaled))
    assert "has at most 2 (autoscalingSpec.maxReplicaCount)" in problems[0].message


def test_pools_on_one_resource_pool_share_its_machines() -> None:
    resource = res(rpool(CPU, replicas=3, pool_id="cpus"))
    assert placement_problems(job_on(wps(CPU), wps(CPU, replicas=2)), resource) == []
    problems = placement_problems(job_on(wps(CPU), wps(CPU, replicas=3)), resource)
    assert codes(problems) == ["persistent-resource-replicas"]
    assert "chief (jobSpec.workerPoolSpecs[0]: 1) already land on that pool (4 in all" in problems[0].message


def test_a_resource_that_is_not_running() -> None:
    problems = placement_problems(job_on(wps(CPU)), res(rpool(CPU), state="PROVISIONING"))
    assert codes(problems) == ["persistent-resource-not-running"]
    assert f"persistent resource {NAME} is PROVISIONING, not RUNNING" in problems[0].message
    assert problems[0].path == "jobSpec.persistentResourceId"
    failed = placement_problems(job_on(wps(CPU)), res(rpool(CPU), state="ERROR", error={"message": "no GPUs"}))
    assert "(its error: no GPUs)" in failed[0].message


def test_network_and_cmek_must_agree_when_both_are_set() -> None:
    resource = res(rpool(CPU), network="projects/1/global/networks/a",
                   encryptionSpec={"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/k"})
    assert placement_problems(job_on(wps(CPU)), resource) == []
    assert placement_problems(job_on(wps(CPU), network="projects/1/global/networks/a"), resource) == []
    other = job_on(wps(CPU), network="projects/1/global/networks/b")
    other["encryptionSpec"] = {"kmsKeyName": "projects/p/locations/us-central1/keyRings/r/cryptoKeys/other"}
    problems = placement_problems(other, resource)
    assert [d.path for d in problems] == ["jobSpec.network", "encryptionSpec.kmsKeyName"]


def test_a_tuning_jobs_trials_are_checked() -> None:
    problems = placement_problems(job_on(wps({"machineType": "n1-standard-8"}), tuning=True), res(rpool(CPU)))
    assert [d.path for d in problems] == ["trialJobSpec.workerPoolSpecs[0].machineSpec.machineType"]


def test_machines_in_use_are_a_note_not_an_error() -> None:
    notes: list[str] = []
    busy = res(rpool(CPU, replicas=2, usedReplicaCount="2", pool_id="cpus"))
    assert placement_problems(job_on(wps(CPU)), busy, notes=notes) == []
    assert notes and "2 of the 2 machines of pool cpus" in notes[0]


def test_pool_shape_fills_in_the_defaults() -> None:
    assert pool_shape({"machineType": "n1-standard-4", "acceleratorCount": 0}, None) == {
        "machineSpec.machineType": "n1-standard-4", "diskSpec.bootDiskType": "pd-ssd", "diskSpec.bootDiskSizeGb": 100}
    assert pool_shape({"machineType": "a3-ultragpu-8g"}, {"bootDiskSizeGb": "300"})["diskSpec.bootDiskType"] \
        == "hyperdisk-balanced"


# --- submit against the emulator ------------------------------------------------------------

@pytest.fixture
def backend(emulator: EmulatorHandle) -> Iterator[VertexBackend]:
    with vertex.connect(endpoint=emulator.address) as client:
        yield client


@pytest.fixture
def resources(emulator: EmulatorHandle) -> Iterator[v1.PersistentResourceServiceClient]:
    """The real PersistentResourceServiceClient on the emulator's port."""
    channel = vertex.emulator_channel(emulator.address)
    yield v1.PersistentResourceServiceClient(transport=PersistentResourceServiceGrpcTransport(channel=channel))
    channel.close()


def make_resource(client: v1.PersistentResourceServiceClient, resource_id: str = "train-pool",
                  project: str = PROJECT, labels: dict[str, str] | None = None) -> str:
    """A resource with a CPU pool (2) and an A100 pool (up to 3), made with the real client."""
    body = {"resource_pools": [
        {"id": "cpus", "machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 2},
        {"id": "gpus", "machine_spec": {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100",
                                        "accelerator_count": 1},
         "replica_count": 1, "autoscaling_spec": {"min_replica_count": 1, "max_replica_count": 3}},
    ], "labels": labels or {}}
    operation = client.create_persistent_resource(parent=f"projects/{project}/locations/{REGION}",
                                                  persistent_resource_id=resource_id, persistent_resource=body)
    return str(operation.result().name)


def quick(machine: dict[str, Any], replicas: int = 1, disk: dict[str, Any] | None = None) -> dict[str, Any]:
    return wps(machine, replicas, disk, command=[sys.executable, "-c", "pass"])


def submit(backend: VertexBackend, job: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
    if "idempotency_key" in kwargs:
        kwargs["key"] = kwargs.pop("idempotency_key")
    return submit_job(backend, job, retry=FAST, **kwargs)


def refused(backend: VertexBackend, emulator: EmulatorHandle, job: dict[str, Any]) -> list[Any]:
    """The diagnostics of a submit that must be refused, after checking no job exists."""
    with pytest.raises(errors.SpecError) as caught:
        submit(backend, job)
    assert caught.value.exit_code == 1
    assert emulator.jobs() == [] and emulator.jobs("hpt") == []
    assert session(backend).jobs(PROJECT, REGION) == []
    return caught.value.diagnostics


def test_a_job_that_fits_is_created(backend: VertexBackend, emulator: EmulatorHandle,
                                    resources: v1.PersistentResourceServiceClient) -> None:
    make_resource(resources)
    view = submit(backend, job_on(quick(CPU), quick(A100, replicas=3)), wait=True)
    assert view["state"] == "JOB_STATE_SUCCEEDED"
    [stored] = emulator.jobs()
    assert stored.job_spec.persistent_resource_id == "train-pool"


@pytest.mark.parametrize(("pools", "code", "field"), [
    ([quick({"machineType": "n1-standard-8"})], "persistent-resource-mismatch", "machineSpec.machineType"),
    ([quick(CPU), quick({**A100, "acceleratorType": "NVIDIA_TESLA_V100", "machineType": "n1-standard-8"})],
     "persistent-resource-mismatch", "machineSpec.machineType"),
    ([quick(CPU), quick({**A100, "acceleratorType": "NVIDIA_A100_80GB"})], "persistent-resource-mismatch",
     "machineSpec.acceleratorType"),
    ([quick(CPU, disk={"bootDiskType": "pd-ssd", "bootDiskSizeGb": 500})], "persistent-resource-mismatch",
     "diskSpec.bootDiskSizeGb"),
    ([quick(CPU), quick(A100, replicas=4)], "persistent-resource-replicas", "replicaCount"),
    ([quick(CPU), quick(CPU, replicas=2)], "persistent-resource-replicas", "replicaCount"),
])
def test_a_job_that_does_not_fit_creates_nothing(backend: VertexBackend, emulator: EmulatorHandle,
                                                 resources: v1.PersistentResourceServiceClient,
                                                 pools: list[dict[str, Any]], code: str, field: str) -> None:
    make_resource(resources)
    [problem] = refused(backend, emulator, job_on(*pools))
    assert problem.code == code and problem.path.endswith(field)
    assert NAME in problem.message


def test_a_missing_resource_an_invalid_id_and_one_not_running(backend: VertexBackend, emulator: EmulatorHandle,
                                                              resources: v1.PersistentResourceServiceClient) -> None:
    [missing] = refused(backend, emulator, job_on(quick(CPU)))
    assert missing.code == "persistent-resource-not-found" and f"{NAME} does not exist" in missing.message
    make_resource(resources, project="another-project")  # another project's resource is not this job's
    assert refused(backend, emulator, job_on(quick(CPU)))[0].code == "persistent-resource-not-found"
    [invalid] = refused(backend, emulator, job_on(quick(CPU), resource_id=NAME))
    assert invalid.code == "persistent-resource-id" and "not a resource path" in invalid.message
    make_resource(resources, labels={STATE_LABEL: "provisioning"})
    [waiting] = refused(backend, emulator, job_on(quick(CPU)))
    assert waiting.code == "persistent-resource-not-running" and "PROVISIONING" in waiting.message
    emulator.resources.set_state(NAME, "running")
    assert submit(backend, job_on(quick(CPU)))["name"].startswith(f"{PARENT}/customJobs/")


def test_a_resubmit_that_adopts_its_job_reads_no_resource(backend: VertexBackend, emulator: EmulatorHandle,
                                                           resources: v1.PersistentResourceServiceClient) -> None:
    name = make_resource(resources)
    first = submit(backend, job_on(quick(CPU)), idempotency_key="rel-1")
    resources.delete_persistent_resource(name=name).result()  # its job is cancelled with it
    again = submit(backend, job_on(quick(CPU)), idempotency_key="rel-1")
    assert again["name"] == first["name"] and again["adopted"] is True
    with pytest.raises(errors.SpecError, match="does not exist"):
        submit(backend, job_on(quick(CPU)), idempotency_key="rel-2")
    assert len(emulator.jobs()) == 1


def test_a_tuning_job_on_a_resource(backend: VertexBackend, emulator: EmulatorHandle,
                                    resources: v1.PersistentResourceServiceClient) -> None:
    make_resource(resources)
    [problem] = refused(backend, emulator, job_on(quick(A100, replicas=1), quick(A100, replicas=3), tuning=True))
    assert problem.code == "persistent-resource-replicas" and problem.path.startswith("trialJobSpec.")
    view = submit(backend, job_on(quick(CPU), tuning=True))
    assert "/hyperparameterTuningJobs/" in view["name"]


def test_a_job_on_no_resource_never_reads_one(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    job = job_on(quick(CPU))
    del job["jobSpec"]["persistentResourceId"]
    assert submit(backend, job)["name"].startswith(f"{PARENT}/customJobs/")


# --- the command line --------------------------------------------------------------------------

def write_spec(tmp_path: Path, resource_id: str = "train-pool", accelerator: str = "NVIDIA_TESLA_A100",
               replicas: int = 2, machine: str = "a2-highgpu-1g") -> Path:
    command = json.dumps([sys.executable, "-c", "print('on the resource')"])
    path = tmp_path / "job.yaml"
    path.write_text("\n".join([
        "display_name: on-resource", f"project: {PROJECT}", f"region: {REGION}",
        "chief:", "  machine_type: n1-standard-4", "  image: us-docker.pkg.dev/p/r/train:1", f"  command: {command}",
        "workers:", f"  replicas: {replicas}", f"  machine_type: {machine}",
        f"  accelerator: {{type: {accelerator}, count: 1}}", "  image: us-docker.pkg.dev/p/r/train:1",
        f"  command: {command}",
        "extra:", "  jobSpec:", f"    persistentResourceId: {resource_id}", ""]))
    return path


def test_cli_submit_checks_the_resource(emulator: EmulatorHandle, tmp_path: Path,
                                        resources: v1.PersistentResourceServiceClient,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    ep = ["--endpoint", emulator.address, "--output", "json"]
    code, out, err = run(capsys, "submit", str(write_spec(tmp_path)), *ep)
    assert code == 1 and out["error"]["type"] == "SpecError" and out["error"]["exit_code"] == 1
    assert out["error"]["diagnostics"][0]["code"] == "persistent-resource-not-found"
    assert f"{NAME} does not exist" in err
    err = err.split("\n", 1)[1]  # after the line naming the project and region (vxtrain.settings)
    assert err.startswith(f"{tmp_path / 'job.yaml'}: error: persistent resource {NAME} does not exist")
    assert out["error"]["diagnostics"][0]["file"] == str(tmp_path / "job.yaml")
    make_resource(resources)
    spec = write_spec(tmp_path, accelerator="NVIDIA_A100_80GB", machine="a2-ultragpu-1g")
    code, out, err = run(capsys, "submit", str(spec), *ep)
    [problem] = out["error"]["diagnostics"]
    assert code == 1 and problem["code"] == "persistent-resource-mismatch"
    assert problem["path"] == "jobSpec.workerPoolSpecs[1].machineSpec.machineType"
    assert "workers (jobSpec.workerPoolSpecs[1])" in problem["message"]
    assert "machineSpec.machineType is a2-ultragpu-1g in the job, a2-highgpu-1g in the pool" in problem["message"]
    assert "machineSpec.acceleratorType is NVIDIA_A100_80GB in the job, NVIDIA_TESLA_A100 in the pool" in err
    code, out, _ = run(capsys, "submit", str(write_spec(tmp_path, replicas=4)), *ep)
    assert code == 1 and out["error"]["diagnostics"][0]["code"] == "persistent-resource-replicas"
    code, listed, _ = run(capsys, "list", *ep, "--project", PROJECT, "--region", REGION)
    assert code == 0 and listed["jobs"] == [] and emulator.jobs() == []
    code, view, _ = run(capsys, "submit", str(write_spec(tmp_path)), *ep, "--wait")
    assert code == 0 and view["state"] == "JOB_STATE_SUCCEEDED"


@pytest.mark.slow
def test_python_m_vxtrain_submit_on_a_resource(emulator: EmulatorHandle, tmp_path: Path,
                                               resources: v1.PersistentResourceServiceClient) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def submit_cli(spec: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "vxtrain", "submit", str(spec), "--endpoint",
                               emulator.address, "--output", "json"], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120)

    make_resource(resources)
    done = submit_cli(write_spec(tmp_path, replicas=5))
    assert done.returncode == 1, done.stderr
    assert json.loads(done.stdout)["error"]["diagnostics"][0]["code"] == "persistent-resource-replicas"
    assert "has at most 3 (autoscalingSpec.maxReplicaCount)" in done.stderr and emulator.jobs() == []
    done = submit_cli(write_spec(tmp_path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"].startswith(f"{PARENT}/customJobs/")


def test_cli_target_local_runs_the_job_here_without_the_resource(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "submit", str(write_spec(tmp_path)), "--target", "local", "--output", "json")
    assert code == 0 and out["state"] == "JOB_STATE_SUCCEEDED"
    assert "--target local runs it on this host instead" in err
