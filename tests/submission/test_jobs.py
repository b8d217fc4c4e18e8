"""Submitting and following jobs through the real JobServiceClient and the
emulator on loopback: the Python API, exactly-once under injected faults, and
the CLI commands (submit, status, wait, cancel, list)."""
from __future__ import annotations

import io
import json
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.polling import wait_for
from tests.processes import stop
from vxtrain import errors
from vxtrain import submission as api
from vxtrain.backends import vertex
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.vertex import VertexBackend
from vxtrain.render.progress import PlainProgress
from vxtrain.submission.create import Request, create_once, oldest
from vxtrain.submission.names import LABEL_KEY
from vxtrain.submission.retry import Backoff
from vxtrain.vocab.kinds import CUSTOM, JobKind, JobState
from tests.incli import run
from tests.submission.helpers import FAST, PARENT, PROJECT, REGION, job, session, submit_job


@pytest.fixture
def backend(emulator: EmulatorHandle) -> Iterator[VertexBackend]:
    with vertex.connect(endpoint=emulator.address) as client:
        yield client


def labelled(emulator: EmulatorHandle, key: str) -> list[Any]:
    """Stored jobs carrying the idempotency label for ``key``."""
    value = api.label_value(key)
    return [j for j in emulator.jobs() if j.labels.get(LABEL_KEY) == value]


def submit(backend: VertexBackend, **kwargs: Any) -> dict[str, Any]:
    if "idempotency_key" in kwargs:
        kwargs["key"] = kwargs.pop("idempotency_key")
    if "backoff" in kwargs:
        kwargs["retry"] = kwargs.pop("backoff")
    return submit_job(backend, kwargs.pop("custom_job", None), **kwargs)


# --- the Python API, end to end ------------------------------------------------------

def test_submit_status_wait_list(backend: VertexBackend) -> None:
    view = submit(backend)
    assert re.fullmatch(rf"{PARENT}/customJobs/\d+", view["name"])
    assert view["state"] in ("JOB_STATE_QUEUED", "JOB_STATE_PENDING")
    assert view["adopted"] is False and view["emulated"] is True
    job_id = view["name"].rsplit("/", 1)[-1]
    assert view["console_url"] == (f"https://console.cloud.google.com/vertex-ai/locations/{REGION}"
                                   f"/training/{job_id}/cpu?project={PROJECT}")
    assert view["display_name"] == "unit" and view["create_time"]
    with session(backend) as s:
        assert s.get(view["name"]).name == view["name"]
        done = s.wait(view["name"])
        assert done.state is JobState.SUCCEEDED and done.error is None and "error" not in done.to_json()
        assert [v.name for v in s.jobs(PROJECT, REGION)] == [view["name"]]
        succeeded = api.build_filter(state="succeeded")
        assert len(s.jobs(PROJECT, REGION, succeeded)) == 1


def test_submit_with_wait_follows_to_the_end(backend: VertexBackend) -> None:
    out = io.StringIO()
    view = submit(backend, wait=True, progress=PlainProgress(out))
    assert view["state"] == "JOB_STATE_SUCCEEDED"
    lines = out.getvalue().splitlines()
    assert lines[-1].endswith(" s") and "JOB_STATE_SUCCEEDED after" in lines[-1]
    states = [line.split(": ")[-1].split(" after")[0] for line in lines]
    assert len(states) == len(set(states)), "one line per state change"


@pytest.mark.slow
def test_a_failed_job_raises_with_its_error(backend: VertexBackend) -> None:
    with pytest.raises(errors.JobFailedError, match="JOB_STATE_FAILED.*non-zero status of 3") as info:
        submit(backend, custom_job=job("import sys; sys.exit(3)"), wait=True)
    assert info.value.exit_code == 3
    error = info.value.job["error"]
    assert isinstance(error, dict) and error["message"]
    view = submit(backend, custom_job=job("import sys; sys.exit(3)"), wait=True, check=False)
    assert view["state"] == "JOB_STATE_FAILED" and "error" in view


