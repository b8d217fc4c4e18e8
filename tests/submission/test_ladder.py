"""The fallback ladder end to end: ``vxtrain submit`` (in process) against the emulator
through the real aiplatform client, each test checking the jobs that exist by listing
them in every rung's region. Regions run out of capacity through the emulator's
``stockout``/``pending`` and the ``create:quota`` fault; nothing here mocks vxtrain.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from tests.incli import run
from vxtrain import api as vx
from vxtrain import errors
from vxtrain import submission
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.emulator.stockouts import Shortage
from vxtrain.submission.decide import Outcome, capacity_outcome
from vxtrain.submission.names import split_name
from vxtrain.submission.views import job_view
from vxtrain.vocab.kinds import CUSTOM
from tests.submission.helpers import saying

PROJECT = "p"
REGIONS = ("us-central1", "us-east1", "europe-west4")


@pytest.fixture
def emulator() -> Iterator[EmulatorHandle]:
    """Jobs succeed 0.4 s after create (simulated); stockouts fail after 0.2 s PENDING."""
    handle = start_emulator(simulate_seconds=0.4, environ={}, out=io.StringIO(), stockout_after=0.2)
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def spec(tmp_path: Path, *, fallback: bool = True, command: str = "true", study: bool = False) -> Path:
    """A one-replica job in us-central1 with two fallback rungs: us-east1, europe-west4
    (with ``study``, a two-trial HyperparameterTuningJob)."""
    text: dict[str, Any] = {"display_name": "ladder", "project": PROJECT, "region": REGIONS[0],
                            "chief": {"machine_type": "n1-standard-4", "image": "us-docker.pkg.dev/p/r/train:1",
                                      "command": [command]}}
    if study:
        text["study"] = {"metric": {"id": "accuracy", "goal": "maximize"}, "max_trials": 2, "parallel_trials": 1,
                         "parameters": {"lr": {"type": "discrete", "values": [0.01, 0.1]}}}
    if fallback:
        text["fallback"] = [{"region": REGIONS[1]}, {"region": REGIONS[2]}]
    path = tmp_path / "ladder.yaml"
    path.write_text(json.dumps(text))
    return path


def listed(handle: EmulatorHandle, *, tuning: bool = False) -> list[dict[str, Any]]:
    """Every CustomJob (or tuning job) in every rung's region, as the Job API lists them, oldest first."""
    with submission.Session(endpoint=handle.address) as session:
        jobs = [j.to_json() for region in REGIONS for j in session.jobs(PROJECT, region, tuning=tuning)]
    return sorted(jobs, key=lambda j: _time(j["create_time"]))


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def region_of(job: dict[str, Any]) -> str:
    return split_name(job["name"])[1]


def never_two_alive(jobs: list[dict[str, Any]]) -> None:
    """Each job had ended before the next one was created (jobs in creation order)."""
    for before, after in zip(jobs, jobs[1:]):
        assert before.get("end_time"), f"{before['name']} never ended"
        assert _time(before["end_time"]) <= _time(after["create_time"]), (before, after)


def outcomes(doc: dict[str, Any]) -> list[tuple[int, str]]:
    return [(a["rung"], a["outcome"]) for a in doc["attempts"]]


def submit(capsys: pytest.CaptureFixture[str], path: Path, handle: EmulatorHandle,
           *flags: str) -> tuple[int, Any, str]:
    return run(capsys, "submit", str(path), "--endpoint", handle.address, "-o", "json", *flags)


# --- moving on for capacity -------------------------------------------------------------------

