"""Exactly once under concurrency (issue 27): many `vxtrain submit`s with one key, started
together against one emulator with injected create faults, end with one live job per key,
and every one of them reports that job.

Real processes (`python -m vxtrain submit … -o json`) against a real `vxtrain emulator`
process: 10 keys × 4 submits, bounded in time, every process stopped however the test ends.
"""
from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from vxtrain import api as vx
from vxtrain import errors
from vxtrain import submission as api
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.emulator.faults import LATE_COMMIT_SECONDS
from vxtrain.backends.emulator.stockouts import Shortage
from vxtrain.model import ATTEMPT_LABEL
from vxtrain.submission.create import Request
from vxtrain.submission.lease import lease_path
from vxtrain.submission.names import LABEL_KEY, split_name
from vxtrain.submission.views import JobView
from vxtrain.submission.retry import Backoff
from tests.submission.helpers import heard, saying, session, submit_job
from vxtrain.vocab.kinds import CUSTOM, JobState
from tests.packaging.conftest import bucket, gcs, gcs_server_url  # noqa: F401 - fixtures (fake-gcs-server)
from tests.processes import stop
from tests.backends.emulator.test_emulator_cli import emulator
from tests.submission.test_ladder import REGIONS, listed, outcomes, region_of
from tests.submission.test_ladder import spec as ladder_spec

ROOT = Path(__file__).resolve().parents[2]
PROJECT, REGION = "p", "us-central1"
CANCELLED = ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
FAULTS = ("create:deadline-after-commit:5", "create:unavailable-before-commit:5", "create:deadline-commit-late:3")
KEYS, PER_KEY = 10, 4
#: The whole crowd's bound: 40 interpreters importing the Google clients on a shared 2-core host.
BOUND_S = 90.0


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def spec(tmp_path: Path) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text("display_name: crowd\nchief:\n  machine_type: n1-standard-4\n"
                    "  image: us-docker.pkg.dev/p/r/train:1\n  command: [python, -c, 'print(1)']\n")
    return path


def crowd(address: str, job: Path, *extra: str, bound: float = BOUND_S) -> list[tuple[str, int, Any, str]]:
    """KEYS × PER_KEY submits started together, all ended within ``bound`` seconds; (key, exit
    code, JSON document, stderr) of each."""
    procs: list[tuple[str, subprocess.Popen[str]]] = []
    try:
        for n in range(KEYS * PER_KEY):
            key = f"k{n % KEYS}"
            argv = [sys.executable, "-m", "vxtrain", "submit", str(job), "--endpoint", address,
                    "--project", PROJECT, "--region", REGION, "--idempotency-key", key, "-o", "json", *extra]
            procs.append((key, subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                                text=True, start_new_session=True, env=_env())))
        deadline = time.monotonic() + bound
        results = []
        for key, proc in procs:
            out, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
            results.append((key, proc.returncode, json.loads(out) if out.strip() else None, err))
        return results
    finally:
        for _, proc in procs:
            stop(proc, signal.SIGKILL, timeout=5)


def jobs_of(address: str, key: str) -> list[dict[str, Any]]:
    with session(address) as s:
        return [v.to_json() for v in s.jobs(PROJECT, REGION, f'labels.{LABEL_KEY}="{api.label_value(key)}"')]


