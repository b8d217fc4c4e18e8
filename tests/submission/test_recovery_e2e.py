"""configs/examples/recovery.yaml end to end: its PyTorch trainer checkpoints and resumes
bit for bit, and ``vxtrain submit --wait`` against an emulator that preempts the first
job (``--preempt``) ends SUCCEEDED after one recovery, with the weights of a run that
was never interrupted, telling a webhook as it goes.

Needs torch (the CPU build, as tests/test_frameworks.py says); skipped without it, as
.ci/run lets CI skip the framework tests when the frameworks cannot be installed.
Timings on a 2-core machine: the uninterrupted run ~10 s, the kill test ~10 s, the recovered
submit ~20-30 s (its dead hook costs up to notify.DEADLINE, 3 s, per event).
"""
from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.hooks import webhook
from tests.processes import stop
from vxtrain.backends.emulator import EmulatorHandle, start_emulator

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "configs" / "examples" / "recovery.yaml"
TRAINER = SPEC.parent / "recovery_torch" / "train.py"
#: The first job of the region loses its machines after this many seconds RUNNING: less than
#: the trainer's 50 steps of 0.1 s take even on a fast host, so it can never finish first.
AFTER = 4.0

pytestmark = [pytest.mark.torch, pytest.mark.slow]


@pytest.fixture(scope="module", autouse=True)
def _torch() -> None:
    if importlib.util.find_spec("torch") is None:
        pytest.skip("not installed: torch (pip install torch==2.13.0, the CPU build)")


def _env(**extra: str) -> dict[str, str]:
    """This environment (with the emulator token tests/conftest.py sets), this tree first on the path."""
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _digest(base: Path) -> str:
    return (base / "model" / "weights.sha256").read_text().strip()


