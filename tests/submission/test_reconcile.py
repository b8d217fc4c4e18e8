"""``vxtrain reconcile``: a stateless pass carries every unfinished life kept in a bucket one
step on. Against the emulator (its ``--preempt``, its create faults) and fake-gcs-server
(generation preconditions enforced): a detached, preempted job carried to SUCCEEDED, the
calls a pass costs, a deleted life left alone, and racing reconcilers and watchers making
exactly one job per attempt."""
from __future__ import annotations

import hmac
import io
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from hashlib import sha256
from pathlib import Path
from typing import Any

import pytest

from tests.hooks import webhook
from tests.incli import run
from tests.packaging.conftest import bucket, gcs, gcs_server_url  # noqa: F401 - fixtures (fake-gcs-server)
from tests.polling import wait_for
from tests.processes import stop
from tests.backends.emulator.test_emulator_cli import emulator as emulator_process
from tests.submission.test_trace import SPAN_ID, TRACE_ID, TRACEPARENT, _spans, receiver  # noqa: F401 - fixture
from tests.submission.test_trace import _env as trace_env
from vxtrain.backends import vertex
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.model import ATTEMPT_LABEL, TRACE_LABEL
from vxtrain.submission import Session
from vxtrain.submission.names import LABEL_KEY, label_value
from vxtrain.submission.notify import event_id
from vxtrain.submission.stored import plan_path
from vxtrain.vocab.kinds import CUSTOM, JobState

ROOT = Path(__file__).resolve().parents[2]
PROJECT, REGION, EAST = "p", "us-central1", "us-east1"
CANCELLED = ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")


@pytest.fixture
def preempting() -> Iterator[EmulatorHandle]:
    """Jobs succeed 0.6 s after they start (simulated); the first one in us-central1 loses its
    machines after 0.15 s RUNNING."""
    handle = start_emulator(simulate_seconds=0.6, preempt=[f"{REGION}:0.15:1"], environ={}, out=io.StringIO())
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def spec(tmp_path: Path, name: str = "job.yaml", **extra: Any) -> Path:
    text = {"display_name": "carried", "project": PROJECT, "region": REGION, "base_output_dir": "gs://b/run",
            "recovery": {"max_recoveries": 2},
            "chief": {"machine_type": "n1-standard-4", "image": "us-docker.pkg.dev/p/r/train:1",
                      "command": ["true"]}, **extra}
    path = tmp_path / name
    path.write_text(json.dumps(text))
    return path


def jobs_of(address: str, key: str, region: str = REGION) -> list[dict[str, Any]]:
    with Session(endpoint=address) as session:
        views = session.jobs(PROJECT, region, f'labels.{LABEL_KEY}="{label_value(key)}"')
    return sorted((v.to_json() | {"attempt": v.label_number(ATTEMPT_LABEL)} for v in views),
                  key=lambda j: j["create_time"])


def plan_of(gcs: Any, bucket: str, key: str) -> dict[str, Any]:
    blob = gcs.bucket(bucket).get_blob(plan_path(PROJECT, REGION, key))
    assert blob is not None, key
    loaded: dict[str, Any] = json.loads(blob.download_as_bytes())
    return loaded


def reconcile(capsys: pytest.CaptureFixture[str], address: str, bucket: str, *flags: str) -> tuple[int, Any, str]:
    return run(capsys, "reconcile", "--bucket", f"gs://{bucket}", "--endpoint", address, "-o", "json", *flags)


