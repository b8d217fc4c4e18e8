"""Recovery end to end: ``vxtrain submit --wait`` (in process, and once as a process that is
killed) against the emulator through the real aiplatform client. Jobs lose their machines
through the emulator's ``--preempt`` or a replica exiting with a listed code; each test
reads back the jobs that exist. Nothing here mocks vxtrain.
"""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.hooks import webhook
from tests.incli import run
from tests.polling import wait_for
from vxtrain import api as vx
from vxtrain import errors, submission
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.model import ATTEMPT_LABEL
from vxtrain.vocab.kinds import CUSTOM
from vxtrain.planning.cost import job_per_hour
from vxtrain.submission.decide import Outcome, attempt_job, capacity_outcome, lost_outcome
from vxtrain.submission.views import job_view
from tests.submission.helpers import saying

PROJECT, REGION, EAST = "p", "us-central1", "us-east1"
IMAGE = "us-docker.pkg.dev/p/r/train:1"
#: A replica that exits 33 on the first attempt and succeeds on the next (it reads VXTRAIN_ATTEMPT).
EXITS_33_FIRST = "import os, sys; sys.exit(33 if os.environ['VXTRAIN_ATTEMPT'] == '0' else 0)"


def emulator(**kwargs: Any) -> EmulatorHandle:
    return start_emulator(environ={}, out=io.StringIO(), **kwargs)


@pytest.fixture
def preempting() -> Iterator[EmulatorHandle]:
    """Jobs succeed about a second after create (simulated); the first one in us-central1
    loses its machines after 0.15 s RUNNING."""
    handle = emulator(simulate_seconds=0.6, preempt=[f"{REGION}:0.15:1"])
    try:
        yield handle
    finally:
        handle.stop(grace=None)


@pytest.fixture
def running() -> Iterator[EmulatorHandle]:
    """Jobs run their command on this host."""
    handle = emulator()
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def spec(tmp_path: Path, *, recovery: dict[str, Any] | None = None, command: list[str] | None = None,
         **extra: Any) -> Path:
    text: dict[str, Any] = {"display_name": "recover", "project": PROJECT, "region": REGION,
                            "base_output_dir": "gs://bucket/run-1",
                            "chief": {"machine_type": "n1-standard-4", "image": IMAGE,
                                      "command": command or ["true"]}, **extra}
    if recovery is not None:
        text["recovery"] = recovery
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(text))
    return path


def submit(capsys: pytest.CaptureFixture[str], path: Path, handle: EmulatorHandle,
           *flags: str) -> tuple[int, Any, str]:
    return run(capsys, "submit", str(path), "--endpoint", handle.address, "-o", "json", "--wait", "--no-logs",
               *flags)


def jobs(handle: EmulatorHandle, *regions: str) -> list[dict[str, Any]]:
    """The CustomJobs of the regions as the Job API lists them, oldest first, with their raw protos."""
    with submission.Session(endpoint=handle.address) as session:
        views = [v.to_json() for region in regions or (REGION,) for v in session.jobs(PROJECT, region)]
    return sorted(views, key=lambda v: _time(v["create_time"]))


def raw(handle: EmulatorHandle, name: str) -> Any:
    return handle.emulator.job(name)


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def never_overlapping(views: list[dict[str, Any]]) -> None:
    """Each job had ended before the next was created."""
    for before, after in zip(views, views[1:]):
        assert before.get("end_time"), f"{before['name']} never ended"
        assert _time(before["end_time"]) <= _time(after["create_time"]), (before, after)


def outcomes(doc: dict[str, Any]) -> list[tuple[int, int, str]]:
    return [(a["attempt"], a["rung"], a["outcome"]) for a in doc["attempts"]]


def env_of(handle: EmulatorHandle, name: str) -> dict[str, str]:
    pool = raw(handle, name).job_spec.worker_pool_specs[0]
    return {e.name: e.value for e in pool.container_spec.env}


# --- a job that lost its machines gets a new one ---------------------------------------------