@pytest.mark.slow
def test_forty_submits_over_ten_keys_under_create_faults_leave_one_live_job_per_key(tmp_path: Path) -> None:
    flags = [f"--fault={fault}" for fault in FAULTS]
    with emulator("--simulate", "40", *flags) as address:
        started = time.monotonic()
        results = crowd(address, spec(tmp_path))
        assert time.monotonic() - started < BOUND_S
        time.sleep(LATE_COMMIT_SECONDS + 0.5)  # anything still to commit has committed
        cancelled = 0
        for n in range(KEYS):
            key = f"k{n}"
            mine = [r for r in results if r[0] == key]
            assert all(code == 0 for _, code, _, _ in mine), [(code, err[-2000:]) for _, code, _, err in mine]
            names = {doc["name"] for _, _, doc, _ in mine}
            live = [j["name"] for j in jobs_of(address, key) if j["state"] not in CANCELLED]
            assert len(names) == 1 and live == list(names), (key, names, live)
            reported = [name for _, _, doc, _ in mine for name in doc["duplicates_cancelled"]]
            # Every cancelled job of the key is reported by a process that cancelled it (two
            # racers may both ask: a second cancel of a CANCELLING job is no error).
            assert set(reported) == {j["name"] for j in jobs_of(address, key) if j["state"] in CANCELLED}
            cancelled += len(set(reported))
        assert cancelled > 0  # the crowd did race: duplicates were made, and cancelled


#: A replica that exits 33 on attempt 0 (recovery.on_exit_codes lists it) and succeeds on attempt 1.
EXITS_33_FIRST = ("import os, sys, time; time.sleep(1.5); "
                  "sys.exit(33 if os.environ['VXTRAIN_ATTEMPT'] == '0' else 0)")


def attempt_jobs(address: str, key: str, attempt: int) -> list[dict[str, Any]]:
    with session(address) as s:
        return [v.to_json() for v in s.jobs(PROJECT, REGION, f'labels.{LABEL_KEY}="{api.label_value(key)}" AND '
                                                                f'labels.{ATTEMPT_LABEL}="{attempt}"')]


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


@pytest.mark.slow
def test_forty_watchers_under_create_faults_make_one_live_job_per_attempt(tmp_path: Path) -> None:
    """Recovery's promise per attempt: 40 `submit --wait` watchers of a spec with `recovery:`
    (10 keys × 4, started together, create faults injected) leave, per key, one live job for
    attempt 0 and one for attempt 1, the second created only after the first ended (its
    cancelled duplicates too), and all four watchers report the same last job."""
    job = tmp_path / "job.yaml"
    job.write_text(json.dumps({
        "display_name": "crowd", "base_output_dir": str(tmp_path / "out"),
        "chief": {"machine_type": "n1-standard-4", "image": "us-docker.pkg.dev/p/r/train:1",
                  "command": [sys.executable, "-c", EXITS_33_FIRST]},
        "recovery": {"max_recoveries": 2, "on_exit_codes": [33]}}))
    with emulator(*[f"--fault={fault}" for fault in FAULTS]) as address:
        results = crowd(address, job, "--wait", "--no-logs", bound=2 * BOUND_S)
        time.sleep(LATE_COMMIT_SECONDS + 0.5)  # anything still to commit has committed
        for n in range(KEYS):
            key = f"k{n}"
            mine = [r for r in results if r[0] == key]
            assert all(code == 0 for _, code, _, _ in mine), [(code, err[-2000:]) for _, code, _, err in mine]
            first, second, third = (attempt_jobs(address, key, a) for a in range(3))
            assert len(first) + len(second) == len(jobs_of(address, key)) and third == []
            [lost] = [j for j in first if j["state"] not in CANCELLED]
            [last] = [j for j in second if j["state"] not in CANCELLED]
            assert lost["state"] == "JOB_STATE_FAILED" and last["state"] == "JOB_STATE_SUCCEEDED"
            assert {doc["name"] for _, _, doc, _ in mine} == {last["name"]}
            assert all(_time(lost["end_time"]) <= _time(j["create_time"]) for j in second), key


# --- with a bucket: the lease ---------------------------------------------------------------

def lease_at(key: str) -> str:
    """Where attempt 0's lease of ``key`` is."""
    return lease_path(Request({}, f"projects/{PROJECT}/locations/{REGION}", key))


def lease_of(gcs: Any, bucket: str, key: str) -> dict[str, Any]:
    blob = gcs.bucket(bucket).get_blob(lease_at(key))
    assert blob is not None, key
    loaded: dict[str, Any] = json.loads(blob.download_as_bytes())
    return loaded


