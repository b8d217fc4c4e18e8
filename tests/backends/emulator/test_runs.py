"""Jobs and trials that really run, with the local runner, or on a timer."""
from __future__ import annotations

import io
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.polling import wait_for
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
    wait_for(lambda: pid_file.exists() and pid_file.read_text(), 15, "the replica to record its pid")
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


def _sent_local(local: Any, base_dir: Path | str) -> list[tuple[str, str]]:
    """The gRPC metadata vxtrain's submit adds to a create sent to an emulator."""
    from vxtrain.backends.base import LOCAL_METADATA, LocalRun

    return [(LOCAL_METADATA, LocalRun(local, str(base_dir)).to_metadata())]


def test_a_create_that_says_how_to_run_its_job_runs_it_from_the_spec_folder(
        make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    """A standalone emulator (its own workdir) runs a job sent from elsewhere as --target local
    would: the spec's local: block, relative paths from the spec's folder."""
    from vxtrain.model import LocalSpec

    (tmp_path / "emulator").mkdir()
    spec_dir = tmp_path / "spec"
    spec_dir.mkdir()
    (spec_dir / "train.py").write_text("import os\nprint('ran', os.path.basename(os.getcwd()))\n")
    out = io.StringIO()
    client = connect(make_emulator(workdir=tmp_path / "emulator", out=out))
    local = LocalSpec(command=[sys.executable, "train.py"])
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(labels={"vxtrain-key": "a1"}),
                                   metadata=_sent_local(local, spec_dir))
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_SUCCEEDED, ended.error.message
    assert "[workerpool0-0] ran spec" in out.getvalue()


def test_a_spec_folder_the_emulator_host_lacks_runs_from_its_workdir_and_says_so(
        make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    client = connect(make_emulator(workdir=tmp_path, out=out))
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(
        labels={"vxtrain-key": "b2"}, pools=[pool(py("import os; print('cwd', os.getcwd())"))]),
        metadata=_sent_local(None, tmp_path / "not-here"))
    assert wait_until(client, job.name, TERMINAL).state == State.JOB_STATE_SUCCEEDED
    assert f"{tmp_path / 'not-here'} is not on this host: running from {tmp_path}" in out.getvalue()
    assert f"cwd {tmp_path}" in out.getvalue()


def test_a_local_run_survives_the_metadata_and_garbage_is_ignored() -> None:
    from vxtrain.backends.base import LocalRun
    from vxtrain.model import LocalSpec

    run = LocalRun(LocalSpec(["python", "t.py"], "sub", {"A": "1"}), "/specs/x")
    assert LocalRun.from_metadata(run.to_metadata()) == run
    assert LocalRun.from_metadata("{not json") is None and LocalRun.from_metadata('{"command": []}') is None


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