@pytest.mark.slow
def test_a_preempted_job_resumes_in_a_new_job(preempting: EmulatorHandle, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = submit(capsys, spec(tmp_path, recovery={"max_recoveries": 2}), preempting,
                            "--idempotency-key", "run-1")
    assert code == 0, err
    assert doc["state"] == "JOB_STATE_SUCCEEDED" and doc["recoveries"] == 1
    assert outcomes(doc) == [(0, 0, "preempted"), (1, 0, "succeeded")]
    listed = jobs(preempting)
    assert [j["name"] for j in listed] == [a["name"] for a in doc["attempts"]] and doc["name"] == listed[1]["name"]
    never_overlapping(listed)
    protos = [raw(preempting, j["name"]) for j in listed]
    assert [p.labels[ATTEMPT_LABEL] for p in protos] == ["0", "1"]
    assert {p.labels["vxtrain_idempotency_key"] for p in protos} == {"run-1"}
    # The same output folder, so AIP_CHECKPOINT_DIR is the same path and the trainer resumes.
    assert {p.job_spec.base_output_directory.output_uri_prefix for p in protos} == {"gs://bucket/run-1"}
    assert [env_of(preempting, j["name"])["VXTRAIN_ATTEMPT"] for j in listed] == ["0", "1"]
    assert "recovery 1 of 2" in err


@pytest.mark.slow
def test_the_cost_is_each_attempts_run_time_at_the_plans_price(preempting: EmulatorHandle, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 1})
    code, doc, err = submit(capsys, path, preempting)
    assert code == 0, err
    plan = run(capsys, "plan", str(path), "-o", "json")[1]["cost"]
    cost = doc["cost"]
    assert cost["currency"] == "USD" and [a["attempt"] for a in cost["attempts"]] == [0, 1]
    for entry, view in zip(cost["attempts"], jobs(preempting)):
        hours = (_time(view["end_time"]) - _time(view["start_time"])).total_seconds() / 3600
        assert entry["per_hour"] == pytest.approx(plan["per_hour"])
        assert entry["hours"] == pytest.approx(hours, abs=1e-6)
        assert entry["usd"] == pytest.approx(hours * plan["per_hour"], rel=1e-3)
    assert cost["estimated"] == pytest.approx(sum(a["usd"] for a in cost["attempts"]))
    text = run(capsys, "submit", str(path), "--endpoint", preempting.address, "--wait", "--no-logs")[1]
    assert "about $" in text and "(list prices × run time" in text


@pytest.mark.slow
def test_an_unknown_price_is_a_null_cost_never_a_guess(preempting: EmulatorHandle, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 1})
    data = json.loads(path.read_text())
    data["chief"]["machine_type"] = "e2-standard-4"  # the catalog has no Vertex AI price for it
    path.write_text(json.dumps(data))
    with webhook() as hook:
        code, doc, err = submit(capsys, path, preempting, "--notify", hook.url)
    assert code == 0, err
    assert doc["cost"]["estimated"] is None
    assert hook.bodies()[-1]["text"].endswith("succeeded after 1 recovery, cost unknown (no list price)")
    assert hook.bodies()[-1]["cost_usd"] is None
    assert [(a["per_hour"], a["usd"]) for a in doc["cost"]["attempts"]] == [(None, None), (None, None)]
    assert all(a["hours"] > 0 for a in doc["cost"]["attempts"])


@pytest.mark.slow
def test_status_and_wait_price_one_job(preempting: EmulatorHandle, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = submit(capsys, spec(tmp_path, recovery={"max_recoveries": 1}), preempting)
    assert code == 0, err
    first, second = (a["name"] for a in doc["attempts"])
    status = run(capsys, "status", first, "--endpoint", preempting.address, "-o", "json")[1]
    assert [(a["attempt"], a["usd"]) for a in status["cost"]["attempts"]] == [(0, doc["cost"]["attempts"][0]["usd"])]
    code, waited, err = run(capsys, "wait", second, "--endpoint", preempting.address, "-o", "json", "--no-logs")
    assert code == 0, err
    assert waited["cost"]["attempts"][0]["attempt"] == 1
    assert waited["cost"]["estimated"] == pytest.approx(doc["cost"]["attempts"][1]["usd"])


@pytest.mark.slow
def test_a_listed_exit_code_is_recovered_and_the_attempt_is_in_the_env(running: EmulatorHandle, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 1, "on_exit_codes": [33]},
                command=[sys.executable, "-c", EXITS_33_FIRST])
    code, doc, err = submit(capsys, path, running)
    assert code == 0, err
    assert outcomes(doc) == [(0, 0, "exit-code"), (1, 0, "succeeded")] and doc["recoveries"] == 1
    never_overlapping(jobs(running))


