"""The JobService emulator, driven by the real google-cloud-aiplatform client.

Every test talks gRPC to a server on 127.0.0.1 through the unmodified
``aiplatform_v1.JobServiceClient``; jobs that run use tiny ``python -c``
commands through the real local runner.
"""
from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1 as v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

from vxtrain.backends.emulator import (
    CUSTOM, EmulatorHandle, Fault, RpcError, faults_from_env, parse_fault, parse_filter, quota_metric,
    start_emulator,
)
from vxtrain.errors import UsageError, VxtrainError

PARENT = "projects/test-project/locations/us-central1"
State = v1.JobState
TERMINAL = {State.JOB_STATE_SUCCEEDED, State.JOB_STATE_FAILED, State.JOB_STATE_CANCELLED}
ROOT = Path(__file__).resolve().parents[2]


def pool(command: list[str] | None = None, replicas: int = 1, **machine: Any) -> dict[str, Any]:
    """A worker pool spec (proto-plus dict form)."""
    container: dict[str, Any] = {"image_uri": "us-docker.pkg.dev/p/train/img:1"}
    if command:
        container["command"] = command
    return {"replica_count": replicas, "machine_spec": {"machine_type": "n1-standard-4", **machine},
            "container_spec": container}


def custom_job(display_name: str = "job", labels: dict[str, str] | None = None,
               pools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A CustomJob request body."""
    return {"display_name": display_name, "labels": labels or {},
            "job_spec": {"worker_pool_specs": pools if pools is not None else [pool()]}}


def py(code: str) -> list[str]:
    """A container command running ``code`` with this interpreter."""
    return [sys.executable, "-c", code]


@pytest.fixture
def make_emulator() -> Iterator[Any]:
    """Start emulators (environment faults ignored); all are stopped at teardown."""
    handles: list[EmulatorHandle] = []

    def make(**kwargs: Any) -> EmulatorHandle:
        kwargs.setdefault("environ", {})
        handle = start_emulator(**kwargs)
        handles.append(handle)
        return handle

    yield make
    for handle in handles:
        handle.stop(grace=0)


@pytest.fixture
def connect() -> Iterator[Any]:
    """The real client over an insecure channel to an emulator."""
    channels: list[grpc.Channel] = []

    def make(handle: EmulatorHandle) -> v1.JobServiceClient:
        channel = grpc.insecure_channel(handle.address)
        channels.append(channel)
        return v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))

    yield make
    for channel in channels:
        channel.close()


def wait_until(client: v1.JobServiceClient, name: str, states: set[Any], timeout: float = 20.0,
               hpt: bool = False) -> Any:
    """Poll get until the job is in one of ``states``."""
    get = client.get_hyperparameter_tuning_job if hpt else client.get_custom_job
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        job = get(name=name)
        if job.state in states:
            return job
        time.sleep(0.02)
    raise AssertionError(f"{name} stayed {job.state.name}")


# --- the CRUD surface --------------------------------------------------------

def test_create_get_list_cancel_delete(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30)
    client = connect(handle)
    created = client.create_custom_job(parent=PARENT, custom_job=custom_job("train-a", {"team": "nlp"}))
    project_loc, _, job_id = created.name.rpartition("/customJobs/")
    assert project_loc == PARENT and job_id.isdigit() and len(job_id) >= 18
    assert created.state == State.JOB_STATE_QUEUED and created.create_time and created.update_time
    assert client.get_custom_job(name=created.name).display_name == "train-a"

    client.cancel_custom_job(name=created.name)
    ended = wait_until(client, created.name, TERMINAL)
    assert ended.state == State.JOB_STATE_CANCELLED and ended.error.code == 1 and ended.end_time
    assert handle.emulator.history(created.name)[-2:] == [State.JOB_STATE_CANCELLING, State.JOB_STATE_CANCELLED]

    operation = client.delete_custom_job(name=created.name)
    operation.result(timeout=5)
    assert operation.done()
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=created.name)
    assert handle.jobs() == []


def test_list_filters(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30)
    client = connect(handle)
    a = client.create_custom_job(parent=PARENT, custom_job=custom_job("alpha", {"team": "nlp", "key": "k1"}))
    b = client.create_custom_job(parent=PARENT, custom_job=custom_job("beta", {"team": "vision"}))
    client.cancel_custom_job(name=b.name)
    wait_until(client, b.name, TERMINAL)
    other = "projects/other/locations/us-central1"
    client.create_custom_job(parent=other, custom_job=custom_job("alpha", {"team": "nlp"}))

    def names(filter_: str) -> set[str]:
        return {j.name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": filter_})}

    assert names("") == {a.name, b.name}
    assert names("labels.team=nlp") == names('labels.team="nlp"') == {a.name}
    assert names("labels.key:*") == {a.name}
    assert names('display_name="beta"') == names("display_name=beta") == {b.name}
    assert names("state=JOB_STATE_CANCELLED") == {b.name}
    assert names("state!=JOB_STATE_CANCELLED") == {a.name}
    assert names('labels.team="nlp" AND state!=JOB_STATE_CANCELLED AND display_name=alpha') == {a.name}
    assert names("labels.team=nlp AND display_name=beta") == set()
    for bad in ("labels.team=nlp OR labels.team=vision", "create_time>1", "state=RUNNING", "=x"):
        with pytest.raises(gexc.InvalidArgument):
            names(bad)


def test_list_pages(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator(simulate_seconds=30))
    created = [client.create_custom_job(parent=PARENT, custom_job=custom_job(f"j{i}")).name for i in range(5)]
    first = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2})
    assert len(first.custom_jobs) == 2 and first.next_page_token
    assert [j.name for j in first] == created[::-1]  # the pager follows page tokens; newest first
    with pytest.raises(gexc.InvalidArgument):
        client.list_custom_jobs(request={"parent": PARENT, "page_token": "not-a-token"})


def test_page_tokens_survive_jobs_created_between_pages(make_emulator: Any, connect: Any) -> None:
    """A page token is a cursor: new jobs (listed first) neither repeat old ones on
    the next page nor push any out of the listing."""
    client = connect(make_emulator(simulate_seconds=30))
    old = [client.create_custom_job(parent=PARENT, custom_job=custom_job(f"old{i}")).name for i in range(5)]
    first = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2})
    page1 = [j.name for j in first.custom_jobs]
    for i in range(3):
        client.create_custom_job(parent=PARENT, custom_job=custom_job(f"new{i}"))
    rest = client.list_custom_jobs(request={"parent": PARENT, "page_size": 2, "page_token": first.next_page_token})
    assert page1 + [j.name for j in rest] == old[::-1]


def test_list_filter_wildcards_and_quoted_words(make_emulator: Any, connect: Any) -> None:
    """display_name:"x*" is Vertex's documented wildcard; a quoted value may hold AND or OR."""
    client = connect(make_emulator(simulate_seconds=30))
    a = client.create_custom_job(parent=PARENT, custom_job=custom_job("my_job_1", {"k": "or"})).name
    b = client.create_custom_job(parent=PARENT, custom_job=custom_job("cats AND dogs OR birds")).name

    def names(filter_: str) -> set[str]:
        return {j.name for j in client.list_custom_jobs(request={"parent": PARENT, "filter": filter_})}

    assert names('display_name:"my_job_*"') == names("display_name:my_*1") == {a}
    assert names('display_name:"my_job"') == set()
    assert names('display_name="cats AND dogs OR birds"') == {b}
    assert names('display_name="cats AND dogs OR birds" AND labels.k:*') == set()
    assert names("labels.k=OR") == set() and names("labels.k=or") == {a}
    assert names("labels.k!=or") == {b}  # an absent label is not equal to anything
    for bad in ("labels.k=or AND", "labels.k=or AND OR x=1", "NOT display_name=x"):
        with pytest.raises(gexc.InvalidArgument):
            names(bad)


def test_a_repeated_cancel_changes_nothing(make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    handle = make_emulator(out=io.StringIO())
    client = connect(handle)
    started = tmp_path / "started"
    code = f"import time; open({str(started)!r}, 'w').close(); time.sleep(60)"
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py(code))]))
    deadline = time.monotonic() + 15
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    for _ in range(3):
        try:
            client.cancel_custom_job(name=job.name)
        except gexc.FailedPrecondition:  # already CANCELLED: Vertex refuses, as it should
            break
    assert wait_until(client, job.name, TERMINAL).state == State.JOB_STATE_CANCELLED
    assert handle.emulator.history(job.name).count(State.JOB_STATE_CANCELLING) == 1


