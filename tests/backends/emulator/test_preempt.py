"""``--preempt REGION:AFTER[:COUNT]`` (vxtrain/backends/emulator/stockouts.py, the store):
a job RUNNING for AFTER seconds loses its machines, seen through the real client."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.backends.emulator.conftest import State, custom_job, pool, py
from tests.polling import wait_for
from tests.backends.emulator.test_emulator_cli import emulator
from vxtrain.backends.emulator.stockouts import Preemption, Preemptions, parse_preempt, stockout_message
from vxtrain.cli import main
from vxtrain.errors import UsageError
from vxtrain.submission.decide import Outcome, capacity_outcome
from vxtrain.submission.views import job_view

EAST, WEST = "projects/p/locations/us-east1", "projects/p/locations/us-west1"
#: A replica that writes its pid, then runs far longer than any test waits.
SLEEPER = "import os, pathlib, sys, time; pathlib.Path(sys.argv[1]).write_text(str(os.getpid())); time.sleep(600)"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_a_running_job_loses_its_machines_after_the_seconds_given(make_emulator: Any, connect: Any,
                                                                  tmp_path: Path) -> None:
    handle = make_emulator(preempt=["us-east1:0.5"])
    client = connect(handle)
    pidfile = tmp_path / "pid"
    body = custom_job(pools=[pool([*py(SLEEPER), str(pidfile)])])
    began = time.monotonic()
    name = client.create_custom_job(parent=EAST, custom_job=body).name
    pid = int(wait_for(lambda: pidfile.exists() and pidfile.read_text(), 20, "the replica to start"))
    job = handle.emulator.wait(name, timeout=20)
    assert time.monotonic() - began >= 0.5
    assert handle.emulator.history(name) == [State.JOB_STATE_QUEUED, State.JOB_STATE_PENDING,
                                             State.JOB_STATE_RUNNING, State.JOB_STATE_FAILED]
    assert (job.error.code, job.error.message) == (8, stockout_message(name))
    assert job.start_time and job.end_time and job.end_time >= job.start_time  # it did start
    assert (job.end_time - job.start_time).total_seconds() >= 0.5
    assert not _alive(pid)  # the replica was stopped, as a cancel stops it
    # The fallback ladder reads it as a capacity failure (a Spot job that was preempted).
    view = job_view({"name": name, "state": "JOB_STATE_FAILED", "error": {"code": 8, "message": job.error.message}})
    assert capacity_outcome(view) is Outcome.stockout


@pytest.mark.slow
def test_count_preempts_only_the_first_jobs_of_the_region(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=0.8, preempt=["us-east1:0.1:1"])
    client = connect(handle)
    first = client.create_custom_job(parent=EAST, custom_job=custom_job()).name
    elsewhere = client.create_custom_job(parent=WEST, custom_job=custom_job()).name
    second = client.create_custom_job(parent=EAST, custom_job=custom_job()).name
    assert handle.emulator.wait(first).state == State.JOB_STATE_FAILED
    assert handle.emulator.wait(elsewhere).state == State.JOB_STATE_SUCCEEDED
    assert handle.emulator.wait(second).state == State.JOB_STATE_SUCCEEDED


@pytest.mark.slow
def test_a_job_that_ends_first_keeps_its_end_and_a_cancel_is_a_cancel(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(preempt=["us-east1:1"])
    client = connect(handle)
    quick = client.create_custom_job(parent=EAST, custom_job=custom_job(pools=[pool(py("pass"))])).name
    slow = client.create_custom_job(parent=EAST, custom_job=custom_job(pools=[pool(py(SLEEPER))])).name
    wait_for(lambda: client.get_custom_job(name=slow).state == State.JOB_STATE_RUNNING, 20, "RUNNING")
    client.cancel_custom_job(name=slow)
    assert handle.emulator.wait(quick).state == State.JOB_STATE_SUCCEEDED
    assert handle.emulator.wait(slow).state == State.JOB_STATE_CANCELLED
    time.sleep(1.1)  # past AFTER: neither ended job changes
    assert [client.get_custom_job(name=n).state for n in (quick, slow)] == [State.JOB_STATE_SUCCEEDED,
                                                                          State.JOB_STATE_CANCELLED]


@pytest.mark.slow
def test_a_stocked_out_job_never_runs_so_takes_no_count(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=0.8, stockout=["us-east1"], stockout_after=0.1)
    handle.preemptions.add("us-east1:0.1:1")
    client = connect(handle)
    short = client.create_custom_job(parent=EAST, custom_job=custom_job()).name
    assert not handle.emulator.wait(short).start_time
    handle.stockouts.set("us-east1", None)
    runs = client.create_custom_job(parent=EAST, custom_job=custom_job()).name
    job = handle.emulator.wait(runs)
    assert (job.state, job.error.code) == (State.JOB_STATE_FAILED, 8)


def test_rules_of_one_region_are_used_up_in_order() -> None:
    rules = Preemptions(["us-east1:5:1", Preemption("us-east1", 60.0)])
    names = [f"projects/p/locations/us-east1/customJobs/{n}" for n in range(3)]
    assert [rules.claim(n) for n in names] == [5.0, 60.0, 60.0]
    assert rules.claim("projects/p/locations/us-west1/customJobs/9") is None


@pytest.mark.parametrize(("text", "rule"), [("us-east1:30", Preemption("us-east1", 30.0)),
                                            (" europe-west4:2.5:3 ", Preemption("europe-west4", 2.5, 3)),
                                            ("us-east1:0:1", Preemption("us-east1", 0.0, 1))])
def test_the_flag_parses(text: str, rule: Preemption) -> None:
    assert parse_preempt(text) == rule


@given(region=st.from_regex(r"[a-z][a-z0-9-]{0,30}", fullmatch=True),
       after=st.floats(min_value=0, max_value=1e9, allow_nan=False), count=st.none() | st.integers(1, 10**6))
def test_every_rule_reads_back_from_its_flag(region: str, after: float, count: int | None) -> None:
    text = f"{region}:{after!r}" + ("" if count is None else f":{count}")
    assert parse_preempt(text) == Preemption(region, after, count)


@pytest.mark.parametrize(("text", "says"), [
    ("us-east1", "takes REGION:AFTER[:COUNT]"), (":5", "takes REGION:AFTER[:COUNT]"),
    ("us-east1:5:1:2", "takes REGION:AFTER[:COUNT]"), ("us-east1:-1", "AFTER is the seconds"),
    ("us-east1:nan", "AFTER is the seconds"), ("us-east1:1e300", "AFTER is the seconds"),
    ("us-east1:soon", "AFTER is the seconds"), ("us-east1:5:0", "COUNT is how many"),
    ("us-east1:5:-2", "COUNT is how many"), ("us-east1:5:1.5", "COUNT is how many"),
])
def test_bad_values_are_usage_errors(text: str, says: str) -> None:
    with pytest.raises(UsageError, match=r"--preempt .*" + says.replace("[", r"\[").replace("]", r"\]")):
        parse_preempt(text)


@pytest.mark.slow
def test_the_flag_as_a_user_starts_it() -> None:
    """`vxtrain emulator --simulate 1 --preempt us-east1:0.2:1`: the real client (through vxtrain's
    submission) sees the first job there end FAILED for capacity after it started, the next succeed."""
    from tests.submission.helpers import submit_job  # here: only this test talks to a job API through it

    job = {"displayName": "spot", "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/t:1", "command": ["true"]}}]}}
    with emulator("--simulate", "1", "--preempt", "us-east1:0.2:1") as address:
        lost = submit_job(address, job, region="us-east1", wait=True, check=False, retry=None)
        kept = submit_job(address, job, region="us-east1", wait=True, check=False, retry=None)
    assert (lost["state"], lost["error"]["code"], bool(lost.get("start_time"))) == ("JOB_STATE_FAILED", 8, True)
    assert kept["state"] == "JOB_STATE_SUCCEEDED"


@pytest.mark.parametrize("value", ["us-east1", "us-east1:-1", "us-east1:1:0", "us-east1:inf"])
def test_the_cli_refuses_a_bad_flag_with_exit_2_and_no_traceback(value: str, capsys: Any) -> None:
    assert main(["emulator", "--port", "0", "--preempt", value]) == 2
    err = capsys.readouterr().err
    assert "--preempt" in err and "Traceback" not in err