@pytest.mark.slow
def test_a_failure_of_the_code_is_not_recovered(running: EmulatorHandle, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 3, "on_exit_codes": [33]},
                command=[sys.executable, "-c", "raise SystemExit(1)"])
    with webhook() as hook:
        code, doc, err = submit(capsys, path, running, "--notify", hook.url)
    assert code == 3, err
    assert doc["state"] == "JOB_STATE_FAILED" and outcomes(doc) == [(0, 0, "failed")]
    assert doc["recoveries"] == 0 and len(jobs(running)) == 1
    assert [b["event"] for b in hook.bodies()] == ["started", "failed"]
    assert hook.bodies()[-1]["state"] == "JOB_STATE_FAILED"


@pytest.mark.slow
def test_recoveries_spent_on_lost_machines_is_no_capacity(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    handle = emulator(simulate_seconds=0.6, preempt=[f"{REGION}:0.1"])  # every job loses its machines
    try:
        code, doc, err = submit(capsys, spec(tmp_path, recovery={"max_recoveries": 2}), handle)
        listed = jobs(handle)
        # In text, the error is followed by what the lost attempts cost (as exit 3's job view has it).
        text = run(capsys, "submit", str(spec(tmp_path, recovery={"max_recoveries": 1})), "--endpoint",
                   handle.address, "--wait", "--no-logs")
    finally:
        handle.stop(grace=None)
    assert text[0] == 5 and "vxtrain: recoveries: 1 " in text[2] and "vxtrain: cost: about $" in text[2], text
    assert code == 5, err
    assert doc["error"]["type"] == "NoCapacity" and "max_recoveries (2) are spent" in doc["error"]["message"]
    assert [a["outcome"] for a in doc["attempts"]] == ["preempted"] * 3 and doc["recoveries"] == 2
    assert len(listed) == 3 and len(doc["cost"]["attempts"]) == 3
    never_overlapping(listed)


@pytest.mark.slow
def test_a_job_of_the_key_from_before_recovery_is_attempt_0(running: EmulatorHandle, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """The exit-3 hint invites adding `recovery:` and submitting again with the key: the job the key
    already names (no attempt label) is adopted as attempt 0, never a second live job beside it."""
    command = [sys.executable, "-c", "import os, sys, time; time.sleep(1); "
               "sys.exit(33 if os.environ.get('VXTRAIN_ATTEMPT', '0') == '0' else 0)"]
    code, first, err = run(capsys, "submit", str(spec(tmp_path, command=command)), "--endpoint", running.address,
                           "-o", "json", "--idempotency-key", "before")
    assert code == 0, err
    assert ATTEMPT_LABEL not in raw(running, first["name"]).labels
    path = spec(tmp_path, recovery={"max_recoveries": 1, "on_exit_codes": [33]}, command=command)
    code, doc, err = submit(capsys, path, running, "--idempotency-key", "before")
    assert code == 0, err
    assert outcomes(doc) == [(0, 0, "exit-code"), (1, 0, "succeeded")]
    assert doc["attempts"][0]["name"] == first["name"] and "it is attempt 0" in err
    listed = jobs(running)
    assert len(listed) == 2
    never_overlapping(listed)


@pytest.mark.slow
def test_recoveries_spent_on_exit_codes_is_a_failed_job(running: EmulatorHandle, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 1, "on_exit_codes": [33]},
                command=[sys.executable, "-c", "raise SystemExit(33)"])
    code, doc, err = submit(capsys, path, running)
    assert code == 3, err
    assert [a["outcome"] for a in doc["attempts"]] == ["exit-code", "exit-code"] and doc["recoveries"] == 1


@pytest.mark.slow
def test_without_recovery_a_lost_job_fails_and_says_what_recovery_would_do(
        preempting: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A started job that stocked out is not the ladder's: no move to the fallback rung, exit 3."""
    path = spec(tmp_path, fallback=[{"region": EAST}])
    code, doc, err = submit(capsys, path, preempting)
    assert code == 3, err
    assert outcomes(doc) == [(0, 0, "preempted")]
    assert "`recovery:`" in err and len(jobs(preempting, REGION, EAST)) == 1


# --- strategies --------------------------------------------------------------------------------

@pytest.mark.slow
def test_strategy_next_goes_on_down_the_ladder(preempting: EmulatorHandle, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 2, "strategy": "next"}, fallback=[{"region": EAST}])
    code, doc, err = submit(capsys, path, preempting)
    assert code == 0, err
    assert outcomes(doc) == [(0, 0, "preempted"), (1, 1, "succeeded")]
    never_overlapping(jobs(preempting, REGION, EAST))


@pytest.mark.slow
def test_spot_goes_standard_after_the_preemptions_given(preempting: EmulatorHandle, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 1, "spot_to_standard_after": 1},
                scheduling={"strategy": "SPOT"})
    code, doc, err = submit(capsys, path, preempting)
    assert code == 0, err
    strategies = [raw(preempting, j["name"]).job_spec.scheduling.strategy.name for j in jobs(preempting)]
    assert strategies == ["SPOT", "STANDARD"]
    spot, standard = (a["per_hour"] for a in doc["cost"]["attempts"])
    assert spot < standard  # each attempt priced as it ran: Spot, then on-demand