@pytest.mark.slow
def test_with_a_bucket_forty_submits_over_ten_keys_create_exactly_one_job_per_key(
        tmp_path: Path, gcs: Any, bucket: str) -> None:
    flags = [f"--fault={fault}" for fault in FAULTS]
    with emulator("--simulate", "40", *flags) as address:
        results = crowd(address, spec(tmp_path), "--staging-bucket", f"gs://{bucket}/some/prefix")
        time.sleep(LATE_COMMIT_SECONDS + 0.5)  # anything still to commit has committed
        for n in range(KEYS):
            key = f"k{n}"
            mine = [r for r in results if r[0] == key]
            assert all(code == 0 for _, code, _, _ in mine), [(code, err[-2000:]) for _, code, _, err in mine]
            names = {doc["name"] for _, _, doc, _ in mine}
            made = [j["name"] for j in jobs_of(address, key)]
            assert len(names) == 1 and made == list(names), (key, names, made)  # one created, none cancelled
            assert all(doc["duplicates_cancelled"] == [] for _, _, doc, _ in mine)
            assert lease_of(gcs, bucket, key)["name"] == made[0]


@pytest.fixture
def local() -> Iterator[EmulatorHandle]:
    handle = start_emulator(simulate_seconds=5, environ={}, out=io.StringIO())
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def job() -> dict[str, Any]:
    return {"displayName": "leased", "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/train:1", "command": ["true"]}}]}}


#: Fast retries, and a lease that expires after 1 s without a job's name.
SHORT_LEASE = Backoff(initial=0.02, maximum=0.2, deadline=15.0, commit_grace=4.0, lease=1.0)


@pytest.mark.slow
def test_a_lease_whose_holder_died_is_taken_over_after_it_expired(local: EmulatorHandle, gcs: Any,
                                                                  bucket: str) -> None:
    """A lease that names no job (its holder died before creating) is taken over once it
    has been unchanged for the lease's time, the key listed empty; one job is created."""
    path = lease_at("dead-1")
    gcs.bucket(bucket).blob(path).upload_from_string(json.dumps({"holder": "gone", "name": None}),
                                                     if_generation_match=0)
    said: list[str] = []
    started = time.monotonic()
    with heard(said.append):
        view = submit_job(local.address, job(), key="dead-1", retry=SHORT_LEASE, bucket=f"gs://{bucket}")
    assert time.monotonic() - started >= 1.0  # it waited for the lease to expire
    assert any("expired and no job carries" in line for line in said), said
    assert [j.name for j in local.jobs()] == [view["name"]] and not view["adopted"]
    assert lease_of(gcs, bucket, "dead-1")["name"] == view["name"]


def test_a_holder_whose_create_fails_releases_the_lease(local: EmulatorHandle, gcs: Any, bucket: str) -> None:
    """A create refused for good deletes the lease: the next submit takes it at once."""
    local.add_fault("create:permission:1")
    with pytest.raises(errors.PermissionError_):
        submit_job(local.address, job(), key="fail-1", retry=SHORT_LEASE, bucket=f"gs://{bucket}")
    path = lease_at("fail-1")
    assert gcs.bucket(bucket).get_blob(path) is None
    view = submit_job(local.address, job(), key="fail-1", retry=SHORT_LEASE, bucket=f"gs://{bucket}")
    assert [j.name for j in local.jobs()] == [view["name"]]


def test_a_missing_bucket_leaves_the_label_protocol(local: EmulatorHandle, gcs: Any) -> None:
    """A lease that cannot be taken (no such bucket) is said, and the submit goes on without it."""
    said: list[str] = []
    with heard(said.append):
        view = submit_job(local.address, job(), key="nob-1", retry=SHORT_LEASE, bucket="gs://no-such-bucket-vxtrain")
    assert [j.name for j in local.jobs()] == [view["name"]]
    assert any("label protocol alone" in line for line in said), said