def test_reconcile_carries_a_detached_preempted_job_to_succeeded(
        preempting: EmulatorHandle, tmp_path: Path, gcs: Any, bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    """submit without --wait (the laptop closed): attempt 0 is preempted with nobody following it;
    reconcile passes create attempt 1 under its lease, see it succeed and finish the plan."""
    code, first, err = run(capsys, "submit", str(spec(tmp_path)), "--endpoint", preempting.address, "-o", "json",
                           "--idempotency-key", "detached", "--staging-bucket", f"gs://{bucket}")
    assert code == 0, err
    wait_for(lambda: jobs_of(preempting.address, "detached")[0]["state"] == "JOB_STATE_FAILED", 30,
             "attempt 0 to lose its machines")
    code, doc, err = reconcile(capsys, preempting.address, bucket)
    assert code == 0, err
    [line] = doc["plans"]
    assert (line["key"], line["attempt"], line["action"]) == ("detached", 1, "create"), doc
    assert list(line) == ["key", "state", "attempt", "rung", "job", "action", "cost_usd"]  # the contract's
    assert len(doc["created"]) == 1 and doc["finished"] == []
    wait_for(lambda: jobs_of(preempting.address, "detached")[-1]["state"] == "JOB_STATE_SUCCEEDED", 30,
             "attempt 1 to succeed")
    code, doc, err = reconcile(capsys, preempting.address, bucket)
    assert code == 0 and doc["finished"] == ["detached"] and doc["created"] == [], (doc, err)
    jobs = jobs_of(preempting.address, "detached")
    assert [(j["attempt"], j["state"]) for j in jobs] == [(0, "JOB_STATE_FAILED"), (1, "JOB_STATE_SUCCEEDED")]
    assert jobs[0]["name"] == first["name"]
    plan = plan_of(gcs, bucket, "detached")
    assert plan["finished"]["outcome"] == "succeeded" and plan["finished"]["job"] == jobs[1]["name"]
    code, doc, err = reconcile(capsys, preempting.address, bucket)
    assert code == 0 and doc == {"plans": [], "created": [], "cancelled": [], "finished": []}, err


def test_reconcile_sends_to_the_hooks_the_plan_names_by_environment_variable(
        preempting: EmulatorHandle, tmp_path: Path, gcs: Any, bucket: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A plan never holds a URL (a secret): `notify: [{url_env: NAME}]` is kept by name, and the
    reconcile pass reads NAME where it runs; a literal URL is not kept, and submit says so."""
    with webhook() as hook, webhook() as literal:
        monkeypatch.setenv("VX_TEST_HOOK", hook.url)
        monkeypatch.setenv("VX_TEST_SECRET", "reconcile-secret")
        path = spec(tmp_path, notify=[{"url_env": "VX_TEST_HOOK", "secret_env": "VX_TEST_SECRET"}, literal.url])
        code, _, err = run(capsys, "submit", str(path), "--endpoint", preempting.address, "--idempotency-key",
                           "hooked", "--staging-bucket", f"gs://{bucket}")
        assert code == 0 and "is not kept in the plan" in err, err
        plan = plan_of(gcs, bucket, "hooked")
        assert plan["notify"] == [{"url_env": "VX_TEST_HOOK", "secret_env": "VX_TEST_SECRET"}]
        kept = json.dumps(plan)
        assert literal.url not in kept and hook.url not in kept and "reconcile-secret" not in kept
        wait_for(lambda: jobs_of(preempting.address, "hooked")[0]["state"] == "JOB_STATE_FAILED", 30,
                 "attempt 0 to lose its machines")
        code, doc, err = reconcile(capsys, preempting.address, bucket)
        assert code == 0 and len(doc["created"]) == 1, (doc, err)
        wait_for(lambda: jobs_of(preempting.address, "hooked")[-1]["state"] == "JOB_STATE_SUCCEEDED", 30,
                 "attempt 1 to succeed")
        code, doc, err = reconcile(capsys, preempting.address, bucket)
        assert code == 0 and doc["finished"] == ["hooked"], (doc, err)
    assert [b["event"] for b in hook.bodies()] == ["recovering", "succeeded"]
    for (_, headers, body), raw in zip(hook.posts, hook.raws, strict=True):  # signed with the secret read there
        assert headers["X-Vxtrain-Signature"] == "sha256=" + hmac.new(b"reconcile-secret", raw, sha256).hexdigest()
        assert headers["X-Vxtrain-Event-Id"] == body["id"] == event_id("hooked", body["attempt"], body["event"])
    assert [b["event"] for b in literal.bodies()] == []  # only this submit, while following, could send there


def test_a_pass_costs_one_list_per_project_and_region_and_one_create_per_attempt(
        tmp_path: Path, gcs: Any, bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Four plans over two regions; the first job of each region loses its machines. One pass:
    one List per (project, region), one create per attempt needed (each create lists its labels
    once under its lease and once for the label protocol's election), no Get; the two lives
    that succeeded are finished with no call at all."""
    with start_emulator(simulate_seconds=0.4, preempt=[f"{REGION}:0.1:1", f"{EAST}:0.1:1"], environ={},
                        out=io.StringIO()) as handle:
        places = {f"calls-{n}": region for n, region in enumerate([REGION, REGION, EAST, EAST])}
        for key, region in places.items():
            code, _, err = run(capsys, "submit", str(spec(tmp_path, f"{key}.yaml", region=region)), "--endpoint",
                               handle.address, "--idempotency-key", key, "--staging-bucket", f"gs://{bucket}")
            assert code == 0, err
        for key, region in places.items():
            wait_for(lambda key=key, region=region: JobState(jobs_of(handle.address, key, region)[0]["state"])  # type: ignore[misc]
                     .terminal, 30, f"attempt 0 of {key} to end")
        before = {m: handle.calls[m] for m in ("ListCustomJobs", "CreateCustomJob", "GetCustomJob")}
        code, doc, err = reconcile(capsys, handle.address, bucket)
        spent = {m: handle.calls[m] - n for m, n in before.items()}
    assert code == 0, err
    assert sorted(doc["finished"]) == ["calls-1", "calls-3"] and len(doc["created"]) == 2, doc
    assert spent == {"ListCustomJobs": 2 + 2 * 2, "CreateCustomJob": 2, "GetCustomJob": 0}, spent


def test_a_life_whose_jobs_were_deleted_is_finished_never_recreated(
        preempting: EmulatorHandle, tmp_path: Path, gcs: Any, bucket: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = run(capsys, "submit", str(spec(tmp_path)), "--endpoint", preempting.address, "-o", "json",
                         "--idempotency-key", "gone", "--staging-bucket", f"gs://{bucket}")
    assert code == 0, err
    preempting.emulator.cancel(CUSTOM, doc["name"])
    preempting.emulator.wait(doc["name"])
    preempting.emulator.delete(CUSTOM, doc["name"])
    code, out, err = reconcile(capsys, preempting.address, bucket)
    assert code == 0 and out["finished"] == ["gone"] and out["created"] == [], (out, err)
    assert "deleted" in err and plan_of(gcs, bucket, "gone")["finished"]["outcome"] == "deleted"
    assert preempting.jobs() == []


def test_reconcile_needs_a_bucket(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "reconcile")
    assert code == 2 and "--bucket" in err


# --- racing reconcilers and watchers, under create faults -------------------------------------------

KEYS = 10
#: Per round: reconcile passes, and `submit --wait` watchers per key.
RECONCILERS, WATCHERS = 6, 2
FAULTS = ("create:deadline-after-commit:4", "create:unavailable-before-commit:4", "create:deadline-commit-late:2")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def _start(*argv: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "vxtrain", *argv], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, env=_env())


@pytest.mark.slow
def test_racing_reconcilers_and_watchers_make_one_job_per_attempt(tmp_path: Path, gcs: Any, bucket: str) -> None:
    """10 keys, each preempted twice (attempts 0 and 1 lose their machines, attempt 2 succeeds);
    per round 6 reconcile passes and 2 `submit --wait` watchers per key race under create faults.
    Every attempt is one live job (a racer's duplicate cancelled), attempt N+1 created only after
    attempt N ended, and every plan ends SUCCEEDED, finished."""
    path = spec(tmp_path)
    flags = [f"--fault={f}" for f in FAULTS]
    with emulator_process("--simulate", "2", "--preempt", f"{REGION}:0.3:{2 * KEYS}", *flags) as address:
        for n in range(KEYS):  # detached: no follower
            done = subprocess.run([sys.executable, "-m", "vxtrain", "submit", str(path), "--endpoint", address,
                                   "--idempotency-key", f"race-{n}", "--staging-bucket", f"gs://{bucket}"],
                                  cwd=ROOT, capture_output=True, text=True, timeout=120, env=_env())
            assert done.returncode == 0, done.stderr
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            procs = [_start("reconcile", "--bucket", f"gs://{bucket}", "--endpoint", address, "-o", "json")
                     for _ in range(RECONCILERS)]
            procs += [_start("submit", str(path), "--endpoint", address, "--idempotency-key", f"race-{n}",
                             "--staging-bucket", f"gs://{bucket}", "--wait", "--no-logs", "-o", "json")
                      for n in range(KEYS) for _ in range(WATCHERS)] if not _all_done(gcs, bucket) else []
            try:
                for proc in procs:
                    _, err = proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
                    assert proc.returncode in (0, 5), err[-3000:]
            finally:
                for proc in procs:
                    stop(proc, signal.SIGKILL, timeout=5)
            if _all_done(gcs, bucket):
                break
        time.sleep(3)  # a late commit shows up by now
        for n in range(KEYS):
            _one_job_per_attempt(address, f"race-{n}")
            assert plan_of(gcs, bucket, f"race-{n}")["finished"]["outcome"] == "succeeded"


def _all_done(gcs: Any, bucket: str) -> bool:
    return all(plan_of(gcs, bucket, f"race-{n}")["finished"] is not None for n in range(KEYS))


def _one_job_per_attempt(address: str, key: str) -> None:
    jobs = jobs_of(address, key)
    live = [j for j in jobs if j["state"] not in CANCELLED]
    assert [(j["attempt"], j["state"]) for j in live] == [
        (0, "JOB_STATE_FAILED"), (1, "JOB_STATE_FAILED"), (2, "JOB_STATE_SUCCEEDED")], (key, jobs)
    for before, after in zip(live, live[1:]):  # never two attempts alive
        assert before["end_time"] <= after["create_time"], (key, before, after)
    for job in jobs:
        if job["state"] in CANCELLED:  # a duplicate, cancelled, of an attempt that has its one job
            assert not job.get("start_time") and job["attempt"] in (0, 1, 2), (key, job)
    assert JobState(live[-1]["state"]) is JobState.SUCCEEDED


def test_a_pass_is_a_span_of_the_callers_trace_with_each_attempt_it_creates_under_it(
        preempting: EmulatorHandle, tmp_path: Path, gcs: Any, bucket: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, receiver: tuple[str, list[bytes]]) -> None:
    """With an OTLP endpoint and a TRACEPARENT (a scheduler's, a pipeline step's), the pass is
    the span "vxtrain reconcile" under the caller's span, the attempt it creates a child of the
    pass, and that job's pools carry the rung's span as their TRACEPARENT."""
    pytest.importorskip("opentelemetry.sdk")
    code, _, err = run(capsys, "submit", str(spec(tmp_path)), "--endpoint", preempting.address, "-o", "json",
                       "--idempotency-key", "traced", "--staging-bucket", f"gs://{bucket}")
    assert code == 0, err
    wait_for(lambda: jobs_of(preempting.address, "traced")[0]["state"] == "JOB_STATE_FAILED", 30,
             "attempt 0 to lose its machines")
    endpoint, bodies = receiver
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    code, doc, err = reconcile(capsys, preempting.address, bucket)
    assert code == 0 and len(doc["created"]) == 1, (doc, err)
    spans = _spans(bodies)
    top = spans["vxtrain reconcile"]
    assert top.trace_id.hex() == TRACE_ID and top.parent_span_id.hex() == SPAN_ID
    attrs = {a.key: a.value for a in top.attributes}
    assert attrs["vxtrain.bucket"].string_value == bucket and attrs["vxtrain.created"].int_value == 1
    children = {name: span for name, span in spans.items() if name != "vxtrain reconcile"}
    assert "vxtrain attempt 1" in children, sorted(spans)
    assert {s.trace_id.hex() for s in children.values()} == {TRACE_ID}
    assert children["vxtrain attempt 1"].parent_span_id == top.span_id
    with vertex.connect(endpoint=preempting.address) as client:
        [sent] = [j for j in client.list(CUSTOM, f"projects/{PROJECT}/locations/{REGION}", "")
                  if j["labels"].get(ATTEMPT_LABEL) == "1"]
    assert sent["labels"][TRACE_LABEL] == TRACE_ID
    assert trace_env(sent)["TRACEPARENT"].startswith(f"00-{TRACE_ID}-"), sent