# --- a watcher that dies ---------------------------------------------------------------------

@pytest.mark.slow
def test_a_killed_watcher_rerun_with_its_key_creates_no_extra_attempt(preempting: EmulatorHandle, tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, recovery={"max_recoveries": 3})
    argv = [sys.executable, "-m", "vxtrain", "submit", str(path), "--endpoint", preempting.address, "--wait",
            "--no-logs", "--idempotency-key", "nightly"]
    env = {**os.environ, **preempting.gcloud_environment()}
    watcher = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        # Killed as soon as it has created attempt 1 (attempt 0 was preempted): no chance to tidy up.
        wait_for(lambda: any(raw(preempting, j["name"]).labels.get(ATTEMPT_LABEL) == "1"
                             for j in jobs(preempting)), 30, "attempt 1 to be created")
    finally:
        watcher.send_signal(signal.SIGKILL)
        watcher.wait(10)
    with webhook() as hook:
        code, doc, err = submit(capsys, path, preempting, "--idempotency-key", "nightly", "--notify", hook.url)
    assert code == 0, err
    assert outcomes(doc) == [(0, 0, "preempted"), (1, 0, "succeeded")] and doc["recoveries"] == 1
    listed = jobs(preempting)
    assert len(listed) == 2 and doc["name"] == listed[1]["name"]
    # The killed watcher announced the recovery; the resumed one walks past it quietly.
    assert "recovering" not in [b["event"] for b in hook.bodies()] and hook.bodies()[-1]["event"] == "succeeded"
    assert "before this watch: going on with attempt 1" in err
    again = submit(capsys, path, preempting, "--idempotency-key", "nightly")
    assert again[0] == 0 and again[1]["name"] == doc["name"] and len(jobs(preempting)) == 2


# --- the judgements, as plain data ------------------------------------------------------------

STARTED = {"startTime": "2026-11-27T08:00:00Z"}