def test_cancel_a_running_job(backend: VertexBackend) -> None:
    view = submit(backend, custom_job=job("import time; time.sleep(60)"))
    with session(backend) as s:
        cancelled = s.cancel(view["name"])
        assert cancelled.state in (JobState.CANCELLING, JobState.CANCELLED)
        with pytest.raises(errors.JobFailedError, match="CANCELLED"):
            s.wait(view["name"])


def test_wait_gives_up_after_its_timeout(backend: VertexBackend) -> None:
    view = submit(backend, custom_job=job("import time; time.sleep(60)"))
    with session(backend) as s:
        with pytest.raises(errors.ApiError, match="still JOB_STATE_"):
            s.wait(view["name"], timeout=0.2)
        s.cancel(view["name"])


def test_a_study_submits_a_hyperparameter_tuning_job(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    tuning = {"displayName": "study", "maxTrialCount": 1, "parallelTrialCount": 1,
              "studySpec": {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
                            "parameters": [{"parameterId": "lr",
                                            "doubleValueSpec": {"minValue": 0.01, "maxValue": 0.1}}]},
              "trialJobSpec": job()["jobSpec"]}
    view = submit(backend, custom_job=tuning, idempotency_key="study-1", wait=True)
    assert "/hyperparameterTuningJobs/" in view["name"] and view["state"] == "JOB_STATE_SUCCEEDED"
    again = submit(backend, custom_job=tuning, idempotency_key="study-1")
    assert again["name"] == view["name"] and again["adopted"]
    assert len(emulator.jobs("hpt")) == 1 and emulator.jobs("custom") == []


# --- exactly once --------------------------------------------------------------------------

def test_same_explicit_key_twice_makes_one_job(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    first = submit(backend, idempotency_key="release-1.2.3")
    second = submit(backend, idempotency_key="release-1.2.3")
    assert second["name"] == first["name"]
    assert (first["adopted"], second["adopted"]) == (False, True)
    assert len(emulator.jobs()) == 1


def test_explicit_key_returns_the_job_in_any_state(backend: VertexBackend) -> None:
    failed = submit(backend, custom_job=job("raise SystemExit(1)"), idempotency_key="k", wait=True, check=False)
    again = submit(backend, custom_job=job("raise SystemExit(1)"), idempotency_key="k")
    assert again["name"] == failed["name"] and again["state"] == "JOB_STATE_FAILED"


def test_another_job_under_a_key_in_use_is_refused_naming_what_differs(backend: VertexBackend,
                                                                       emulator: EmulatorHandle) -> None:
    """Attempts of one key run the same job as sent (issue 34): a re-run whose spec or options
    changed the job (here the command, as `--set` would) is exit 1, nothing created."""
    first = submit(backend, custom_job=job("print(1)"), idempotency_key="same")
    with pytest.raises(errors.SpecChanged, match=r"jobSpec\.workerPoolSpecs\[0\]\.containerSpec\.command\[2\]") as info:
        submit(backend, custom_job=job("print(2)"), idempotency_key="same")
    assert info.value.exit_code == 1 and first["name"] in str(info.value)
    assert len(emulator.jobs()) == 1


def test_without_a_key_each_submit_makes_a_job(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    first, second = submit(backend), submit(backend)
    assert first["name"] != second["name"]
    assert len(emulator.jobs()) == 2
    assert first["idempotency_key"] != second["idempotency_key"]


def test_keys_are_per_project_and_region(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    submit(backend, idempotency_key="k")
    submit_job(backend, region="europe-west4", key="k")
    assert len(emulator.jobs()) == 2


@pytest.mark.parametrize(("faults", "adopted"), [
    (["create:unavailable-before-commit:1"], False),
    (["create:deadline-after-commit:1"], True),
    (["create:deadline-after-commit:1", "list:unavailable:1"], True),
    (["create:unavailable-before-commit:2", "create:deadline-after-commit:1"], True),
    (["get:unavailable:2"], False),
])
@pytest.mark.parametrize("key", [None, "pipeline-run-42"])
def test_transient_faults_end_with_exactly_one_job(backend: VertexBackend, emulator: EmulatorHandle,
                                                   faults: list[str], adopted: bool, key: str | None) -> None:
    for fault in faults:
        emulator.add_fault(fault)
    view = submit(backend, idempotency_key=key, wait=True)
    assert view["state"] == "JOB_STATE_SUCCEEDED"
    assert view["adopted"] is adopted
    stored = labelled(emulator, key or view["idempotency_key"])
    assert [j.name for j in stored] == [view["name"]]
    assert len(emulator.jobs()) == 1
    assert emulator.emulator.faults.pending() == []


@pytest.mark.parametrize(("fault", "error", "words"), [
    ("create:quota:1", errors.QuotaError,
     ["aiplatform.googleapis.com/custom_model_training_cpus", REGION, "try another region/machine type"]),
    ("create:permission:1", errors.PermissionError_, ["actAs", "roles/iam.serviceAccountUser"]),
])
def test_permanent_faults_end_at_once_with_no_job(backend: VertexBackend, emulator: EmulatorHandle,
                                                  fault: str, error: type[errors.ApiError],
                                                  words: list[str]) -> None:
    emulator.add_fault(fault.replace(":1", ":5"))
    with pytest.raises(error) as info:
        submit(backend, idempotency_key="k")
    assert info.value.exit_code == 4
    for word in words:
        assert word in str(info.value)
    assert emulator.jobs() == []
    assert emulator.emulator.faults.pending()[0].count == 4, "no retry of a permanent error"


def test_transient_errors_that_outlive_the_deadline(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    emulator.add_fault("create:unavailable-before-commit:1000")
    short = Backoff(initial=0.01, maximum=0.02, deadline=0.3)
    with pytest.raises(errors.UnavailableError, match="still failing after retrying") as info:
        submit(backend, backoff=short)
    assert info.value.exit_code == 4
    assert emulator.jobs() == []


def test_a_retried_create_lists_by_the_label_before_creating_again() -> None:
    """Against a small fake backend that loses every create's answer: only one job is made."""

    class LosesAnswers:
        emulated = True

        def __init__(self) -> None:
            self.jobs: list[dict[str, Any]] = []
            self.creates = 0

        def create(self, kind: JobKind, parent: str, custom_job: dict[str, Any], local: Any = None) -> dict[str, Any]:
            self.creates += 1
            self.jobs.append({**custom_job, "name": f"{parent}/customJobs/{len(self.jobs) + 1}"})
            raise errors.UnavailableError("deadline exceeded", transient=True)

        def list(self, kind: JobKind, parent: str, filter: str = "") -> list[dict[str, Any]]:  # noqa: A002
            assert filter == f'labels.{LABEL_KEY}="{api.label_value("k")}"'
            return list(self.jobs)

    fake = LosesAnswers()
    made = create_once(session(fake), Request(job(), PARENT, "k"))  # type: ignore[arg-type]
    assert made.adopted and fake.creates == 1 and made.job["name"] == f"{PARENT}/customJobs/1"


def test_an_unanswered_create_then_a_failing_list_names_the_key_that_adopts(
        backend: VertexBackend, emulator: EmulatorHandle) -> None:
    """The create went through, every later list fails: the error says the job may
    exist and which key adopts it; submitting with that key then creates nothing."""
    emulator.add_fault("create:deadline-after-commit:1")
    emulator.add_fault("list:unavailable:1000")
    short = Backoff(initial=0.01, maximum=0.02, deadline=0.3)
    with pytest.raises(errors.UnavailableError, match="may have been created") as info:
        submit(backend, backoff=short)
    assert info.value.exit_code == 4
    key = re.search(r"--idempotency-key (\S+) to adopt", str(info.value)).group(1)  # type: ignore[union-attr]
    assert [j.name for j in labelled(emulator, key)] == [j.name for j in emulator.jobs()]
    emulator.emulator.faults.clear()
    again = submit(backend, idempotency_key=key)
    assert again["adopted"] and len(emulator.jobs()) == 1


def test_an_unanswered_create_then_a_refused_list_still_adopts(backend: VertexBackend,
                                                               emulator: EmulatorHandle) -> None:
    """A permanent error after an unanswered create does not hide the job it made."""
    emulator.add_fault("create:deadline-after-commit:1")
    emulator.add_fault("list:permission:1")
    view = submit(backend)
    assert view["adopted"] is True
    assert [j.name for j in emulator.jobs()] == [view["name"]]


def test_explicit_key_returns_a_job_of_the_other_kind(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    """The key labels a CustomJob; the spec has since become a study: no second job."""
    first = submit(backend, idempotency_key="rel-9")
    tuning = {"displayName": "study", "maxTrialCount": 1, "parallelTrialCount": 1,
              "studySpec": {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
                            "parameters": [{"parameterId": "lr",
                                            "doubleValueSpec": {"minValue": 0.01, "maxValue": 0.1}}]},
              "trialJobSpec": job()["jobSpec"]}
    again = submit(backend, custom_job=tuning, idempotency_key="rel-9")
    assert again["name"] == first["name"] and again["adopted"]
    assert emulator.jobs("hpt") == [] and len(emulator.jobs()) == 1


def test_an_adopted_failed_job_says_adopted_when_followed(backend: VertexBackend) -> None:
    failed = submit(backend, custom_job=job("raise SystemExit(1)"), idempotency_key="k", wait=True, check=False)
    with pytest.raises(errors.JobFailedError) as info:
        submit(backend, custom_job=job("raise SystemExit(1)"), idempotency_key="k", wait=True)
    assert info.value.job["name"] == failed["name"] and info.value.job["adopted"] is True


def test_find_labelled_picks_the_oldest_by_time_not_by_text() -> None:
    """The API leaves out a zero fraction: "…:05Z" is older than "…:05.5Z" though it sorts after."""

    class Lists:
        emulated = True

        def list(self, kind: JobKind, parent: str, filter: str = "") -> list[dict[str, Any]]:  # noqa: A002
            label = {LABEL_KEY: "k"}
            return [{"name": f"{PARENT}/customJobs/2", "createTime": "2024-05-01T10:00:05.500Z", "labels": label},
                    {"name": f"{PARENT}/customJobs/1", "createTime": "2024-05-01T10:00:05Z", "labels": label},
                    {"name": f"{PARENT}/customJobs/3", "createTime": "2024-05-01T10:00:05.000000001Z",
                     "labels": label}]

    found = oldest(Lists().list(CUSTOM, PARENT))
    assert found is not None and found["name"] == f"{PARENT}/customJobs/1"


def test_a_retried_cancel_that_went_through_is_not_an_error() -> None:
    """The first cancel is committed but its answer lost; the retry finds the job
    already CANCELLED (FAILED_PRECONDITION): cancel still succeeds."""
    with start_emulator(simulate_seconds=30, environ={}) as handle, \
            vertex.connect(endpoint=handle.address) as client:
        view = submit(client)
        handle.add_fault("cancel:deadline-after-commit:1")
        slow = Backoff(initial=0.3, maximum=0.3, deadline=5.0)  # time for the job to reach CANCELLED
        cancelled = session(client, retry=slow).cancel(view["name"])
        assert cancelled.state in (JobState.CANCELLING, JobState.CANCELLED)
        assert handle.emulator.faults.pending() == []
        handle.emulator.wait(view["name"])
        with pytest.raises(errors.InvalidArgumentError, match="already in state JOB_STATE_CANCELLED"):
            session(client).cancel(view["name"])  # a plain second cancel still is


def test_wait_timeout_is_kept_whatever_the_poll_step(backend: VertexBackend) -> None:
    view = submit(backend, custom_job=job("import time; time.sleep(60)"))
    start = time.monotonic()
    with pytest.raises(errors.UnavailableError, match="still JOB_STATE_"):
        session(backend, poll=Backoff(initial=5.0, maximum=5.0)).wait(view["name"], timeout=0.3)
    assert time.monotonic() - start < 2.0
    session(backend).cancel(view["name"])


# --- labels, names, filters --------------------------------------------------------------------

@given(st.text(max_size=200))
def test_label_value_is_always_label_safe(key: str) -> None:
    value = api.label_value(key)
    assert re.fullmatch(r"[a-z0-9_-]{1,63}", value)
    assert api.label_value(key) == value


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=80))
def test_distinct_keys_get_distinct_labels(a: str, b: str) -> None:
    if a != b:
        assert api.label_value(a) != api.label_value(b)


def test_safe_keys_are_kept_readable() -> None:
    assert api.label_value("release-1_2") == "release-1_2"
    assert api.label_value("Release 1.2.3").startswith("release-1-2-3-")


def test_resolve_name() -> None:
    full = f"{PARENT}/customJobs/123"
    assert api.resolve_name(full) == full
    assert api.resolve_name("123", project=PROJECT, region=REGION) == full
    with pytest.raises(errors.UsageError, match="--project and --region"):
        api.resolve_name("123")
    with pytest.raises(errors.UsageError, match="not a job name"):
        api.resolve_name("projects/p/customJobs/1")


def test_build_filter() -> None:
    assert api.build_filter() == ""
    assert api.build_filter(labels={"a": 'x"y\\'}) == 'labels.a="x\\"y\\\\"'
    assert (api.build_filter('display_name="x"', {"team": "nlp"}, "running")
            == '(display_name="x") AND labels.team="nlp" AND state="JOB_STATE_RUNNING"')


# --- the CLI -------------------------------------------------------------------------------------

def write_spec(tmp_path: Path, code: str = "print('hello from the chief')", **extra: str) -> Path:
    lines = ["display_name: cli-e2e", "chief:", "  machine_type: n1-standard-4",
             "  image: us-docker.pkg.dev/p/r/train:1", f"  command: [{json.dumps(sys.executable)}, -c, {json.dumps(code)}]"]
    lines += [f"{k}: {v}" for k, v in extra.items()]
    path = tmp_path / "job.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.slow
def test_cli_submit_status_wait_cancel_list(emulator: EmulatorHandle, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path)
    ep = ["--endpoint", emulator.address, "--output", "json"]
    code, view, _ = run(capsys, "submit", str(spec), *ep)
    assert code == 0 and view["name"].startswith("projects/local-project/locations/us-central1/customJobs/")
    code, status, _ = run(capsys, "status", view["name"], *ep)
    assert code == 0 and status["name"] == view["name"]
    code, done, err = run(capsys, "wait", view["name"].rsplit("/", 1)[-1], *ep)
    assert code == 0 and done["state"] == "JOB_STATE_SUCCEEDED"
    assert "JOB_STATE_SUCCEEDED after" in err
    sleeper = write_spec(tmp_path, "import time; time.sleep(60)")
    code, slow, _ = run(capsys, "submit", str(sleeper), *ep)
    code, cancelled, _ = run(capsys, "cancel", slow["name"], *ep)
    assert code == 0 and cancelled["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")
    code, ended, err = run(capsys, "wait", slow["name"], *ep)
    assert code == 3 and ended["state"] == "JOB_STATE_CANCELLED" and "CANCELLED" in err
    code, listed, _ = run(capsys, "list", *ep, "--state", "succeeded")
    assert code == 0 and [j["name"] for j in listed["jobs"]] == [view["name"]]
    code, listed, _ = run(capsys, "list", *ep, "--label", f"{LABEL_KEY}={view['idempotency_key']}")
    assert [j["name"] for j in listed["jobs"]] == [view["name"]]


@pytest.mark.slow
def test_cli_submit_wait_exit_codes(emulator: EmulatorHandle, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    ep = ["--endpoint", emulator.address]
    code, text, err = run(capsys, "submit", str(write_spec(tmp_path)), "--wait", *ep)
    assert code == 0 and "state: JOB_STATE_SUCCEEDED" in text and "emulated" in text
    code, text, err = run(capsys, "submit", str(write_spec(tmp_path, "raise SystemExit(7)")), "--wait", *ep)
    assert code == 3
    assert "non-zero status of 7" in err and "JOB_STATE_FAILED" in text


def test_cli_idempotency_key(emulator: EmulatorHandle, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = str(write_spec(tmp_path))
    argv = ["submit", spec, "--endpoint", emulator.address, "--output", "json"]
    first = run(capsys, *argv, "--idempotency-key", "rel-7")[1]
    second = run(capsys, *argv, "--idempotency-key", "rel-7")[1]
    assert second["name"] == first["name"] and second["adopted"] is True
    run(capsys, *argv)
    run(capsys, *argv)
    assert len(emulator.jobs()) == 3


@pytest.mark.parametrize("fault", ["create:quota:1", "create:permission:1"])
def test_cli_permanent_errors_exit_4_with_no_job(emulator: EmulatorHandle, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str], fault: str) -> None:
    emulator.add_fault(fault)
    code, out, err = run(capsys, "submit", str(write_spec(tmp_path)), "--endpoint", emulator.address,
                         "--output", "json")
    # stdout: the one JSON document --output json promises, here the error's.
    assert code == 4 and out["error"]["exit_code"] == 4 and emulator.jobs() == []
    assert out["error"]["message"] in err
    settings_line, err = err.split("\n", 1)  # which project and region (vxtrain.settings), then the error
    assert settings_line.startswith("vxtrain: project local-project (")
    assert err.startswith("vxtrain: error: ") and len(err.strip().splitlines()) == 1
    assert ("try another region/machine type" in err) if "quota" in fault else ("actAs" in err)


def test_cli_target_vertex_needs_a_project(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "submit", str(write_spec(tmp_path)), "--region", REGION)
    assert code == 2 and "GOOGLE_CLOUD_PROJECT" in err


def test_cli_target_vertex_is_refused_by_the_guard(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "submit", str(write_spec(tmp_path)), "--project", PROJECT, "--region", REGION)
    assert code == 2 and "VXTRAIN_NO_GOOGLE" in err


def test_cli_target_local_runs_the_job_here(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, "raise SystemExit(0)", local="{command: [python, -c, \"print('local!')\"]}")
    code, view, err = run(capsys, "submit", str(spec), "--target", "local", "--output", "json")
    assert code == 0 and view["state"] == "JOB_STATE_SUCCEEDED" and view["emulated"] is True
    assert "[workerpool0-0] local!" in err


@pytest.mark.slow
def test_cli_target_local_stops_its_processes_on_sigterm(tmp_path: Path) -> None:
    """The in-process emulator's replicas run in their own sessions: SIGTERM to
    vxtrain must stop them (exit 130, as for Ctrl-C), not orphan them."""
    pid_file = tmp_path / "pid"
    code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    spec = write_spec(tmp_path, code)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "vxtrain", "submit", str(spec), "--target", "local"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=root,
                            env={**os.environ, "PYTHONPATH": str(root)})
    try:
        wait_for(lambda: pid_file.exists() and pid_file.read_text(), 30, "the replica to record its pid",
                 interval=0.05)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 130
    finally:
        stop(proc, signal.SIGKILL, timeout=5)
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


def test_cli_target_local_with_endpoint_is_a_usage_error(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "submit", str(write_spec(tmp_path)), "--target", "local",
                       "--endpoint", "127.0.0.1:1")
    assert code == 2 and "--endpoint" in err


def test_cli_status_of_a_bare_id_needs_project_and_region(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "status", "123")
    assert code == 2 and "--project and --region" in err


@pytest.mark.slow
def test_cli_bare_id_of_a_tuning_job(emulator: EmulatorHandle, backend: VertexBackend,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A bare id does not say its kind: status/wait/cancel find a HyperparameterTuningJob too."""
    tuning = {"displayName": "study", "maxTrialCount": 1, "parallelTrialCount": 1,
              "studySpec": {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
                            "parameters": [{"parameterId": "lr",
                                            "doubleValueSpec": {"minValue": 0.01, "maxValue": 0.1}}]},
              "trialJobSpec": job()["jobSpec"]}
    made = submit_job(backend, tuning, project="local-project")
    bare = made["name"].rsplit("/", 1)[-1]
    for command in ("status", "wait"):
        code, view, _ = run(capsys, command, bare, "--endpoint", emulator.address, "--output", "json")
        assert code == 0 and view["name"] == made["name"]
    code, _, err = run(capsys, "status", "42", "--endpoint", emulator.address)
    assert code == 4 and "CustomJob" in err and "does not exist" in err


def test_cli_status_of_a_missing_job_exits_4(emulator: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "status", f"{PARENT}/customJobs/42", "--endpoint", emulator.address)
    assert code == 4 and "does not exist" in err


def test_a_server_refusal_of_a_pool_points_into_the_spec(tmp_path: Path) -> None:
    from vxtrain.api import load_job
    from vxtrain.jobplan import spec_location

    spec = write_spec(tmp_path)
    result = load_job(spec)
    message = "List of found errors:\t1.Field: job_spec.worker_pool_specs[0].replica_count; Message: ..."
    assert spec_location(result, message) == f" (at {spec}:2:1, key chief)"
    assert spec_location(result, "workerPoolSpecs[1] is wrong") == ""  # no workers in this spec
    assert spec_location(result, "Quota exceeded") == ""


@pytest.mark.slow
def test_ctrl_c_while_waiting_says_the_remote_job_keeps_running() -> None:
    with start_emulator(simulate_seconds=60, environ={}) as handle, \
            vertex.connect(endpoint=handle.address) as client:
        name = submit(client)["name"]
        # -X faulthandler: a child that hangs is ended with SIGABRT below, which dumps its threads.
        proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "vxtrain", "wait", name,
                                 "--endpoint", handle.address, "--no-logs"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        try:
            _interrupt_wait(proc, client, name)
        finally:
            stop(proc, signal.SIGKILL, timeout=5)  # however the checks below end, no `vxtrain wait` is left


def _interrupt_wait(proc: subprocess.Popen[str], client: Any, name: str) -> None:
    """Ctrl-C to a `vxtrain wait` following ``name``: it exits 130 saying the job keeps running."""
    assert proc.stderr is not None
    # Its first state line on stderr: the CLI is started and polling (a fixed sleep raced
    # the interpreter's start-up on a loaded machine, and the signal came too early).
    ready = selectors.DefaultSelector()
    ready.register(proc.stderr, selectors.EVENT_READ)
    assert ready.select(timeout=30), "vxtrain wait printed no state line in 30 s"
    first = proc.stderr.readline()
    assert "JOB_STATE_" in first, first
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGABRT)
        out, err = proc.communicate()
        pytest.fail(f"vxtrain wait still ran 30 s after SIGINT; its stderr:\n{first}{err}")
    err = first + err
    assert proc.returncode == 130, err
    assert f"the job keeps running: `vxtrain cancel {name}` stops it" in err
    assert "vxtrain: interrupted" in err and "Traceback" not in err
    assert not session(client).get(name).state.terminal  # still running, as said
    session(client).cancel(name)
