"""Submission reliability against the emulator on loopback, with injected faults:
every retry is visible on stderr, a host that does not resolve ends soon with
exit 4 naming it, a create that commits after its DEADLINE_EXCEEDED never makes
a second job, two submits with one key end with one job, and a chaos run of
submits under random faults ends each with one job per key or a clear error and none.
"""
from __future__ import annotations

import io
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from vxtrain import errors
from vxtrain import submission as api
from vxtrain.submission.names import LABEL_KEY
from vxtrain.submission.retry import VERTEX_RETRY, Backoff, retrying
from tests.submission.helpers import heard, submit_job
from vxtrain.backends import open_backend
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.emulator.faults import LATE_COMMIT_SECONDS
from vxtrain.vocab.kinds import CUSTOM

ROOT = Path(__file__).resolve().parents[2]
PROJECT, REGION = "p", "us-central1"
#: Fast retries, and the emulator's grace for a create that timed out.
QUICK = Backoff(initial=0.02, maximum=0.2, deadline=15.0, unresolved=2.0, commit_grace=4.0)
CANCELLED = ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")


@pytest.fixture
def emulator() -> Iterator[EmulatorHandle]:
    handle = start_emulator(simulate_seconds=0.3, environ={}, out=io.StringIO())
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def job(name: str = "reliable") -> dict[str, Any]:
    return {"displayName": name, "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/train:1", "command": ["true"]}}]}}


def with_key(handle: EmulatorHandle, key: str) -> list[Any]:
    """Stored jobs labelled with ``key``."""
    value = api.label_value(key)
    return [j for j in handle.jobs() if j.labels.get(LABEL_KEY) == value]


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vxtrain", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT), **env})


# --- every retry is visible -----------------------------------------------------------

