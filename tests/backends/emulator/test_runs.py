"""Jobs and trials that really run, with the local runner, or on a timer."""
from __future__ import annotations

import io
import os
import time
from pathlib import Path
from typing import Any

import pytest

from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, hpt_job, pool, py, wait_until


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


def test_job_model_reads_the_custom_job_as_sent() -> None:
    """The model comes from the gcloud converter; proto3 JSON leaves a zero
    replica_count out, and that still means 0 replicas, not the native default 1."""
    from google.cloud import aiplatform_v1 as v1

    from vxtrain.backends.emulator.runs import job_model

    rs_image = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
    pools = [pool(py("pass"), accelerator_type="NVIDIA_L4", accelerator_count=2),
             {**pool(py("pass")), "replica_count": 0},
             {**pool(replicas=4), "container_spec": {"image_uri": rs_image}}]
    job = v1.CustomJob(custom_job("sent", {"team": "nlp"}, pools))
    model, spec = job_model(job)
    assert model.display_name == "sent" and model.labels == {"team": "nlp"}
    assert [(p.role, p.replicas) for p in model.ordered_pools()] == [
        ("chief", 1), ("workers", 0), ("reduction_server", 4)]
    chief = model.pools["chief"]
    assert chief.command == py("pass") and chief.accelerator is not None and chief.accelerator.count == 2
    assert spec["workerPoolSpecs"][2]["replicaCount"] == "4"  # the CustomJobSpec as sent, for CLUSTER_SPEC