def test_state_walk_with_simulate(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=0.2)
    client = connect(handle)
    name = client.create_custom_job(parent=PARENT, custom_job=custom_job()).name
    seen: list[Any] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        job = client.get_custom_job(name=name)
        if not seen or seen[-1] != job.state:
            seen.append(job.state)
        if job.state in TERMINAL:
            break
        time.sleep(0.005)
    walk = [State.JOB_STATE_QUEUED, State.JOB_STATE_PENDING, State.JOB_STATE_RUNNING, State.JOB_STATE_SUCCEEDED]
    assert handle.emulator.history(name) == walk
    assert seen[0] == State.JOB_STATE_QUEUED and seen[-1] == State.JOB_STATE_SUCCEEDED
    assert seen == [s for s in walk if s in seen]  # a poller sees the states in order
    assert job.create_time <= job.start_time <= job.end_time and not job.error.message


# --- running jobs --------------------------------------------------------------

def test_runnable_job_runs_and_succeeds(make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    client = connect(make_emulator(workdir=tmp_path, out=out))
    code = "import json, os; print('task', json.loads(os.environ['CLUSTER_SPEC'])['task']['type'])"
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py(code))]))
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_SUCCEEDED, ended.error.message
    assert "[workerpool0-0] task workerpool0" in out.getvalue()