@pytest.mark.slow
def test_unreachable_storage_leaves_the_label_protocol_soon(local: EmulatorHandle,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Storage that refuses connections: its retries are bounded by the backoff's deadline
    (not the library's 120 s), then a warning, and the submit goes on without the lease."""
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")
    said: list[str] = []
    quick = Backoff(initial=0.02, maximum=0.2, deadline=3.0, commit_grace=4.0)
    started = time.monotonic()
    with heard(said.append):
        view = submit_job(local.address, job(), key="unr-1", retry=quick, bucket="gs://any-bucket")
    assert time.monotonic() - started < 20
    assert [j.name for j in local.jobs()] == [view["name"]]
    assert any("cannot be used" in line and "label protocol alone" in line for line in said), said

# --- the ladder's own cases ---------------------------------------------------------------------

@pytest.fixture
def ladder_emulator() -> Iterator[EmulatorHandle]:
    """Jobs run 0.4 s (simulated); a ``pending`` region keeps them PENDING until cancelled."""
    handle = start_emulator(simulate_seconds=0.4, environ={}, out=io.StringIO())
    try:
        yield handle
    finally:
        handle.stop(grace=None)


@pytest.mark.slow
def test_a_followed_job_cancelled_by_hand_before_it_ran_is_cancelled_not_capacity(
        ladder_emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Another hand cancels the rung-0 job this ladder follows while it waits for machines
    (``vxtrain cancel``, the console): that is a decision to stop, not capacity. The life ends
    ``cancelled`` (exit 3, no fallback hint) and no other rung is created; a racer that left it
    for capacity (``--max-pending``) is told by the time it waited (the three ladders below)."""
    ladder_emulator.stockouts.set(REGIONS[0], Shortage.pending)
    cancelled: list[str] = []

    def progress(view: JobView, elapsed: float) -> None:
        if not cancelled and split_name(view.name)[1] == REGIONS[0] and view.state is JobState.PENDING:
            cancelled.append(view.name)
            ladder_emulator.emulator.cancel(CUSTOM, view.name)

    with pytest.raises(errors.JobFailedError) as failed:
        vx.submit(ladder_spec(tmp_path), endpoint=ladder_emulator.address, wait=True, progress=progress)
    doc = failed.value.job
    assert cancelled and outcomes(doc) == [(0, "cancelled")] and doc["name"] == cancelled[0]
    assert "JOB_STATE_CANCELLED" in str(failed.value) and "fallback" not in str(failed.value)
    assert [j["name"] for j in listed(ladder_emulator)] == cancelled


def _climb_together(count: int, path: Path, address: str, key: str) -> list[dict[str, Any]]:
    """``count`` ladder submits of ``path`` with one key, started together (threads behind a
    barrier), each following its rung until RUNNING and moving on after 0.5 s pending."""
    barrier = threading.Barrier(count)

    def climb(_: int) -> dict[str, Any]:
        barrier.wait()
        return vx.submit(path, endpoint=address, idempotency_key=key, until_running=True, max_pending=0.5)

    with ThreadPoolExecutor(count) as pool:
        return list(pool.map(climb, range(count)))


@pytest.mark.slow
def test_three_ladders_with_one_key_end_on_one_job(ladder_emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Rungs 0 and 1 never get machines; three submits with one key climb together, each
    cancelling (or seeing cancelled) the rung it waited on too long: all three end on the
    one rung-2 job, and no other job is left alive."""
    for region in REGIONS[:2]:
        ladder_emulator.stockouts.set(region, Shortage.pending)
    views = _climb_together(3, ladder_spec(tmp_path), ladder_emulator.address, "ladder-3")
    names = {v["name"] for v in views}
    assert len(names) == 1 and region_of(views[0]) == REGIONS[2], views
    assert all(v["attempts"][-1]["rung"] == 2 for v in views)
    alive = [j["name"] for j in listed(ladder_emulator) if j["state"] not in CANCELLED]
    assert alive == list(names)


@pytest.mark.slow
def test_ctrl_c_mid_ladder_without_a_key_says_the_key_and_cancels_the_pending_job(tmp_path: Path) -> None:
    """Ctrl-C while rung 0 waits for machines: the generated key is printed, the pending job
    cancelled; resuming with that key goes on from rung 1 and creates nothing twice."""
    path = ladder_spec(tmp_path)
    with emulator("--simulate", "1", "--pending", REGIONS[0]) as address:
        argv = [sys.executable, "-m", "vxtrain", "submit", str(path), "--endpoint", address, "--until-running",
                "-o", "json"]
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True, env=_env())
        try:
            deadline = time.monotonic() + 30
            while not session(address).jobs("p", REGIONS[0]):
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.1)
            time.sleep(0.3)  # following it now
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=30)
        finally:
            stop(proc, signal.SIGKILL, timeout=5)
        assert proc.returncode == 130, err
        found = re.search(r"resume this ladder with --idempotency-key (\S+)", err)
        assert found is not None, err
        known = json.loads(out)  # issue 34: stdout is still one document, with the state and the resume line
        assert known["interrupted"] is True and known["state"] in ("JOB_STATE_PENDING", "JOB_STATE_QUEUED"), known
        assert known["resume"].endswith(f"--idempotency-key {found.group(1)} --until-running"), known
        first = [v.to_json() for v in session(address).jobs("p", REGIONS[0])]
        assert [j["state"] for j in first] in (["JOB_STATE_CANCELLED"], ["JOB_STATE_CANCELLING"]), first
        resumed = subprocess.run([*argv, "--idempotency-key", found.group(1)], cwd=ROOT, capture_output=True,
                                 text=True, timeout=60, env=_env())
        assert resumed.returncode == 0, resumed.stderr
        doc = json.loads(resumed.stdout)
        assert outcomes(doc) == [(0, "pending-timeout"), (1, "started")]
        assert len(session(address).jobs("p", REGIONS[0])) == 1  # none made twice