@pytest.mark.parametrize(("view", "lost", "left"), [
    ({"state": "JOB_STATE_FAILED", "error": {"code": 8, "message": "STOCKOUT"}, **STARTED}, Outcome.preempted, None),
    ({"state": "JOB_STATE_FAILED", "error": {"code": 8, "message": "STOCKOUT"}}, None, Outcome.stockout),
    ({"state": "JOB_STATE_FAILED", "error": {"code": 13, "message": "Internal error occurred"}, **STARTED},
     Outcome.internal, None),
    ({"state": "JOB_STATE_FAILED", "error": {"code": 3, "message": "The replica workerpool1-2 exited with a "
                                                                   "non-zero status of 33."}, **STARTED},
     Outcome.exit_code, None),
    ({"state": "JOB_STATE_FAILED", "error": {"code": 3, "message": "The replica workerpool0-0 exited with a "
                                                                   "non-zero status of 1."}, **STARTED}, None, None),
    ({"state": "JOB_STATE_CANCELLED", "error": {"code": 1}, **STARTED}, None, None),
    ({"state": "JOB_STATE_SUCCEEDED", **STARTED}, None, None),
])
def test_lost_machines_are_told_from_the_code_and_from_no_start(view: dict[str, Any], lost: Outcome | None,
                                                                left: Outcome | None) -> None:
    typed = job_view({"name": "j", **view})
    assert lost_outcome(typed, {33}) is lost
    assert (None if typed.start_time else capacity_outcome(typed)) is left


def test_an_attempt_sets_its_number_in_every_pool_and_standard_on_request() -> None:
    job: dict[str, Any] = {"displayName": "j", "jobSpec": {"scheduling": {"strategy": "SPOT"}, "workerPoolSpecs": [
        {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
         "containerSpec": {"imageUri": IMAGE, "env": [{"name": "VXTRAIN_ATTEMPT", "value": "9"}]}},
        {},
        {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "2",
         "pythonPackageSpec": {"executorImageUri": IMAGE, "packageUris": ["gs://b/p.tar.gz"],
                               "pythonModule": "t.m"}}]}}
    out = attempt_job(job, 2, standard=True)
    pools = out["jobSpec"]["workerPoolSpecs"]
    assert pools[0]["containerSpec"]["env"] == [{"name": "VXTRAIN_ATTEMPT", "value": "2"}]
    assert pools[2]["pythonPackageSpec"]["env"] == [{"name": "VXTRAIN_ATTEMPT", "value": "2"}] and pools[1] == {}
    assert out["jobSpec"]["scheduling"] == {"strategy": "STANDARD"}
    assert job["jobSpec"]["scheduling"] == {"strategy": "SPOT"}  # the rung's own job is left as it was
    one = job_per_hour({"jobSpec": {"workerPoolSpecs": [job["jobSpec"]["workerPoolSpecs"][0]]}}, REGION)
    assert one is not None and job_per_hour(out, REGION) == pytest.approx(3 * one)  # 3 on-demand n1-standard-4


# --- notifications -------------------------------------------------------------------------