def test_failing_replica_fails_the_job_and_is_named(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator(out=io.StringIO()))
    pools = [pool(py("import time; time.sleep(20)")), pool(py("import sys; sys.exit(3)"))]
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=pools))
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_FAILED
    assert "workerpool1-0" in ended.error.message and "non-zero status of 3" in ended.error.message


def test_cancel_stops_the_processes(make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    client = connect(make_emulator(out=io.StringIO()))
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py(code))]))
    deadline = time.monotonic() + 15
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    client.cancel_custom_job(name=job.name)
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_CANCELLED
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_nothing_runnable_fails_with_a_hint(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator())
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job())
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_FAILED
    assert "local: {command:" in ended.error.message and "--simulate" in ended.error.message


def test_registered_local_command_makes_an_image_job_runnable(make_emulator: Any, connect: Any) -> None:
    from vxtrain.model import LocalSpec

    out = io.StringIO()
    handle = make_emulator(out=out)
    handle.emulator.register_local({"run": "here"}, LocalSpec(command=py("print('local command')")))
    client = connect(handle)
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(labels={"run": "here"}))
    assert wait_until(client, job.name, TERMINAL).state == State.JOB_STATE_SUCCEEDED
    assert "local command" in out.getvalue()


# --- faults --------------------------------------------------------------------

FAULT_CASES = [
    ("unavailable-before-commit", gexc.ServiceUnavailable, 0),
    ("unavailable", gexc.ServiceUnavailable, 0),
    ("deadline-after-commit", gexc.DeadlineExceeded, 1),
    ("quota", gexc.ResourceExhausted, 0),
    ("permission", gexc.PermissionDenied, 0),
    ("internal", gexc.InternalServerError, 0),
]


@pytest.mark.parametrize(("kind", "error", "stored"), FAULT_CASES)
def test_create_faults(make_emulator: Any, connect: Any, kind: str, error: type[Exception], stored: int) -> None:
    handle = make_emulator(simulate_seconds=30, faults=[f"create:{kind}:1"])
    client = connect(handle)
    gpu = pool(accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8)
    with pytest.raises(error) as info:
        client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[gpu]))
    assert len(handle.jobs()) == stored
    if kind == "quota":
        assert "The following quota metrics exceed quota limits: " \
               "aiplatform.googleapis.com/custom_model_training_nvidia_v100_gpus" in str(info.value)
    if kind == "permission":
        assert "iam.serviceAccounts.actAs" in str(info.value)
    client.create_custom_job(parent=PARENT, custom_job=custom_job())  # the fault fired once only
    assert len(handle.jobs()) == stored + 1


def test_fault_count_and_other_methods(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30, environ={"VXTRAIN_EMULATOR_FAULTS": "get:unavailable:2"})
    client = connect(handle)
    name = client.create_custom_job(parent=PARENT, custom_job=custom_job()).name
    for _ in range(2):
        with pytest.raises(gexc.ServiceUnavailable):
            client.get_custom_job(name=name)
    assert client.get_custom_job(name=name).name == name
    handle.add_fault("list:internal:1")
    handle.add_fault(Fault("cancel", "deadline-after-commit", 1))
    with pytest.raises(gexc.InternalServerError):
        list(client.list_custom_jobs(parent=PARENT))
    with pytest.raises(gexc.DeadlineExceeded):  # after commit: the cancel took effect
        client.cancel_custom_job(name=name)
    assert wait_until(client, name, TERMINAL).state == State.JOB_STATE_CANCELLED
    handle.add_fault("delete:permission:1")
    with pytest.raises(gexc.PermissionDenied):
        client.delete_custom_job(name=name)
    assert len(handle.jobs()) == 1


@pytest.mark.parametrize("text", ["create", "create:quota:x", "create:quota:0", "submit:quota:1",
                                  "create:flaky:1", "a:b:c:d"])