def _starts(base: Path, log: str = "starts.log") -> list[dict[str, str]]:
    """The trainer's ``starts.log``: one ``attempt=N resumed_at=STEP`` line per start (or
    its ``saves.log``: one ``attempt=N step=STEP`` line per checkpoint in place)."""
    path = base / "checkpoints" / log
    lines = path.read_text().splitlines() if path.exists() else []
    return [dict(part.split("=", 1) for part in line.split()) for line in lines]


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The weights' digest of ``vxtrain local-run`` of the example, never interrupted."""
    base = tmp_path_factory.mktemp("once")
    done = subprocess.run([sys.executable, "-m", "vxtrain", "local-run", str(SPEC), "--set",
                           f"base_output_dir={base}"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env=_env(RECOVERY_STEP_SECONDS="0"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert [s["resumed_at"] for s in _starts(base)] == ["0"]
    return _digest(base)


def test_the_trainer_killed_mid_run_resumes_to_the_same_weights(uninterrupted: str, tmp_path: Path) -> None:
    """No vxtrain in between: SIGKILL once a checkpoint is written, start it again."""
    env = _env(AIP_CHECKPOINT_DIR=f"{tmp_path}/checkpoints/", AIP_MODEL_DIR=f"{tmp_path}/model/")
    first = subprocess.Popen([sys.executable, str(TRAINER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True, env=env)
    assert first.stdout is not None
    try:
        line = first.stdout.readline()
        while line and not line.startswith("step 15:"):
            line = first.stdout.readline()
        assert line.startswith("step 15:"), "the trainer ended before its third checkpoint"
    finally:
        stop(first, signal.SIGKILL)
    assert not (tmp_path / "model" / "weights.sha256").exists()
    again = subprocess.run([sys.executable, str(TRAINER)], capture_output=True, text=True, timeout=300,
                           env={**env, "RECOVERY_STEP_SECONDS": "0", "VXTRAIN_ATTEMPT": "1"})
    assert again.returncode == 0, again.stderr[-2000:]
    starts = _starts(tmp_path)
    assert starts[0] == {"attempt": "0", "resumed_at": "0"} and starts[1]["attempt"] == "1"
    assert int(starts[1]["resumed_at"]) >= 15 and int(starts[1]["resumed_at"]) % 5 == 0
    assert _digest(tmp_path) == uninterrupted


@pytest.fixture(scope="module")
def emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatorHandle]:
    """One emulator for the module; each test adds the preemption of its own first job."""
    log = tmp_path_factory.mktemp("emulator") / "jobs.log"
    with log.open("w") as out:
        handle = start_emulator(workdir=ROOT, out=out, environ={})
        try:
            yield handle
        finally:
            handle.stop(grace=0)


def _submit(handle: EmulatorHandle, base: Path, *flags: str) -> tuple[int, dict[str, Any], str]:
    """``vxtrain submit recovery.yaml --wait --output json`` as a user runs it, with the next
    job of us-central1 preempted AFTER seconds into its run."""
    handle.preemptions.add(f"us-central1:{AFTER}:1")
    done = subprocess.run([sys.executable, "-m", "vxtrain", "submit", str(SPEC), "--endpoint", handle.address,
                           "--project", "p", "--wait", "--no-logs", "--output", "json", "--set",
                           f"base_output_dir={base}", *flags], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=_env())
    return done.returncode, json.loads(done.stdout or "null"), done.stderr


def _jobs_of(handle: EmulatorHandle, key: str) -> list[Any]:
    return [job for job in handle.jobs() if job.labels.get("vxtrain_idempotency_key") == key]


def test_a_preempted_submit_recovers_to_the_uninterrupted_weights_and_tells_the_hooks(
        emulator: EmulatorHandle, uninterrupted: str, tmp_path: Path) -> None:
    """A live hook gets the run's events; a dead one beside it is a warning per event and
    changes nothing else (exit 0, the same result and weights as with no hook at all)."""
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{sock.getsockname()[1]}/hooks/secret-token"
    with webhook() as hook:
        code, view, err = _submit(emulator, tmp_path, "--notify", dead, "--notify", hook.url)
    assert code == 0, err[-3000:]
    assert (view["state"], view["recoveries"]) == ("JOB_STATE_SUCCEEDED", 1)
    assert [(a["attempt"], a["outcome"]) for a in view["attempts"]] == [(0, "preempted"), (1, "succeeded")]
    jobs = sorted(_jobs_of(emulator, view["idempotency_key"]), key=lambda job: job.labels["vxtrain_attempt"])
    assert [job.labels["vxtrain_attempt"] for job in jobs] == ["0", "1"]
    assert [job.name for job in jobs] == [a["name"] for a in view["attempts"]]
    lost = jobs[0]
    assert (lost.error.code, bool(lost.start_time)) == (8, True)  # it started, then lost its machines
    # The second job got VXTRAIN_ATTEMPT=1 and resumed from the latest checkpoint the first
    # put in place (at least that one: a save can be cut off between its rename and its
    # saves.log line). On a loaded host the first may lose its machines before its trainer got
    # past importing torch, and so wrote none: then it starts from 0 (the kill test above
    # proves a mid-run resume whatever the timing).
    starts = _starts(tmp_path)
    assert [s["attempt"] for s in starts] in (["0", "1"], ["1"]), starts  # attempt 0 may die before its line
    saved = [int(s["step"]) for s in _starts(tmp_path, "saves.log") if s["attempt"] == "0"]
    resumed = int(starts[-1]["resumed_at"])
    assert resumed >= max(saved, default=0) and resumed % 5 == 0, (saved, starts)
    assert _digest(tmp_path) == uninterrupted  # bit for bit
    bodies = hook.bodies()
    assert _in_order([body["event"] for body in bodies], ["started", "recovering", "succeeded"]), bodies
    assert (bodies[-1]["event"], bodies[-1]["state"], bodies[-1]["attempt"], bodies[-1]["job"]) == (
        "succeeded", "JOB_STATE_SUCCEEDED", 1, view["name"])
    assert all(isinstance(body["text"], str) and "\n" not in body["text"] for body in bodies)
    warnings = [line for line in err.splitlines() if "notification to http://127.0.0.1:" in line]
    assert len(warnings) == len(bodies)  # one per event the live hook got: none lost, none doubled
    assert "secret-token" not in err  # a hook's path is its secret


def _in_order(events: list[str], wanted: list[str]) -> bool:
    """Whether ``wanted`` appears in ``events`` in that order (others may come between)."""
    rest = iter(events)
    return all(any(event == w for event in rest) for w in wanted)
