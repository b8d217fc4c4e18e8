"""Watching jobs: ``vxtrain logs`` and the lines ``submit --wait``/``wait`` stream,
read with the real google-cloud-logging client from the emulator's LoggingServiceV2."""
from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest
from google.auth.credentials import AnonymousCredentials
from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.services.logging_service_v2.transports import LoggingServiceV2GrpcTransport

import vxtrain
from vxtrain.backends.emulator import EmulatorHandle
from vxtrain.backends.vertex import emulator_channel
from vxtrain.cli import main

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "examples"


def spec(tmp_path: Path, chief: str, worker: str | None = None) -> Path:
    """A spec whose chief (and one worker) run ``python -c CODE`` here."""
    def pool(code: str) -> list[str]:
        return ["  machine_type: n1-standard-4", "  image: us-docker.pkg.dev/p/r/train:1",
                f"  command: [{json.dumps(sys.executable)}, -c, {json.dumps(code)}]"]

    lines = ["display_name: logs", "chief:", *pool(chief)]
    if worker is not None:
        lines += ["workers:", "  replicas: 1", *pool(worker)]
    path = tmp_path / "job.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``vxtrain ARGV`` in process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


WORKER = "import sys\nprint('worker ready')\nprint('worker warning', file=sys.stderr)"


def finished_job(emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    chief = "import time\nfor i in range(3):\n    print('chief', i, flush=True); time.sleep(0.05)"
    code, out, _ = run(capsys, "submit", str(spec(tmp_path, chief, WORKER)),
                       "--endpoint", emulator.address, "--wait", "--no-logs", "--output", "json")
    assert code == 0
    return str(json.loads(out)["name"])


@pytest.mark.slow
def test_logs_of_a_finished_job(emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    name = finished_job(emulator, tmp_path, capsys)
    code, out, err = run(capsys, "logs", name, "--endpoint", emulator.address)
    assert code == 0, err
    lines = out.splitlines()
    assert [line for line in lines if line.startswith("[workerpool0-0]")] == [
        "[workerpool0-0] chief 0", "[workerpool0-0] chief 1", "[workerpool0-0] chief 2"]
    assert "[workerpool1-0] worker ready" in lines
    assert lines[0].startswith("[service] starting 2 replica(s)")

    code, out, _ = run(capsys, "logs", name.rsplit("/", 1)[-1], "--endpoint", emulator.address,
                       "--replica", "workerpool1-0", "--output", "json")
    doc = json.loads(out)
    assert code == 0 and doc["name"] == name
    # as on Vertex AI, what a replica prints on stderr is logged as ERROR (the two streams' order may differ)
    assert sorted((e["replica"], e["text"], e["severity"]) for e in doc["entries"]) == [
        ("workerpool1-0", "worker ready", "INFO"), ("workerpool1-0", "worker warning", "ERROR")]
    assert set(doc["entries"][0]) == {"replica", "timestamp", "severity", "text"}

    code, out, _ = run(capsys, "logs", name, "--endpoint", emulator.address, "--since", "2000-01-01T00:00:00Z",
                       "--output", "json")
    assert len(json.loads(out)["entries"]) == len(lines)
    code, out, _ = run(capsys, "logs", name, "--endpoint", emulator.address, "--since", "2999-01-01T00:00:00Z")
    assert code == 0 and out == ""
    assert vxtrain.logs(name, endpoint=emulator.address, replica="workerpool0-0")[-1]["text"] == "chief 2"


def test_logs_usage_and_missing_jobs(emulator: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "logs", "1", "--endpoint", emulator.address, "--replica", "chief")[0] == 2
    assert run(capsys, "logs", "1", "--endpoint", emulator.address, "--since", "last week")[0] == 2
    code, _, err = run(capsys, "logs", "999", "--endpoint", emulator.address)
    assert code == 4 and "not found" in err


@pytest.mark.slow
def test_the_real_client_reads_an_emulated_jobs_lines(emulator: EmulatorHandle, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    name = finished_job(emulator, tmp_path, capsys)
    project, job_id = name.split("/")[1], name.rsplit("/", 1)[-1]
    client = LoggingServiceV2Client(transport=LoggingServiceV2GrpcTransport(
        channel=emulator_channel(emulator.address), credentials=AnonymousCredentials()))
    entries = list(client.list_log_entries(request={
        "resource_names": [f"projects/{project}"],
        "filter": f'resource.type="ml_job" AND resource.labels.job_id="{job_id}" AND '
                  'resource.labels.task_name="workerpool0-0"',
        "order_by": "timestamp desc"}))
    assert [e.text_payload for e in entries] == ["chief 2", "chief 1", "chief 0"]


@pytest.mark.slow
def test_follow_ends_with_the_job(emulator: EmulatorHandle, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    # The job waits for the follower to be running, so lines really arrive while it follows.
    gate = tmp_path / "go"
    chief = (f"import os, time\nwhile not os.path.exists({str(gate)!r}): time.sleep(0.02)\n"
             "for i in range(5):\n    print('epoch', i, flush=True); time.sleep(0.1)")
    code, out, _ = run(capsys, "submit", str(spec(tmp_path, chief)), "--endpoint", emulator.address,
                       "--output", "json")
    name = json.loads(out)["name"]
    opener = threading.Timer(0.5, gate.touch)
    opener.start()
    try:
        code, out, err = run(capsys, "logs", name, "--endpoint", emulator.address, "--follow",
                             "--replica", "workerpool0-0", "--output", "json")
    finally:
        opener.cancel()
    assert code == 0, err
    entries = [json.loads(line) for line in out.splitlines()]  # one object per line
    assert [e["text"] for e in entries] == [f"epoch {i}" for i in range(5)]
    assert emulator.jobs()[0].state.name == "JOB_STATE_SUCCEEDED"


@pytest.mark.slow
def test_submit_wait_streams_every_replica_and_keeps_stdout_to_its_document(
        emulator: EmulatorHandle, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, "print('chief says hi')", "print('worker says hi')")
    code, out, err = run(capsys, "submit", str(path), "--endpoint", emulator.address, "--wait", "--output", "json")
    assert code == 0 and json.loads(out)["state"] == "JOB_STATE_SUCCEEDED"
    assert "[workerpool0-0] chief says hi" in err and "[workerpool1-0] worker says hi" in err
    assert err.index("JOB_STATE_RUNNING") < err.index("[workerpool0-0] chief says hi") < err.index(
        "JOB_STATE_SUCCEEDED")
    assert "\x1b[" not in err  # piped: plain

    code, out, err = run(capsys, "wait", json.loads(out)["name"], "--endpoint", emulator.address)
    assert code == 0 and "[workerpool0-0] chief says hi" in err
    code, out, err = run(capsys, "submit", str(path), "--endpoint", emulator.address, "--wait", "--no-logs")
    assert code == 0 and "says hi" not in err


def test_a_failed_jobs_tail_is_shown(emulator: EmulatorHandle, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    chief = "import sys\nfor i in range(15): print('step', i)\nsys.exit('CUDA out of memory')"
    code, out, err = run(capsys, "submit", str(spec(tmp_path, chief, "print('fine')")),
                         "--endpoint", emulator.address, "--wait", "--output", "json")
    assert code == 3
    view = json.loads(out)  # stdout: the one document
    assert view["state"] == "JOB_STATE_FAILED" and "workerpool0-0" in view["error"]["message"]
    tail = err[err.index("the last 10 line(s) of workerpool0-0:"):]
    assert tail.splitlines()[1:11] == [f"  [workerpool0-0] step {i}" for i in range(6, 15)] + [
        "  [workerpool0-0] CUDA out of memory"]
    assert "The replica workerpool0-0 exited with a non-zero status of 1" in err


def test_target_local_shows_each_line_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "submit", str(spec(tmp_path, "print('only once')")), "--target", "local")
    assert code == 0 and err.count("only once") == 1 and "[workerpool0-0] only once" in err


def test_target_local_no_logs_shows_no_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "submit", str(spec(tmp_path, "print('not shown')")), "--target", "local",
                         "--no-logs", "--output", "json")
    assert code == 0 and json.loads(out)["state"] == "JOB_STATE_SUCCEEDED"
    assert "not shown" not in err and "JOB_STATE_SUCCEEDED" in err


@pytest.mark.slow
def test_the_quickstart_sent_to_a_standalone_emulator_runs_as_with_target_local(
        emulator: EmulatorHandle, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    """The emulator runs from another folder than the spec's; the create tells it the spec's
    local: block (workdir: quickstart) and folder, so the relative train.py is found."""
    monkeypatch.chdir(tmp_path)  # neither the emulator's workdir nor the spec's folder
    code, out, err = run(capsys, "submit", str(EXAMPLES / "quickstart.yaml"), "--endpoint", emulator.address,
                         "--wait", "--output", "json")
    assert code == 0, err
    assert json.loads(out)["state"] == "JOB_STATE_SUCCEEDED"
    assert "[workerpool0-0] chief: all 2 workers reported; done" in err