@pytest.mark.slow
@pytest.mark.parametrize("round_", range(3))
def test_a_submit_that_adopts_after_a_timeout_cancels_its_own_late_commit(ladder_emulator: EmulatorHandle,
                                                                         round_: int) -> None:
    """Two submits with one key; one's create times out and commits 2 s later, after it has
    adopted the other's job: it lists until its grace has passed and cancels its own late job."""
    ladder_emulator.add_fault("create:deadline-commit-late:1")
    key = f"late-pair-{round_}"
    barrier = threading.Barrier(2)

    def one(_: int) -> dict[str, Any]:
        barrier.wait()
        return submit_job(ladder_emulator.address, job(), key=key, retry=SHORT_LEASE)

    with ThreadPoolExecutor(2) as pool:
        views = list(pool.map(one, range(2)))
    time.sleep(LATE_COMMIT_SECONDS + 0.5)
    assert views[0]["name"] == views[1]["name"]
    alive = [j["name"] for j in jobs_of(ladder_emulator.address, key) if j["state"] not in CANCELLED]
    assert alive == [views[0]["name"]]


@pytest.mark.slow
def test_two_ladders_with_a_late_commit_leave_no_rung_alive_behind(ladder_emulator: EmulatorHandle,
                                                                   tmp_path: Path) -> None:
    """Inside a ladder the same: rung 0 never gets machines, one ladder's rung-0 create commits
    late after it adopted the other's; no rung-0 job is left PENDING while rung 1 runs."""
    ladder_emulator.stockouts.set(REGIONS[0], Shortage.pending)
    ladder_emulator.add_fault("create:deadline-commit-late:1")
    views = _climb_together(2, ladder_spec(tmp_path), ladder_emulator.address, "ladder-late")
    time.sleep(LATE_COMMIT_SECONDS + 0.5)
    assert views[0]["name"] == views[1]["name"] and region_of(views[0]) == REGIONS[1]
    alive = [j["name"] for j in listed(ladder_emulator) if j["state"] not in CANCELLED]
    assert alive == [views[0]["name"]]
