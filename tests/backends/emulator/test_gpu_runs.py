"""The emulator hands its own host's GPUs to the jobs it runs, by the local runs' rule:
each replica its own, a job the host has too few for FAILED before anything starts, and
``--gpus``/``--share-gpus``/``--no-gpus`` given to the emulator itself."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, hpt_job, pool, py, wait_until
from vxtrain.runtime.gpus import GpuOptions

PRINT = "import os; print('CVD=' + repr(os.environ['CUDA_VISIBLE_DEVICES']))"
T4 = {"accelerator_type": "NVIDIA_TESLA_T4", "accelerator_count": 1}


def gpu_pools(marker: Path | None = None) -> list[dict[str, Any]]:
    """A chief and 2 workers, one T4 each; with ``marker``, each replica also touches that file."""
    code = PRINT if marker is None else f"{PRINT}; open({str(marker)!r}, 'a').close()"
    return [pool(py(code), **T4), pool(py(code), replicas=2, **T4)]


def test_each_replica_of_an_emulated_job_gets_its_own_gpus(make_emulator: Any, connect: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aa11,GPU-bb22,GPU-cc33")  # the emulator's host
    out = io.StringIO()
    client = connect(make_emulator(workdir=tmp_path, out=out))
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=gpu_pools()))
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_SUCCEEDED, ended.error.message
    text = out.getvalue()
    for name, gpu in (("workerpool0-0", "GPU-aa11"), ("workerpool1-0", "GPU-bb22"), ("workerpool1-1", "GPU-cc33")):
        assert f"[{name}] CVD={gpu!r}" in text


def test_a_job_too_big_for_the_emulators_gpus_fails_before_any_replica_starts(
        make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    client = connect(make_emulator(workdir=tmp_path, out=io.StringIO(), gpus=GpuOptions(("0", "1"))))
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=gpu_pools(marker)))
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_FAILED and ended.error.code == 9  # FAILED_PRECONDITION
    message = ended.error.message
    assert message.startswith("The job cannot run on this emulator's host: the job needs 3 GPUs and this host has 2")
    assert "workerPoolSpecs[1].machineSpec.acceleratorCount: 1 GPU x 2 replicas = 2" in message
    assert "start the emulator with --gpus LIST" in message
    assert not marker.exists()


@pytest.mark.slow
def test_the_emulators_own_share_and_no_gpus_options(make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    shared = connect(make_emulator(workdir=tmp_path, out=out, gpus=GpuOptions(("0",), share=True)))
    job = shared.create_custom_job(parent=PARENT, custom_job=custom_job(pools=gpu_pools()))
    assert wait_until(shared, job.name, TERMINAL).state == State.JOB_STATE_SUCCEEDED
    assert out.getvalue().count("CVD='0'") == 3 and "Duplicate GPU detected" in out.getvalue()
    out = io.StringIO()
    cpu = connect(make_emulator(workdir=tmp_path, out=out, gpus=GpuOptions(none=True)))
    job = cpu.create_custom_job(parent=PARENT, custom_job=custom_job(pools=gpu_pools()))
    assert wait_until(cpu, job.name, TERMINAL).state == State.JOB_STATE_SUCCEEDED
    assert out.getvalue().count("CVD=''") == 3 and "--no-gpus: chief (1 GPU), workers" in out.getvalue()


def test_a_studys_trials_on_the_emulator_share_no_gpu(make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    out = io.StringIO()
    client = connect(make_emulator(workdir=tmp_path, out=out, gpus=GpuOptions(("0", "1"))))
    body = hpt_job(pools=[pool(py(PRINT), **T4)], trials=3)
    body["parallel_trial_count"] = 3
    job = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=body)
    ended = wait_until(client, job.name, TERMINAL, hpt=True)
    assert ended.state == State.JOB_STATE_SUCCEEDED, ended.error.message
    text = out.getvalue()
    assert "1 GPU and this host has 2 (--gpus: 0, 1): 2 trials at a time" in text
    assert {line.rsplit("CVD=", 1)[1] for line in text.splitlines() if "CVD=" in line} == {"'0'", "'1'"}


def test_the_emulator_command_checks_its_gpu_options_before_serving(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.incli import run as cli  # here: the CLI is what this test exercises

    code, _, err = cli(capsys, "emulator", "--port", "0", "--gpus", "0,first")
    assert code == 2 and "--gpus takes GPU indices or UUIDs" in err and "listening" not in err
    code, _, err = cli(capsys, "emulator", "--port", "0", "--share-gpus", "--no-gpus")
    assert code == 2 and "--no-gpus runs every replica on the CPU" in err


def test_a_job_with_more_replicas_than_the_host_starts_fails_before_any_starts(
        make_emulator: Any, connect: Any, tmp_path: Path) -> None:
    marker = tmp_path / "started"
    client = connect(make_emulator(workdir=tmp_path, out=io.StringIO()))
    code = f"open({str(marker)!r}, 'a').close()"
    job = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py(code)),
                                                                               pool(py(code), replicas=100_000)]))
    ended = wait_until(client, job.name, TERMINAL)
    assert ended.state == State.JOB_STATE_FAILED and ended.error.code == 9
    assert "would start 100,001 replica processes on this host" in ended.error.message
    assert not marker.exists()


def test_a_study_of_a_billion_trials_fails_before_its_points_are_drawn(make_emulator: Any, connect: Any,
                                                                        tmp_path: Path) -> None:
    for simulate in (None, 0.1):
        client = connect(make_emulator(workdir=tmp_path, out=io.StringIO(), simulate_seconds=simulate))
        job = client.create_hyperparameter_tuning_job(parent=PARENT,
                                                      hyperparameter_tuning_job=hpt_job([pool(py("pass"))], trials=1_000_000_000))
        ended = wait_until(client, job.name, TERMINAL, hpt=True)
        assert ended.state == State.JOB_STATE_FAILED and ended.error.code == 9
        assert "1,000,000,000 trials" in ended.error.message and not ended.trials
