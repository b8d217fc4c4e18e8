"""Trace context (issue 36): a TRACEPARENT from submit's environment in every pool's env and
the label vxtrain_trace, never part of the job a key names; with an OTLP endpoint, submit, each
attempt and each rung are spans, received here by an OTLP/HTTP receiver on loopback that
decodes the protobuf the exporter sends; without one, OpenTelemetry's SDK is never imported."""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from vxtrain import api as vx
from vxtrain import submission
from vxtrain.backends import vertex
from vxtrain.backends.emulator import EmulatorHandle
from vxtrain.backends.emulator.stockouts import Shortage
from vxtrain.model import TRACE_LABEL
from vxtrain.submission.plan import differences
from vxtrain.submission.trace import TraceContext, parse_traceparent, trace_from_env, with_trace
from vxtrain.vocab.kinds import CUSTOM
from tests.submission.helpers import job
from tests.submission.test_ladder import PROJECT, REGIONS, emulator, spec  # noqa: F401 - fixture

TRACE_ID, SPAN_ID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{SPAN_ID}-01"
ROOT = Path(__file__).resolve().parents[2]


# --- the carrier ------------------------------------------------------------------------------

@pytest.mark.parametrize("value", [
    TRACEPARENT, f"01-{TRACE_ID}-{SPAN_ID}-01-future", f"00-{TRACE_ID}-{SPAN_ID}-00"])
def test_a_w3c_traceparent_is_taken(value: str) -> None:
    assert parse_traceparent(value) is None


@pytest.mark.parametrize("value", [
    "00-abc-def-01", TRACEPARENT.upper(), f"ff-{TRACE_ID}-{SPAN_ID}-01", f"00-{'0' * 32}-{SPAN_ID}-01",
    f"00-{TRACE_ID}-{'0' * 16}-01", f"{TRACEPARENT}-extra", f" 00-{TRACE_ID}-{SPAN_ID}-1"])
def test_an_invalid_traceparent_is_ignored_with_one_warning(value: str, caplog: pytest.LogCaptureFixture) -> None:
    assert parse_traceparent(value.strip()) is not None
    with caplog.at_level(logging.WARNING):
        assert trace_from_env({"TRACEPARENT": value, "TRACESTATE": "a=b"}, logging.getLogger("t")) is None
    assert len(caplog.records) == 1 and "not a W3C traceparent" in caplog.records[0].getMessage()


def test_tracestate_comes_with_its_traceparent_only() -> None:
    log = logging.getLogger("t")
    assert trace_from_env({"TRACEPARENT": TRACEPARENT, "TRACESTATE": "congo=t61rcWkgMzE"}, log) == TraceContext(
        TRACEPARENT, "congo=t61rcWkgMzE")
    assert trace_from_env({"TRACESTATE": "congo=t61rcWkgMzE"}, log) is None


def test_the_trace_goes_into_every_pools_env_and_the_label() -> None:
    custom = job()
    pools = custom["jobSpec"]["workerPoolSpecs"]
    pools.append({"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "2",
                  "pythonPackageSpec": {"executorImageUri": "x", "packageUris": ["gs://b/p.tar.gz"],
                                        "pythonModule": "m", "env": [{"name": "TRACEPARENT", "value": "old"},
                                                                     {"name": "KEEP", "value": "1"}]}})
    sent = with_trace(custom, TraceContext(TRACEPARENT, "a=b"))
    assert sent["labels"][TRACE_LABEL] == TRACE_ID
    first, second = (p.get("containerSpec") or p["pythonPackageSpec"] for p in sent["jobSpec"]["workerPoolSpecs"])
    assert first["env"] == [{"name": "TRACEPARENT", "value": TRACEPARENT}, {"name": "TRACESTATE", "value": "a=b"}]
    assert second["env"] == [{"name": "KEEP", "value": "1"}, {"name": "TRACEPARENT", "value": TRACEPARENT},
                             {"name": "TRACESTATE", "value": "a=b"}]
    assert with_trace(custom, None) is custom and "env" not in pools[0]["containerSpec"]


def test_the_trace_is_not_part_of_the_job_a_key_names() -> None:
    """A re-run of a pipeline has a new trace: its job is the same job."""
    planned = job()
    found = with_trace(planned, TraceContext(f"00-{'1' * 32}-{SPAN_ID}-01", "x=y"))
    assert differences(planned, found) == []
    assert differences(with_trace(planned, TraceContext(TRACEPARENT)), found) == []


# --- through submit, on the emulator ----------------------------------------------------------

def _listed(handle: EmulatorHandle) -> list[dict[str, Any]]:
    with vertex.connect(endpoint=handle.address) as client:
        return [j for region in REGIONS for j in client.list(CUSTOM, f"projects/{PROJECT}/locations/{region}", "")]


def _env(custom: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["value"] for e in custom["jobSpec"]["workerPoolSpecs"][0]["containerSpec"].get("env", [])}