def test_bad_fault_specs_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_fault(text)


def test_fault_parsing() -> None:
    assert parse_fault("create:quota") == Fault("create", "quota", 1)
    assert faults_from_env({"VXTRAIN_EMULATOR_FAULTS": " get:internal:2 , create:quota:1,"}) == [
        Fault("get", "internal", 2), Fault("create", "quota", 1)]


def test_quota_metric_names() -> None:
    gpu = v1.CustomJob(custom_job(pools=[pool(accelerator_type="NVIDIA_L4", accelerator_count=1)]))
    tpu = v1.CustomJob(custom_job(pools=[pool(accelerator_type="TPU_V2", accelerator_count=8)]))
    assert quota_metric(gpu) == "aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
    assert quota_metric(tpu) == "aiplatform.googleapis.com/custom_model_training_tpu_v2"
    assert quota_metric(v1.CustomJob(custom_job())) == "aiplatform.googleapis.com/custom_model_training_cpus"


# --- validation ------------------------------------------------------------------

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


def test_unimplemented_methods(make_emulator: Any, connect: Any) -> None:
    with pytest.raises(gexc.MethodNotImplemented):
        connect(make_emulator()).get_batch_prediction_job(name=f"{PARENT}/batchPredictionJobs/1")


def test_parse_filter_unit() -> None:
    job = v1.CustomJob(display_name='say "hi"', labels={"a": "1"}, state=State.JOB_STATE_RUNNING)
    assert all(p(job) for p in parse_filter(r'display_name="say \"hi\"" AND labels.a="1"'))
    assert not any(p(job) for p in parse_filter("labels.a!=1"))


# --- hyperparameter tuning jobs ---------------------------------------------------

def hpt_job(pools: list[dict[str, Any]] | None = None, trials: int = 2) -> dict[str, Any]:
    """A HyperparameterTuningJob request body."""
    return {
        "display_name": "study", "labels": {"kind": "hpt"}, "max_trial_count": trials, "parallel_trial_count": 1,
        "study_spec": {"metrics": [{"metric_id": "accuracy", "goal": "MAXIMIZE"}],
                       "parameters": [{"parameter_id": "lr", "double_value_spec": {"min_value": 0.1, "max_value": 0.2}},
                                      {"parameter_id": "opt", "categorical_value_spec": {"values": ["adam"]}}]},
        "trial_job_spec": {"worker_pool_specs": pools or [pool()]},
    }


def test_hpt_create_get_list_cancel_delete(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30)
    client = connect(handle)
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=hpt_job())
    assert "/hyperparameterTuningJobs/" in created.name and created.state == State.JOB_STATE_QUEUED
    assert client.get_hyperparameter_tuning_job(name=created.name).max_trial_count == 2
    listed = client.list_hyperparameter_tuning_jobs(request={"parent": PARENT, "filter": "labels.kind=hpt"})
    assert [j.name for j in listed] == [created.name]
    assert list(client.list_custom_jobs(parent=PARENT)) == []
    client.cancel_hyperparameter_tuning_job(name=created.name)
    assert wait_until(client, created.name, TERMINAL, hpt=True).state == State.JOB_STATE_CANCELLED
    client.delete_hyperparameter_tuning_job(name=created.name).result(timeout=5)
    assert handle.jobs("hpt") == []
    bad = hpt_job()
    bad["study_spec"]["metrics"] = []
    with pytest.raises(gexc.InvalidArgument, match="study_spec.metrics"):
        client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=bad)


def test_hpt_simulated_trials(make_emulator: Any, connect: Any) -> None:
    client = connect(make_emulator(simulate_seconds=0.2))
    job = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=hpt_job(trials=3))
    ended = wait_until(client, job.name, TERMINAL, hpt=True)
    assert ended.state == State.JOB_STATE_SUCCEEDED
    assert [t.state.name for t in ended.trials] == ["SUCCEEDED"] * 3
    assert all(0.1 <= dict((p.parameter_id, p.value) for p in t.parameters)["lr"] <= 0.2 for t in ended.trials)


def test_hpt_trials_run_with_their_parameters(make_emulator: Any, connect: Any) -> None:
    out = io.StringIO()
    client = connect(make_emulator(out=out))
    code = "import os, sys, json; print('trial', json.loads(os.environ['CLUSTER_SPEC'])['task'].get('trial'), sys.argv[1:])"
    job = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=hpt_job([pool(py(code))]))
    ended = wait_until(client, job.name, TERMINAL, hpt=True)
    assert ended.state == State.JOB_STATE_SUCCEEDED, ended.error.message
    assert [t.id for t in ended.trials] == ["1", "2"]
    assert {p.parameter_id for p in ended.trials[0].parameters} == {"lr", "opt"}
    assert "--opt=adam" in out.getvalue() and "trial 2" in out.getvalue()


