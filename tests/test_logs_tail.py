"""Following a job's lines by stream (issue 29): Cloud Logging's TailLogEntries served by the
emulator, read with the real google-cloud-logging client, and ``logs --follow`` /
``submit --wait`` on one stream per job, falling back to polling when it is refused or breaks.
The emulator's call counter (``EmulatorHandle.calls``) says which RPCs following cost."""
from __future__ import annotations

import dataclasses
import io
import json
import sys
import threading
import time
from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.services.logging_service_v2.transports import LoggingServiceV2GrpcTransport
from google.cloud.aiplatform_v1.types import job_service
from google.cloud.logging_v2.types import logging as lg

from tests.incli import run
from vxtrain import joblogs
from vxtrain.backends.base import LogTail
from vxtrain.backends.cloud_logging import CloudLoggingReader
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.vertex import emulator_channel
from vxtrain.errors import QuotaError

FALLBACK = "following the job's logs by polling ListLogEntries from now on"


@pytest.fixture(autouse=True)
def patient_opening(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lines before a stream are read when it answers, never after ``Cadence.opening``
    (5 s) first: on a loaded machine a stream may take that long to answer, and the catch-up
    read it would add is correct but would make the counts below depend on the load.
    (tests/backends/test_logging_service.py tests the opening timeout itself.)"""
    # submission.session picks the emulator's cadence by this name when it follows
    monkeypatch.setattr("vxtrain.submission.session.LOCAL_LOGS", dataclasses.replace(joblogs.LOCAL_LOGS, opening=120.0))


def list_calls_of_one_stream(count: int) -> bool:
    """Whether ``count`` ListLogEntries calls is what one stream costs, not polling: the lines
    before it opened (once it answers) and the last ones after the end; just the latter
    when the job ended before the stream's first answer was taken (a loaded machine)."""
    return 1 <= count <= 2


def spec(tmp_path: Path, code: str) -> Path:
    """A one-replica spec whose chief runs ``python -c CODE`` here."""
    path = tmp_path / "job.yaml"
    path.write_text("\n".join([
        "display_name: tail", "chief:", "  machine_type: n1-standard-4",
        "  image: us-docker.pkg.dev/p/r/train:1",
        f"  command: [{json.dumps(sys.executable)}, -c, {json.dumps(code)}]"]) + "\n")
    return path


def steps(n: int, pause: float = 0.05, gate: Path | None = None) -> str:
    """A chief that prints ``step 0`` … ``step n-1`` over time (after ``gate`` exists)."""
    wait = f"while not os.path.exists({str(gate)!r}): time.sleep(0.02)\n" if gate else ""
    return f"import os, time\n{wait}for i in range({n}):\n    print('step', i, flush=True); time.sleep({pause})"


def submitted(emulator: EmulatorHandle, capsys: pytest.CaptureFixture[str], path: Path) -> str:
    code, doc, err = run(capsys, "submit", str(path), "--endpoint", emulator.address, "--output", "json")
    assert code == 0, err
    return str(doc["name"])


def follow(emulator: EmulatorHandle, capsys: pytest.CaptureFixture[str], name: str,
           gate: Path) -> tuple[list[str], str]:
    """``vxtrain logs NAME --follow`` of a job that starts printing once ``gate`` exists,
    opened when the follower's stream is (or after 3 s: a refused one never is)."""
    project = name.split("/")[1]

    def open_gate() -> None:
        deadline = time.monotonic() + 3.0
        while emulator.emulator.logs.tail_sessions(project) == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.touch()

    opener = threading.Thread(target=open_gate)
    opener.start()
    try:
        code, out, err = run(capsys, "logs", name, "--endpoint", emulator.address, "--follow",
                             "--replica", "workerpool0-0")
    finally:
        opener.join()
    assert code == 0, err
    return str(out).splitlines(), err


def test_the_real_client_tails_a_running_job_live(emulator: EmulatorHandle, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    chief = (f"import os, time\nwhile not os.path.exists({str(first)!r}): time.sleep(0.02)\n"
             "print('before', flush=True)\n"
             f"while not os.path.exists({str(second)!r}): time.sleep(0.02)\n"
             "for i in range(3): print('after', i, flush=True)")
    name = submitted(emulator, capsys, spec(tmp_path, chief))
    project, job_id = name.split("/")[1], name.rsplit("/", 1)[-1]
    client = LoggingServiceV2Client(transport=LoggingServiceV2GrpcTransport(
        channel=emulator_channel(emulator.address), credentials=AnonymousCredentials()))
    request = lg.TailLogEntriesRequest(
        resource_names=[f"projects/{project}"],
        filter=f'resource.type="ml_job" AND resource.labels.job_id="{job_id}" AND '
               'resource.labels.task_name="workerpool0-0"')
    stream = client.tail_log_entries(requests=iter([request]))  # the GAPIC method, unchanged
    texts: list[str] = []
    try:
        responses = iter(stream)
        first.touch()
        while "before" not in texts:
            texts += [e.text_payload for e in next(responses).entries]
        # The line came while the job still runs: it waits for the second gate.
        assert emulator.jobs()[0].state.name == "JOB_STATE_RUNNING"
        second.touch()
        while len(texts) < 4:
            texts += [e.text_payload for e in next(responses).entries]
    finally:
        stream.cancel()
        client.transport.close()
    assert texts == ["before", "after 0", "after 1", "after 2"]
    assert emulator.calls["TailLogEntries"] == 1


@pytest.mark.slow
def test_logs_follow_is_one_stream_per_job(emulator: EmulatorHandle, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    gate = tmp_path / "go"
    name = submitted(emulator, capsys, spec(tmp_path, steps(12, gate=gate)))
    before = emulator.calls.snapshot()
    lines, err = follow(emulator, capsys, name, gate)
    assert lines == [f"[workerpool0-0] step {i}" for i in range(12)]
    assert FALLBACK not in err
    calls = emulator.calls.snapshot()
    assert calls["TailLogEntries"] - before.get("TailLogEntries", 0) == 1
    assert list_calls_of_one_stream(calls["ListLogEntries"] - before.get("ListLogEntries", 0)), calls


@pytest.mark.slow
def test_submit_wait_is_one_stream_per_job(emulator: EmulatorHandle, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = run(capsys, "submit", str(spec(tmp_path, steps(8, 0.1))), "--endpoint", emulator.address,
                         "--wait", "--output", "json")
    assert code == 0 and doc["state"] == "JOB_STATE_SUCCEEDED", err
    shown = [line.strip() for line in err.splitlines() if "[workerpool0-0] step" in line]
    assert shown == [f"[workerpool0-0] step {i}" for i in range(8)]
    assert emulator.calls["TailLogEntries"] == 1, emulator.calls.snapshot()
    assert list_calls_of_one_stream(emulator.calls["ListLogEntries"]), emulator.calls.snapshot()
    assert FALLBACK not in err


@pytest.mark.slow
def test_a_stream_that_breaks_once_is_opened_again(emulator: EmulatorHandle, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    emulator.add_fault("tail:unavailable:1")  # breaks after its first lines
    gate = tmp_path / "go"
    name = submitted(emulator, capsys, spec(tmp_path, steps(15, gate=gate)))
    lines, err = follow(emulator, capsys, name, gate)
    assert lines == [f"[workerpool0-0] step {i}" for i in range(15)]
    assert FALLBACK not in err
    assert emulator.calls["TailLogEntries"] == 2


@pytest.mark.slow
def test_a_stream_that_breaks_twice_falls_back_to_polling(emulator: EmulatorHandle, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    emulator.add_fault("tail:unavailable:2")
    gate = tmp_path / "go"
    name = submitted(emulator, capsys, spec(tmp_path, steps(20, gate=gate)))
    lines, err = follow(emulator, capsys, name, gate)
    assert lines == [f"[workerpool0-0] step {i}" for i in range(20)]  # none lost, none twice
    assert err.count(FALLBACK) == 1 and "broke again" in err and "unavailable" in err
    assert emulator.calls["TailLogEntries"] == 2
    assert emulator.calls["ListLogEntries"] > 2  # polled after the fall back


@pytest.mark.slow
def test_a_refused_stream_falls_back_to_polling(emulator: EmulatorHandle, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    emulator.add_fault("tail:quota:1")  # the project's 10 tail sessions are taken
    code, doc, err = run(capsys, "submit", str(spec(tmp_path, steps(6))), "--endpoint", emulator.address,
                         "--wait", "--output", "json")
    assert code == 0, err
    shown = [line.strip() for line in err.splitlines() if "[workerpool0-0] step" in line]
    assert shown == [f"[workerpool0-0] step {i}" for i in range(6)]
    assert err.count(FALLBACK) == 1 and "too many tail sessions" in err
    assert emulator.calls["TailLogEntries"] == 1


@pytest.mark.slow
def test_a_session_that_ran_its_time_is_followed_by_the_next(emulator: EmulatorHandle, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    # Cloud Logging ends a session after an hour (OUT_OF_RANGE); here after 0.3 s.
    monkeypatch.setattr(emulator.emulator.logs, "max_tail_seconds", 0.3)
    monkeypatch.setattr(joblogs, "MIN_SESSION_SECONDS", 0.2)
    gate = tmp_path / "go"
    name = submitted(emulator, capsys, spec(tmp_path, steps(12, 0.1, gate=gate)))
    started = time.monotonic()
    lines, err = follow(emulator, capsys, name, gate)
    assert lines == [f"[workerpool0-0] step {i}" for i in range(12)]
    assert FALLBACK not in err
    sessions = emulator.calls["TailLogEntries"]
    assert 2 <= sessions <= (time.monotonic() - started) / 0.3 + 1


def test_open_streams_never_take_every_worker_of_the_emulator() -> None:
    """Each open TailLogEntries stream holds one of the server's worker threads: at most half
    the pool is given to streams (the next is refused, and its follower polls), so the
    state polls of the jobs being followed are still answered."""
    handle = start_emulator(out=io.StringIO(), max_workers=4)
    reader = CloudLoggingReader(handle.address)
    tails: list[LogTail] = [reader.tail(f"p{i}", 'resource.type="ml_job"') for i in range(3)]
    errors: list[Exception] = []

    def drain(tail: LogTail) -> None:
        try:
            for _ in tail.batches():
                pass
        except Exception as exc:  # noqa: BLE001 - the refusal is what is looked at
            errors.append(exc)

    threads = [threading.Thread(target=drain, args=(tail,)) for tail in tails]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10
        while not errors and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(errors) == 1 and isinstance(errors[0], QuotaError), errors
        assert "at most 2 at once" in str(errors[0])
        assert sum(handle.emulator.logs.tail_sessions(f"p{i}") for i in range(3)) == 2
        with emulator_channel(handle.address) as channel:  # a unary call still finds a worker
            listed = channel.unary_unary("/google.cloud.aiplatform.v1.JobService/ListCustomJobs")
            request = job_service.ListCustomJobsRequest(parent="projects/p/locations/us-central1")
            listed(job_service.ListCustomJobsRequest.serialize(request), timeout=10)
    finally:
        for tail in tails:
            tail.close()
        for thread in threads:
            thread.join(10)
        reader.close()
        handle.stop(grace=None)