def test_a_rerun_with_a_new_trace_adopts_the_job_the_key_names(emulator: EmulatorHandle, tmp_path: Path,  # noqa: F811
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    path = spec(tmp_path, fallback=False)
    text = json.loads(path.read_text())
    text["chief"]["env"] = {"STEPS": "100"}  # an env of its own: the trace's entries are compared beside it
    path.write_text(json.dumps(text))
    monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    monkeypatch.setenv("TRACESTATE", "vendor=1")
    first = vx.submit(path, endpoint=emulator.address, idempotency_key="release-7")
    monkeypatch.setenv("TRACEPARENT", f"00-{'2' * 32}-{'3' * 16}-01")
    again = vx.submit(path, endpoint=emulator.address, idempotency_key="release-7")
    assert again["name"] == first["name"] and again["adopted"]
    [sent] = _listed(emulator)
    assert _env(sent) == {"STEPS": "100", "TRACEPARENT": TRACEPARENT, "TRACESTATE": "vendor=1"}
    assert sent["labels"][TRACE_LABEL] == TRACE_ID


class _Receiver(BaseHTTPRequestHandler):
    bodies: list[bytes]

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v1/traces":
            self.bodies.append(body)
        self.send_response(200 if self.path == "/v1/traces" else 404)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[bytes]]]:
    """An OTLP/HTTP receiver on loopback: its endpoint, and each POST /v1/traces body it took."""
    bodies: list[bytes] = []
    handler = type("Receiver", (_Receiver,), {"bodies": bodies})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", bodies
    finally:
        server.shutdown()
        server.server_close()


def _spans(bodies: list[bytes]) -> dict[str, Any]:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    spans: dict[str, Any] = {}
    for body in bodies:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource in request.resource_spans:
            names = {a.key: a.value.string_value for a in resource.resource.attributes}
            assert names["service.name"] == "vxtrain"
            for scope in resource.scope_spans:
                spans.update({span.name: span for span in scope.spans})
    return spans


def test_submit_each_attempt_and_rung_are_spans_of_the_pipelines_trace(
        emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
        receiver: tuple[str, list[bytes]]) -> None:
    pytest.importorskip("opentelemetry.sdk")
    endpoint, bodies = receiver
    emulator.stockouts.set(REGIONS[0], Shortage.stockout)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
    monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
    monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    done = vx.submit(spec(tmp_path), endpoint=emulator.address, wait=True)
    assert done["state"] == "JOB_STATE_SUCCEEDED"
    spans = _spans(bodies)
    assert set(spans) == {"vxtrain submit", "vxtrain attempt 0", "vxtrain rung 0", "vxtrain rung 1"}
    assert {s.trace_id.hex() for s in spans.values()} == {TRACE_ID}
    top = spans["vxtrain submit"]
    assert top.parent_span_id.hex() == SPAN_ID
    for name in ("vxtrain attempt 0", "vxtrain rung 0", "vxtrain rung 1"):
        assert spans[name].parent_span_id == top.span_id, name
    states = {n: {a.key: a.value for a in spans[n].attributes}["vxtrain.state"].string_value
              for n in ("vxtrain rung 0", "vxtrain rung 1")}
    assert states == {"vxtrain rung 0": "JOB_STATE_FAILED", "vxtrain rung 1": "JOB_STATE_SUCCEEDED"}
    # each job's own spans join the trace under its rung's span
    for sent in _listed(emulator):
        rung = "vxtrain rung 0" if f"/{REGIONS[0]}/" in sent["name"] else "vxtrain rung 1"
        assert _env(sent)["TRACEPARENT"] == f"00-{TRACE_ID}-{spans[rung].span_id.hex()}-01"
        assert sent["labels"][TRACE_LABEL] == TRACE_ID


@pytest.mark.slow
def test_an_unreachable_collector_changes_neither_the_exit_code_nor_the_time(
        emulator: EmulatorHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    pytest.importorskip("opentelemetry.sdk")
    import socket

    with socket.socket() as silent:  # listens, never answers: the export's own timeout bounds it
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{silent.getsockname()[1]}")
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TIMEOUT", raising=False)
        started = time.monotonic()
        done = vx.submit(spec(tmp_path, fallback=False), endpoint=emulator.address)
        took = time.monotonic() - started
    assert done["state"]
    assert took < 8, took  # the flush's bound (otel.FLUSH_S: 3 s) and the submit


# --- cold start ---------------------------------------------------------------------------------

_LOADED = """
import sys
from vxtrain.cli import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.startswith(("opentelemetry", "vxtrain.submission.otel")))
print(code, " ".join(loaded))
"""


@pytest.mark.slow
def test_without_an_endpoint_opentelemetry_is_never_imported(emulator: EmulatorHandle, tmp_path: Path) -> None:  # noqa: F811
    """validate and plan load nothing of OpenTelemetry; submit (whose google-api-core touches
    the API's namespace) never loads its SDK, its exporter, or vxtrain's OTel module."""
    path = str(spec(tmp_path, fallback=False))
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}, **emulator.gcloud_environment(),
           "TRACEPARENT": TRACEPARENT, "PYTHONPATH": str(ROOT)}
    for argv, allowed in ((["validate", path], ()), (["plan", path], ()),
                          (["submit", path, "--endpoint", emulator.address, "--no-quota-check"],
                           ("opentelemetry", "opentelemetry.instrumentation"))):
        done = subprocess.run([sys.executable, "-c", _LOADED, *argv], capture_output=True, text=True, env=env,
                              cwd=ROOT, timeout=120, check=True)
        out = done.stdout.splitlines()[-1].split()
        assert out[0] == "0", (argv, out, done.stderr[-2000:])
        extra = [m for m in out[1:] if m not in allowed and not m.startswith("opentelemetry.instrumentation.")]
        assert extra == [], (argv[0], extra)