# --- binding and the command ---------------------------------------------------------

def test_taken_port_is_a_clear_error(make_emulator: Any) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(VxtrainError, match=f"port {port} on 127.0.0.1 is in use"):
            start_emulator(port=port, environ={})
    first = make_emulator()
    with pytest.raises(VxtrainError, match="is in use"):  # no SO_REUSEPORT sharing between emulators
        start_emulator(port=first.port, environ={})


def test_a_name_binds_all_its_addresses_or_none(make_emulator: Any) -> None:
    """localhost is 127.0.0.1 and ::1: with 127.0.0.1's port taken, grpc alone
    would listen on ::1 only (a warning), and clients would reach the other process."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(VxtrainError, match=f"port {port} on localhost.* is in use"):
            start_emulator(host="localhost", port=port, environ={})
    handle = make_emulator(host="localhost")
    assert handle.address == f"localhost:{handle.port}"


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("VXTRAIN_EMULATOR_FAULTS", None)
    return subprocess.Popen([sys.executable, "-m", "vxtrain", *args], stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT)


def test_emulator_command_serves_until_interrupted(connect: Any) -> None:
    proc = _cli("emulator", "--port", "0", "--simulate", "0.2", "--fault", "get:internal:1")
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        assert line.startswith("vxtrain emulator listening on 127.0.0.1:"), line
        handle = EmulatorHandle.__new__(EmulatorHandle)  # only .address is used by connect()
        handle.host, handle.port = "127.0.0.1", int(line.strip().rsplit(":", 1)[1])
        client = connect(handle)
        name = client.create_custom_job(parent=PARENT, custom_job=custom_job()).name
        with pytest.raises(gexc.InternalServerError):
            client.get_custom_job(name=name)
        assert wait_until(client, name, TERMINAL).state == State.JOB_STATE_SUCCEEDED
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        if proc.stderr:
            proc.stderr.close()


def _emulator_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("vxtrain-emulator")}


def test_stop_leaves_no_thread_behind(connect: Any) -> None:
    """grpc never shuts down the executor it is given; stop() does, and joins the jobs."""
    before = _emulator_threads()
    handle = start_emulator(environ={}, out=io.StringIO())
    client = connect(handle)
    done = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py("pass"))])).name
    wait_until(client, done, TERMINAL)
    client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py("import time; time.sleep(60)"))]))
    assert _emulator_threads() - before
    handle.stop(grace=0)
    assert _emulator_threads() - before == set()
    with pytest.raises(RpcError) as info:  # and nothing can start behind it
        handle.emulator.create(CUSTOM, PARENT, v1.CustomJob(custom_job(pools=[pool(py("pass"))])))
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
    assert _emulator_threads() - before == set()


def test_sigterm_stops_the_emulator_and_the_processes_of_its_jobs(connect: Any, tmp_path: Path) -> None:
    """SIGTERM (a service manager, CI, ``kill``) is a normal stop, like Ctrl-C:
    replicas run in their own sessions, so without it they would be orphaned."""
    proc = _cli("emulator", "--port", "0")
    pid_file = tmp_path / "pid"
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        handle = EmulatorHandle.__new__(EmulatorHandle)  # only .address is used by connect()
        handle.host, handle.port = "127.0.0.1", int(line.strip().rsplit(":", 1)[1])
        code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
        connect(handle).create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py(code))]))
        deadline = time.monotonic() + 15
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.02)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        if proc.stderr:
            proc.stderr.close()
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_emulator_command_on_a_taken_port_exits_non_zero(make_emulator: Any) -> None:
    taken = make_emulator()
    proc = _cli("emulator", "--port", str(taken.port))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert f"port {taken.port} on 127.0.0.1 is in use" in err and "Traceback" not in err


def test_command_registration() -> None:
    import typer
    from typer.testing import CliRunner

    from vxtrain.commands import emulator as command

    app = typer.Typer()
    command.register(app)

    @app.command("other")
    def _other() -> None:  # a second command keeps typer from flattening the app
        """Placeholder."""

    result = CliRunner().invoke(app, ["emulator", "--help"])
    assert result.exit_code == 0
    for flag in ("--host", "--port", "--fault", "--simulate"):
        assert flag in result.output
    bad = CliRunner().invoke(app, ["emulator", "--fault", "create:nope:1", "--port", "0"])
    assert isinstance(bad.exception, UsageError)