@pytest.mark.slow
def test_status_reports_each_retry_on_stderr(emulator: EmulatorHandle) -> None:
    name = submit_job(emulator.address, job())["name"]
    emulator.add_fault("get:unavailable:2")
    done = _cli("status", name, "--endpoint", emulator.address, "--output", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"] == name
    lines = [line for line in done.stderr.splitlines() if "retrying in" in line]
    assert [line.split(": attempt ")[1].split(" failed")[0] for line in lines] == ["1", "2"]
    assert all(f"vxtrain: get {name}: attempt" in line and "ServiceUnavailable" in line for line in lines)


@pytest.mark.slow
def test_submit_reports_the_retry_of_a_create(emulator: EmulatorHandle, tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(json.dumps({"display_name": "visible", "chief": {
        "machine_type": "n1-standard-4", "image": "gcr.io/p/train:1", "command": ["true"]}}))
    emulator.add_fault("create:unavailable-before-commit:1")
    done = _cli("submit", str(spec), "--endpoint", emulator.address, "--project", PROJECT,
                "--region", REGION)
    assert done.returncode == 0, done.stderr
    assert "vxtrain: create custom job: attempt 1 failed: " in done.stderr
    assert len(emulator.jobs()) == 1


@pytest.mark.slow
def test_a_host_that_does_not_resolve_ends_with_exit_4_naming_it() -> None:
    # Names under .invalid never resolve (RFC 6761); gRPC is told to resolve it
    # itself, not through the test suite's dead-end proxy.
    started = time.monotonic()
    done = _cli("status", "projects/p/locations/us-central1/customJobs/1",
                "--endpoint", "no-such-host.invalid:443", **_resolve_directly("no-such-host.invalid"))
    assert done.returncode == 4, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("vxtrain: error: cannot reach no-such-host.invalid: the host name does not resolve")
    assert "attempt 1 failed" in done.stderr
    assert time.monotonic() - started < 30  # an emulator endpoint: 5 s of retries, plus start-up


def _resolve_directly(host: str) -> dict[str, str]:
    """gRPC resolves ``host`` itself rather than through the suite's dead-end proxy."""
    return {"no_grpc_proxy": ",".join(filter(None, [os.environ.get("no_grpc_proxy"), host]))}


@pytest.mark.slow
def test_the_unresolved_limit_is_the_backoffs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python API: the limit comes from the Backoff (Vertex's is 30 s)."""
    assert VERTEX_RETRY.unresolved == 30.0
    for name, value in _resolve_directly("no-such-host.invalid").items():
        monkeypatch.setenv(name, value)
    said: list[str] = []
    started = time.monotonic()
    with pytest.raises(errors.UnavailableError, match="cannot reach no-such-host.invalid"):
        with open_backend(endpoint="no-such-host.invalid:443") as backend:
            with heard(said.append):
                retrying(lambda: backend.get(CUSTOM, "projects/p/locations/l/customJobs/1"), QUICK, "get")
    assert time.monotonic() - started < QUICK.unresolved + 3
    assert said and all("retrying in" in s for s in said)


# --- the exactly-once window ------------------------------------------------------------

@pytest.mark.slow
def test_a_create_that_commits_after_its_deadline_makes_one_job(emulator: EmulatorHandle,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    """The grace is reported on the ``vxtrain.submission`` logger."""
    emulator.add_fault("create:deadline-commit-late:1")
    view = submit_job(emulator.address, job(), key="late-1", retry=None)
    time.sleep(LATE_COMMIT_SECONDS + 0.5)  # anything still to commit has committed
    stored = with_key(emulator, "late-1")
    assert [j.name for j in stored] == [view["name"]] and view["adopted"]
    assert any("a create that timed out can still commit" in r.getMessage()
               for r in caplog.records if r.name == "vxtrain.submission" and r.levelname == "WARNING")


@pytest.mark.slow
def test_without_the_grace_the_late_commit_makes_a_second_job(emulator: EmulatorHandle) -> None:
    """The window the grace closes (one empty list taken as proof): shown, so the test above means something."""
    emulator.add_fault("create:deadline-commit-late:1")
    no_grace = Backoff(initial=0.02, maximum=0.2, deadline=15.0, commit_grace=0.0)
    submit_job(emulator.address, job(), key="late-2", retry=no_grace)
    time.sleep(LATE_COMMIT_SECONDS + 0.5)
    assert len(with_key(emulator, "late-2")) == 2


def test_two_submits_with_one_key_at_once_keep_one_job(emulator: EmulatorHandle) -> None:
    """Both list nothing and both create; the younger job is cancelled and both adopt the older."""
    raced: list[bool] = []
    # Up to 10 rounds: on a loaded machine one thread may list, create and commit
    # before the other lists at all (no race that round); every round checks the outcome.
    for round_ in range(10):
        if round_ >= 3 and any(raced):
            break
        key = f"race-{round_}"
        barrier = threading.Barrier(2)

        def submit_now() -> dict[str, Any]:
            barrier.wait()
            return submit_job(emulator.address, job(), key=key, retry=QUICK)  # noqa: B023

        with ThreadPoolExecutor(2) as pool:
            views = list(pool.map(lambda _: submit_now(), range(2)))
        assert views[0]["name"] == views[1]["name"]
        live = [j for j in with_key(emulator, key) if j.state.name not in CANCELLED]
        assert [j.name for j in live] == [views[0]["name"]]
        raced.append(len(with_key(emulator, key)) == 2)
    assert any(raced)  # both did create at least once: the younger was cancelled


# --- chaos -------------------------------------------------------------------------------

#: Faults a Job API can produce, as the emulator injects them; permanent ones end a submit.
CHAOS_FAULTS = ["create:unavailable-before-commit", "create:deadline-after-commit",
                "create:deadline-commit-late", "create:internal", "create:quota", "create:permission",
                "list:unavailable", "list:internal", "create:unavailable-before-commit"]


@pytest.mark.slow
def test_chaos_each_submit_ends_with_one_job_or_a_clear_error_and_none(emulator: EmulatorHandle) -> None:
    rng = random.Random(11)
    for fault in rng.choices(CHAOS_FAULTS, k=24):
        emulator.add_fault(f"{fault}:1")
    keys = [f"chaos-{i}" for i in range(20)]

    def one(key: str) -> dict[str, Any] | errors.ApiError:
        try:
            return submit_job(emulator.address, job(key), key=key, retry=QUICK)
        except errors.ApiError as exc:
            return exc

    with ThreadPoolExecutor(4) as pool:
        outcomes = dict(zip(keys, pool.map(one, keys)))
    time.sleep(LATE_COMMIT_SECONDS + 0.5)  # a late commit would show up by now
    failed = 0
    for key, outcome in outcomes.items():
        stored = [j for j in with_key(emulator, key) if j.state.name not in CANCELLED]
        if isinstance(outcome, errors.ApiError):
            failed += 1
            assert stored == [], f"{key}: {outcome} yet {len(stored)} job(s)"
            assert isinstance(outcome, (errors.QuotaError, errors.PermissionError_)), outcome
            assert str(outcome)
        else:
            assert [j.name for j in stored] == [outcome["name"]], key
    assert 0 < failed < len(keys)  # the faults did bite, and not every submit failed


def test_an_endpoint_with_nothing_listening_is_exit_4_at_once(tmp_path: Path) -> None:
    """Issue 34: a refused connection sent nothing, so there is nothing to retry or adopt:
    exit 4 at once, naming the endpoint and how to start an emulator there; never "may have
    been created" after a minute of retries."""
    with socket.socket() as sock:  # a port nothing listens on (bound, then closed)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    spec = tmp_path / "job.yaml"
    spec.write_text(json.dumps({"display_name": "nobody", "chief": {
        "machine_type": "n1-standard-4", "image": "gcr.io/p/train:1", "command": ["true"]}}))
    started = time.monotonic()
    done = _cli("submit", str(spec), "--endpoint", f"127.0.0.1:{port}", "--project", PROJECT, "--region", REGION)
    assert done.returncode == 4, done.stderr
    assert time.monotonic() - started < 15  # start-up alone: no retries
    assert f"nothing listens at 127.0.0.1:{port}" in done.stderr and f"vxtrain emulator --port {port}" in done.stderr
    assert "may have been created" not in done.stderr and "retrying" not in done.stderr