@pytest.mark.slow
def test_a_quota_refusal_at_create_moves_to_the_next_rung(emulator: EmulatorHandle, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    emulator.add_fault("create:quota:1")
    code, doc, err = submit(capsys, spec(tmp_path), emulator, "--wait")
    assert code == 0, err
    assert outcomes(doc) == [(0, "quota"), (1, "succeeded")]
    assert doc["attempts"][0]["name"] is None and doc["state"] == "JOB_STATE_SUCCEEDED"
    jobs = listed(emulator)
    assert [region_of(j) for j in jobs] == [REGIONS[1]]  # nothing in the region that refused
    assert "rung 0 (us-central1): the create was refused for quota" in err


@pytest.mark.slow
def test_stockout_then_a_quota_refusal_at_create_then_success(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Rung 0 stocks out while followed; rung 1's create is refused for quota (the fault is
    armed as the ladder leaves rung 0); rung 2 runs."""
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if line.startswith("rung 0 "):
            emulator.add_fault("create:quota:1")

    view = saying(say, vx.submit, spec(tmp_path), endpoint=emulator.address, wait=True)
    assert outcomes(view) == [(0, "stockout"), (1, "quota"), (2, "succeeded")]
    jobs = listed(emulator)
    assert [(region_of(j), j["state"]) for j in jobs] == [
        (REGIONS[0], "JOB_STATE_FAILED"), (REGIONS[2], "JOB_STATE_SUCCEEDED")]
    assert jobs[0]["error"]["code"] == 8 and "Resources are insufficient" in jobs[0]["error"]["message"]
    never_two_alive(jobs)
    assert any("ended JOB_STATE_FAILED for capacity" in line for line in said)


@pytest.mark.slow
def test_until_running_catches_a_stockout_before_start(emulator: EmulatorHandle, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    code, doc, err = submit(capsys, spec(tmp_path), emulator, "--until-running")
    assert code == 0, err
    assert outcomes(doc) == [(0, "stockout"), (1, "started")]
    assert doc["state"] == "JOB_STATE_RUNNING"
    jobs = listed(emulator)
    assert [region_of(j) for j in jobs] == [REGIONS[0], REGIONS[1]]
    never_two_alive(jobs)


@pytest.mark.slow
def test_pending_too_long_is_cancelled_before_the_next_rung(emulator: EmulatorHandle, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    emulator.stockouts.set(REGIONS[0], Shortage.pending)
    code, doc, err = submit(capsys, spec(tmp_path), emulator, "--wait", "--max-pending", "0.5s")
    assert code == 0, err
    assert outcomes(doc) == [(0, "pending-timeout"), (1, "succeeded")]
    assert doc["attempts"][0]["state"] == "JOB_STATE_CANCELLED"
    jobs = listed(emulator)
    assert [(region_of(j), j["state"]) for j in jobs] == [
        (REGIONS[0], "JOB_STATE_CANCELLED"), (REGIONS[1], "JOB_STATE_SUCCEEDED")]
    never_two_alive(jobs)
    assert "(--max-pending): cancelling it" in err


@pytest.mark.slow
def test_a_job_that_ends_as_it_is_cancelled_is_judged_not_an_error(emulator: EmulatorHandle,
                                                                     tmp_path: Path) -> None:
    """--max-pending fires, and the job ends before the cancel arrives (here another hand
    cancels it; a stockout's FAILED races the same way): Vertex refuses to cancel an ended
    job (FAILED_PRECONDITION). The ladder judges the job as it ended and moves on, instead
    of stopping with that refusal (exit 4)."""
    emulator.stockouts.set(REGIONS[0], Shortage.pending)

    def say(line: str) -> None:
        if "(--max-pending): cancelling it" in line:
            name = line.split()[0]
            emulator.emulator.cancel(CUSTOM, name)
            emulator.emulator.wait(name)  # ended before the ladder's own cancel is sent

    view = saying(say, vx.submit, spec(tmp_path), endpoint=emulator.address, wait=True, max_pending=0.5)
    assert outcomes(view) == [(0, "pending-timeout"), (1, "succeeded")]
    jobs = listed(emulator)
    assert [(region_of(j), j["state"]) for j in jobs] == [(REGIONS[0], "JOB_STATE_CANCELLED"),
                                                          (REGIONS[1], "JOB_STATE_SUCCEEDED")]
    never_two_alive(jobs)


@pytest.mark.slow
def test_no_capacity_anywhere_is_exit_5_with_the_attempts(emulator: EmulatorHandle, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    for region in REGIONS[:2]:
        emulator.stockouts.set(region, Shortage.stockout)
    emulator.stockouts.set(REGIONS[2], Shortage.pending)
    code, doc, err = submit(capsys, spec(tmp_path), emulator, "--until-running", "--max-pending", "0.5s")
    assert code == 5, err
    assert doc["error"]["type"] == "NoCapacity" and doc["error"]["exit_code"] == 5
    assert "no capacity on any of the 3 rungs" in doc["error"]["message"]
    assert outcomes(doc) == [(0, "stockout"), (1, "stockout"), (2, "pending-timeout")]
    jobs = listed(emulator)
    assert [j["state"] for j in jobs] == ["JOB_STATE_FAILED", "JOB_STATE_FAILED", "JOB_STATE_CANCELLED"]
    never_two_alive(jobs)


def test_a_code_failure_ends_the_ladder_with_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The replica exits 1 (a real run, not simulated): not capacity, so no fallback."""
    with start_emulator(environ={}, out=io.StringIO()) as handle:
        code, doc, err = submit(capsys, spec(tmp_path, command="false"), handle, "--wait")
        jobs = listed(handle)
    assert code == 3, err
    assert outcomes(doc) == [(0, "failed")] and doc["state"] == "JOB_STATE_FAILED"
    assert [region_of(j) for j in jobs] == [REGIONS[0]]


@pytest.mark.slow
def test_a_study_takes_the_same_ladder(emulator: EmulatorHandle, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    code, doc, err = submit(capsys, spec(tmp_path, study=True), emulator, "--wait")
    assert code == 0, err
    assert outcomes(doc) == [(0, "stockout"), (1, "succeeded")]
    assert "/hyperparameterTuningJobs/" in doc["name"]
    jobs = listed(emulator, tuning=True)
    assert [(region_of(j), j["state"]) for j in jobs] == [
        (REGIONS[0], "JOB_STATE_FAILED"), (REGIONS[1], "JOB_STATE_SUCCEEDED")]
    assert listed(emulator) == []  # no CustomJob of its own
    never_two_alive(jobs)


def test_a_rate_limit_at_create_ends_the_ladder_with_exit_4(emulator: EmulatorHandle, tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """RESOURCE_EXHAUSTED that names no quota metric (a requests-per-minute limit) is not
    capacity: no fallback rung is tried, and nothing is created anywhere."""
    emulator.add_fault("create:ratelimit:1")
    code, doc, err = submit(capsys, spec(tmp_path), emulator, "--wait")
    assert code == 4, err
    assert doc["error"]["type"] == "QuotaError" and "Resource management (CRUD) requests" in doc["error"]["message"]
    assert "fallback" not in doc["error"]["message"]  # no hint that fallback: would have helped
    assert "trying fallback rung" not in err and "moving on" not in err
    assert listed(emulator) == []


def test_an_api_error_part_way_up_keeps_the_attempts_before_it(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """Rung 0 stocks out, rung 1's create hits a rate limit (exit 4): the error still says
    what became of rung 0, whose job exists (the CLI writes them as the NoCapacity document does)."""
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)

    def say(line: str) -> None:
        if line.startswith("rung 0 "):
            emulator.add_fault("create:ratelimit:1")

    with pytest.raises(errors.QuotaError) as stopped:
        saying(say, vx.submit, spec(tmp_path), endpoint=emulator.address, wait=True)
    assert [(a["rung"], a["outcome"]) for a in stopped.value.attempts] == [(0, "stockout")]
    assert stopped.value.attempts[0]["name"] == listed(emulator)[0]["name"]
    assert [region_of(j) for j in listed(emulator)] == [REGIONS[0]]


# --- without fallback: the earlier contract, with a hint ---------------------------------------

def test_without_fallback_a_quota_refusal_is_still_exit_4(emulator: EmulatorHandle, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    emulator.add_fault("create:quota:1")
    code, doc, err = submit(capsys, spec(tmp_path, fallback=False), emulator)
    assert code == 4, err
    assert doc["error"]["type"] == "QuotaError" and "a `fallback:` list in the spec" in doc["error"]["message"]
    assert listed(emulator) == []


def test_without_fallback_a_stockout_is_still_exit_3(emulator: EmulatorHandle, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    code, doc, err = submit(capsys, spec(tmp_path, fallback=False), emulator, "--wait")
    assert code == 3, err
    assert doc["state"] == "JOB_STATE_FAILED" and "a `fallback:` list in the spec" in err
    assert len(listed(emulator)) == 1


def test_without_fallback_pending_too_long_is_exit_3_and_cancelled(
        emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    emulator.stockouts.set(REGIONS[0], Shortage.pending)
    code, doc, err = submit(capsys, spec(tmp_path, fallback=False), emulator, "--until-running",
                            "--max-pending", "0.3")
    assert code == 3, err
    assert doc["state"] == "JOB_STATE_CANCELLED" and outcomes(doc) == [(0, "pending-timeout")]
    assert "a `fallback:` list in the spec" in err
    assert [j["state"] for j in listed(emulator)] == ["JOB_STATE_CANCELLED"]


def test_the_text_output_lists_the_rungs(emulator: EmulatorHandle, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    emulator.add_fault("create:quota:1")
    code, out, err = run(capsys, "submit", str(spec(tmp_path)), "--endpoint", emulator.address, "--until-running")
    assert code == 0, err
    assert "rung 0 (us-central1): quota\nrung 1 (us-east1): started — projects/p/locations/us-east1/" in out


# --- re-runs with the same key ------------------------------------------------------------------

@pytest.mark.slow
def test_a_rerun_after_success_creates_nothing(emulator: EmulatorHandle, tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    emulator.add_fault("create:quota:1")
    path = spec(tmp_path)
    first = submit(capsys, path, emulator, "--wait", "--idempotency-key", "release-7")
    again = submit(capsys, path, emulator, "--wait", "--idempotency-key", "release-7")
    assert first[0] == again[0] == 0, again[2]
    assert again[1]["name"] == first[1]["name"] and again[1]["adopted"] is True
    assert len(listed(emulator)) == 1
    # Rung 0 has no job to find; the re-run still lists it, as the quota it was.
    assert outcomes(again[1]) == outcomes(first[1]) == [(0, "quota"), (1, "succeeded")]
    assert again[1]["attempts"][0] == {"attempt": 0, "rung": 0, "region": REGIONS[0], "name": None,
                                       "state": None, "outcome": "quota"}


@pytest.mark.slow
def test_a_rerun_after_a_capacity_failure_resumes_at_the_next_rung(
        emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Rungs 0 and 1 stock out and rung 2's create is refused for quota (exit 5); once the
    quota is there, a re-run goes on from rung 2, the rung after the last job that failed."""
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    emulator.stockouts.set(REGIONS[1], Shortage.stockout)

    def say(line: str) -> None:
        if line.startswith("rung 1 "):
            emulator.add_fault("create:quota:1")

    path = spec(tmp_path)
    with pytest.raises(errors.NoCapacity) as refused:
        saying(say, vx.submit, path, endpoint=emulator.address, wait=True, idempotency_key="k-resume")
    assert [a["outcome"] for a in refused.value.attempts] == ["stockout", "stockout", "quota"]
    code, doc, err = submit(capsys, path, emulator, "--wait", "--idempotency-key", "k-resume")
    assert code == 0, err
    assert outcomes(doc) == [(0, "stockout"), (1, "stockout"), (2, "succeeded")]
    jobs = listed(emulator)
    # One job per rung, ever: the re-run did not re-create rungs 0 and 1.
    assert [(region_of(j), j["state"]) for j in jobs] == [
        (REGIONS[0], "JOB_STATE_FAILED"), (REGIONS[1], "JOB_STATE_FAILED"), (REGIONS[2], "JOB_STATE_SUCCEEDED")]
    never_two_alive(jobs)


@pytest.mark.slow
def test_a_rerun_after_every_rung_ran_out_creates_nothing(
        emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for region in REGIONS:
        emulator.stockouts.set(region, Shortage.stockout)
    path = spec(tmp_path)
    assert submit(capsys, path, emulator, "--wait", "--idempotency-key", "k-all")[0] == 5
    code, doc, _ = submit(capsys, path, emulator, "--wait", "--idempotency-key", "k-all")
    assert code == 5 and outcomes(doc) == [(0, "stockout"), (1, "stockout"), (2, "stockout")]
    assert len(listed(emulator)) == 3


@pytest.mark.slow
def test_a_rerun_resumes_after_the_failed_rung_not_at_zero(
        emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An interrupted ladder: rung 0 stocked out and its follow ended there (plain submit,
    then a re-run that follows): the re-run adopts rung 0's job, sees it failed for
    capacity, and creates rung 1, once."""
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    path = spec(tmp_path)
    code, doc, _ = submit(capsys, path, emulator, "--idempotency-key", "k-later")
    assert code == 0 and outcomes(doc) == [(0, "started")]
    emulator.emulator.wait(doc["name"])
    code, doc, err = submit(capsys, path, emulator, "--until-running", "--idempotency-key", "k-later")
    assert code == 0, err
    assert outcomes(doc) == [(0, "stockout"), (1, "started")]
    assert [region_of(j) for j in listed(emulator)] == [REGIONS[0], REGIONS[1]]


@pytest.mark.slow
def test_adding_fallback_after_a_stockout_goes_on_from_rung_1_with_the_same_key(
        emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The flow the exit-3 hint invites: a spec without fallback: stocks out, the user adds
    fallback: and re-runs with the same key. The first job (no rung label) is rung 0's: it
    is not created again."""
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    code, _, err = submit(capsys, spec(tmp_path, fallback=False), emulator, "--wait", "--idempotency-key", "k-add")
    assert code == 3 and "a `fallback:` list in the spec" in err
    code, doc, err = submit(capsys, spec(tmp_path), emulator, "--wait", "--idempotency-key", "k-add")
    assert code == 0, err
    assert outcomes(doc) == [(0, "stockout"), (1, "succeeded")]
    jobs = listed(emulator)
    assert [(region_of(j), j["state"]) for j in jobs] == [
        (REGIONS[0], "JOB_STATE_FAILED"), (REGIONS[1], "JOB_STATE_SUCCEEDED")]


# --- exactly once under injected faults ---------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("fault", ["create:unavailable-before-commit:1", "create:deadline-after-commit:1",
                                   "create:deadline-commit-late:1"])
def test_faults_still_make_one_job_per_rung(emulator: EmulatorHandle, tmp_path: Path, fault: str) -> None:
    """The fault hits rung 0's first create, and again rung 1's (armed as the ladder leaves rung 0)."""
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    emulator.add_fault(fault)
    said: list[str] = []

    def say(line: str) -> None:
        said.append(line)
        if line.startswith("rung 0 "):
            emulator.add_fault(fault)

    view = saying(say, vx.submit, spec(tmp_path), endpoint=emulator.address, wait=True)
    assert outcomes(view) == [(0, "stockout"), (1, "succeeded")]
    assert sum("create custom job: attempt 1 failed" in line for line in said) == 2
    jobs = listed(emulator)
    assert [region_of(j) for j in jobs] == [REGIONS[0], REGIONS[1]]
    never_two_alive(jobs)


# --- the quota preflight on each rung -------------------------------------------------------------

def test_quota_short_in_the_first_region_creates_nothing_there(emulator: EmulatorHandle, tmp_path: Path) -> None:
    emulator.quotas.set(f"custom_model_training_cpus:{REGIONS[0]}=2")  # the chief's n1-standard-4 needs 4
    said: list[str] = []
    view = saying(said.append, vx.submit, spec(tmp_path), endpoint=emulator.address, until_running=True)
    assert outcomes(view) == [(0, "quota"), (1, "started")]
    assert any(line.startswith("rung 0 (us-central1): quota too small") and "nothing was created" in line
               for line in said), said
    assert [region_of(j) for j in listed(emulator)] == [REGIONS[1]]


@pytest.mark.slow
def test_stockout_then_a_short_quota_then_success(emulator: EmulatorHandle, tmp_path: Path) -> None:
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    emulator.quotas.set(f"custom_model_training_cpus:{REGIONS[1]}=0")
    view = saying(lambda line: None, vx.submit, spec(tmp_path), endpoint=emulator.address, wait=True)
    assert outcomes(view) == [(0, "stockout"), (1, "quota"), (2, "succeeded")]
    jobs = listed(emulator)
    assert [region_of(j) for j in jobs] == [REGIONS[0], REGIONS[2]]  # nothing in the short region
    never_two_alive(jobs)


@pytest.mark.slow
def test_the_limits_are_read_once_for_the_whole_ladder(emulator: EmulatorHandle, tmp_path: Path) -> None:
    """A refused (or unreachable) Cloud Quotas API is said and waited for once, not once per rung:
    the limits are global to a project, so every rung checks against the one read."""
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    emulator.stockouts.set(REGIONS[1], Shortage.stockout)
    emulator.add_fault("quotas:permission:3")  # would refuse every rung's read, were each read again
    said: list[str] = []
    view = saying(said.append, vx.submit, spec(tmp_path), endpoint=emulator.address, wait=True)
    assert outcomes(view) == [(0, "stockout"), (1, "stockout"), (2, "succeeded")]
    assert sum("could not read the quota limits" in line for line in said) == 1, said


def test_without_the_preflight_the_services_refusal_at_create_moves_the_ladder_on(
        emulator: EmulatorHandle, tmp_path: Path) -> None:
    emulator.quotas.set(f"custom_model_training_cpus:{REGIONS[0]}=2")
    said: list[str] = []
    view = saying(said.append, vx.submit, spec(tmp_path), endpoint=emulator.address, until_running=True, quota_check=False)
    assert outcomes(view) == [(0, "quota"), (1, "started")]
    assert any("the create was refused for quota" in line and "exceed quota limits" in line for line in said), said
    assert [region_of(j) for j in listed(emulator)] == [REGIONS[1]]


def test_max_pending_without_following_is_a_usage_error(emulator: EmulatorHandle, tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = submit(capsys, spec(tmp_path), emulator, "--max-pending", "10s")
    assert code == 2 and "--max-pending needs --wait or --until-running" in doc["error"]["message"]
    assert listed(emulator) == []


# --- what counts as capacity --------------------------------------------------------------------

@pytest.mark.parametrize(("state", "error", "expected"), [
    ("JOB_STATE_FAILED", {"code": 8, "message": "Resources are insufficient in region: us-central1."}, Outcome.stockout),
    ("JOB_STATE_FAILED", {"code": 8, "message": ""}, Outcome.stockout),
    ("JOB_STATE_FAILED", {"code": 13, "message": "ZONE_RESOURCE_POOL_EXHAUSTED: STOCKOUT"}, Outcome.stockout),
    ("JOB_STATE_FAILED", {"code": 8, "message": "The following quota metrics exceed quota limits: "
                                                "aiplatform.googleapis.com/custom_model_training_nvidia_k80_gpus"},
     Outcome.quota),
    ("JOB_STATE_FAILED", {"code": 3, "message": "The following quotas are exceeded: "
                                                "CustomModelTrainingT4GPUsPerProjectPerRegion"}, Outcome.quota),
    ("JOB_STATE_FAILED", {"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 1."},
     None),
    ("JOB_STATE_CANCELLED", {"code": 1, "message": "CustomJob was cancelled."}, None),
    ("JOB_STATE_SUCCEEDED", {}, None),
])
def test_capacity_is_the_code_or_the_words(state: str, error: dict[str, Any], expected: Outcome | None) -> None:
    assert capacity_outcome(job_view({"name": "j", "state": state, "error": error})) is expected


def test_target_local_climbs_the_same_ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--target local: an in-process emulator with capacity everywhere; rung 0 runs, once."""
    code, doc, err = run(capsys, "submit", str(spec(tmp_path)), "--target", "local", "-o", "json", "--no-logs")
    assert code == 0, err
    assert outcomes(doc) == [(0, "succeeded")] and region_of(doc) == REGIONS[0]