@pytest.mark.slow
def test_each_event_is_posted_to_the_hooks(preempting: EmulatorHandle, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    with webhook() as spec_hook, webhook() as flag_hook:
        path = spec(tmp_path, recovery={"max_recoveries": 1}, notify=[spec_hook.url])
        code, doc, err = submit(capsys, path, preempting, "--notify", flag_hook.url)
        assert code == 0, err
        first, second = (a["name"] for a in doc["attempts"])
        for hook in (spec_hook, flag_hook):
            bodies = hook.bodies()
            assert [(b["event"], b["job"], b["attempt"]) for b in bodies] == [
                ("started", first, 0), ("recovering", first, 0), ("started", second, 1), ("succeeded", second, 1)]
            assert bodies[-1]["state"] == "JOB_STATE_SUCCEEDED"
            assert bodies[-1]["cost_usd"] == pytest.approx(doc["cost"]["estimated"])
            assert "recovery 1 of 1" in bodies[1]["text"]
            assert "succeeded after 1 recovery, about $" in bodies[-1]["text"]


@pytest.mark.slow  # hooks that hold each answer 1 s: seconds of waiting
def test_slow_hooks_never_delay_the_next_attempts_create(preempting: EmulatorHandle, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: three slow hooks delayed the next attempt's create by 12 s. The events are
    posted off the watch's path: attempt 1 is created as soon as attempt 0 is seen ended (the
    two hooks below, answering after 1 s each, held it 2 s before), and each hook still gets
    every event once, each with its stable id."""
    with webhook(delay=1.0) as one, webhook(delay=1.0) as two:
        path = spec(tmp_path, recovery={"max_recoveries": 1})
        urls = [flag for hook in (one, two) for flag in ("--notify", hook.url)]
        code, doc, err = submit(capsys, path, preempting, "--idempotency-key", "slow-hooks", *urls)
        assert code == 0, err
        lost, kept = jobs(preempting)
        assert (_time(kept["create_time"]) - _time(lost["end_time"])).total_seconds() < 1.6, (lost, kept)
        for hook in (one, two):
            bodies = hook.bodies()
            assert [b["event"] for b in bodies] == ["started", "recovering", "started", "succeeded"], bodies
            assert len({b["id"] for b in bodies}) == 4


@pytest.mark.slow  # a job followed to its end after the adoption
def test_a_rerun_that_adopts_a_running_attempt_does_not_send_started_again(
        running: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: the watcher that created the job said it started; a re-run that finds it
    RUNNING adopts it and sends what happens next only."""
    command = [sys.executable, "-c", "import time; time.sleep(2.5)"]
    path = spec(tmp_path, recovery={"max_recoveries": 1}, command=command)
    code, doc, err = run(capsys, "submit", str(path), "--endpoint", running.address, "-o", "json",
                         "--idempotency-key", "adopt-running")
    assert code == 0, err
    wait_for(lambda: jobs(running)[0]["state"] == "JOB_STATE_RUNNING", 30, "the job to run")
    with webhook() as hook:
        code, doc, err = submit(capsys, path, running, "--idempotency-key", "adopt-running", "--notify", hook.url)
    assert code == 0 and doc["adopted"], err
    assert [b["event"] for b in hook.bodies()] == ["succeeded"]


def test_a_running_job_cancelled_by_hand_is_cancelled_in_json_and_notification_alike(
        running: EmulatorHandle, tmp_path: Path) -> None:
    """Issue 34: it was `failed` in `attempts` and `cancelled` in the notification."""
    path = spec(tmp_path, recovery={"max_recoveries": 1}, command=[sys.executable, "-c", "import time; time.sleep(30)"])

    def progress(view: Any, elapsed: float) -> None:
        if view.state.value == "JOB_STATE_RUNNING":
            running.emulator.cancel(CUSTOM, view.name)

    with webhook() as hook:
        with pytest.raises(errors.JobFailedError) as failed:
            vx.submit(path, endpoint=running.address, wait=True, progress=progress, notify=[hook.url])
    assert outcomes(failed.value.job) == [(0, 0, "cancelled")] and failed.value.exit_code == 3
    assert [b["event"] for b in hook.bodies()] == ["started", "cancelled"]


def test_the_failure_tail_is_the_last_lines_of_one_job(running: EmulatorHandle, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: the tail of workerpool0-0 mixed the lines of attempt 0's and attempt 1's replica."""
    code = ("import os, sys; a = os.environ['VXTRAIN_ATTEMPT']; print('line of attempt', a, flush=True); "
            "sys.exit(33 if a == '0' else 1)")
    path = spec(tmp_path, recovery={"max_recoveries": 1, "on_exit_codes": [33]},
                command=[sys.executable, "-c", code])
    exit_code, _, err = run(capsys, "submit", str(path), "--endpoint", running.address, "--wait")
    assert exit_code == 3, err
    tail = err[err.index("the last "):]
    assert "line of attempt 1" in tail and "line of attempt 0" not in tail, err


def test_wait_on_a_preempted_job_names_recovery_and_the_resume_line(
        preempting: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 34: `vxtrain wait` said "try a different region" only."""
    code, doc, err = run(capsys, "submit", str(spec(tmp_path)), "--endpoint", preempting.address, "-o", "json",
                         "--idempotency-key", "waited")
    assert code == 0, err
    code, _, err = run(capsys, "wait", doc["name"], "--endpoint", preempting.address, "--no-logs")
    assert code == 3, err
    assert "recovery: {max_recoveries: N}" in err and "--idempotency-key waited --wait" in err, err


def test_a_bad_notify_url_is_a_usage_error_before_any_create(preempting: EmulatorHandle, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = submit(capsys, spec(tmp_path), preempting, "--notify", "ftp://example.com/hook")
    assert code == 2 and doc["error"]["type"] == "UsageError" and "ftp://example.com/hook" in doc["error"]["message"]
    assert jobs(preempting) == []


@pytest.mark.slow
def test_two_watchers_with_one_key_make_one_job_per_attempt(preempting: EmulatorHandle, tmp_path: Path) -> None:
    """Started together: every attempt has one live job (a racer's duplicate is cancelled, never
    followed), and both watchers end on the same job."""
    path = spec(tmp_path, recovery={"max_recoveries": 2})
    with ThreadPoolExecutor(2) as pool:
        views = list(pool.map(lambda _: vx.submit(path, endpoint=preempting.address, wait=True,
                                                  idempotency_key="race"), range(2)))
    assert views[0]["name"] == views[1]["name"] and views[0]["state"] == "JOB_STATE_SUCCEEDED"
    kept: dict[str, list[str]] = {}
    for view in jobs(preempting):
        if view["state"] != "JOB_STATE_CANCELLED":
            kept.setdefault(raw(preempting, view["name"]).labels[ATTEMPT_LABEL], []).append(view["name"])
    assert all(len(names) == 1 for names in kept.values()), kept
    assert kept[str(views[0]["recoveries"])] == [views[0]["name"]]
    never_overlapping([v for v in jobs(preempting) if v["state"] != "JOB_STATE_CANCELLED"])


@pytest.mark.slow
def test_a_watch_after_a_submit_without_wait_recovers_and_announces_it(
        preempting: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No watcher saw attempt 0 lose its machines (nor created attempt 1): the later --wait that
    creates attempt 1 sends ``recovering``, once."""
    path = spec(tmp_path, recovery={"max_recoveries": 1})
    code, doc, err = run(capsys, "submit", str(path), "--endpoint", preempting.address, "-o", "json",
                         "--idempotency-key", "later")
    assert code == 0 and "--idempotency-key later --wait` later follows it and recovers it" in err, err
    wait_for(lambda: jobs(preempting)[0]["state"] == "JOB_STATE_FAILED", 30, "attempt 0 to lose its machines")
    with webhook() as hook:
        code, doc, err = submit(capsys, path, preempting, "--idempotency-key", "later", "--notify", hook.url)
    assert code == 0, err
    assert outcomes(doc) == [(0, 0, "preempted"), (1, 0, "succeeded")]
    assert [b["event"] for b in hook.bodies()] == ["recovering", "started", "succeeded"]
    assert "recovery 1 of 1" in hook.bodies()[0]["text"] and "before this watch" not in err


@pytest.mark.slow
def test_env_and_local_run_give_attempt_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """As submit sends the first attempt: VXTRAIN_ATTEMPT=0 with recovery:, nothing without it."""
    show = [sys.executable, "-c", "import os; print('attempt=' + os.environ.get('VXTRAIN_ATTEMPT', 'unset'))"]
    for recovery, expected in (({"max_recoveries": 1}, "0"), (None, "unset")):
        path = spec(tmp_path, recovery=recovery, command=show)
        code, values, err = run(capsys, "env", str(path), "--replica", "workerpool0:0", "-o", "json")
        assert code == 0 and values.get("VXTRAIN_ATTEMPT", "unset") == expected, err
        environ = {k: v for k, v in os.environ.items() if k != "VXTRAIN_ATTEMPT"}
        done = subprocess.run([sys.executable, "-m", "vxtrain", "local-run", str(path)], capture_output=True,
                              text=True, timeout=120, env=environ)
        assert done.returncode == 0 and f"attempt={expected}" in done.stdout, done.stdout + done.stderr
