"""The emulator's REST port (``vxtrain emulator --http-port``), driven by clients no one here wrote:
the real gcloud, the GAPIC clients' REST transport, and plain HTTP as curl sends it.

One emulator for the module, started as a user starts it (``vxtrain emulator --port 0
--http-port 0``, no ``VXTRAIN_EMULATOR_TOKEN``: it writes its token to a file); gcloud gets
the settings it printed (the token file among them), a private ``CLOUDSDK_CONFIG``, and
every other host through a "proxy" that is the emulator's REST port (so a request for
anything else fails the command). Without gcloud the gcloud test skips, saying
so; under CI it fails (tests/test_convert_gcloud.py's rule).
"""
from __future__ import annotations

import http.client
import io
import json
import os
import re
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport
from google.oauth2.credentials import Credentials

from tests.processes import stop
from tests.test_convert_gcloud import _environment, _gcloud, _run
from vxtrain.backends.emulator import (
    Emulator, jobservice, logging_service, persistent_resources, quotas, rest, start_emulator,
)
from vxtrain.backends.emulator.auth import private
from vxtrain.backends.emulator.faults import FaultPlan
from vxtrain.backends.emulator.quotas import QuotaStore
from vxtrain.backends.emulator.server import REST_SERVICES, EmulatorHandle
from vxtrain.backends.tokens import TOKEN_ENV
from vxtrain.backends.vertex import emulator_channel
from vxtrain.errors import UsageError, VxtrainError
from vxtrain.render import emulator_started

ROOT = Path(__file__).resolve().parents[3]
PARENT = "projects/vxtrain-gcloud-test/locations/us-central1"  # gcloud's project and region (_environment)
HELLO = """\
workerPoolSpecs:
  - machineSpec: {machineType: n1-standard-4}
    replicaCount: 1
    containerSpec:
      imageUri: python
      command: [python3, -c, "print('hello over REST')"]
"""
LONG = HELLO.replace("print('hello over REST')", "import time; time.sleep(120)")
STUDY = """\
studySpec:
  metrics: [{metricId: accuracy, goal: MAXIMIZE}]
  parameters: [{parameterId: lr, doubleValueSpec: {minValue: 0.001, maxValue: 0.1}}]
trialJobSpec:
""" + "".join(f"  {line}\n" for line in HELLO.splitlines())
_SUBMITTED = re.compile(r"CustomJob \[(?P<name>[^\]]+)\] is submitted successfully")


@dataclass(frozen=True)
class Served:
    """The module's emulator: its gRPC address, REST URL, the lines it printed on start, its token."""

    address: str
    url: str
    banner: list[str]
    token: str

    @property
    def bearer(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    log = tmp_path_factory.mktemp("rest") / "emulator.log"
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "vxtrain", "emulator", "--port", "0", "--http-port", "0"],
                                cwd=ROOT, stdout=sink, stderr=sink, text=True, start_new_session=True,
                                env={**_without_token(os.environ), "PYTHONPATH": str(ROOT)})
    try:
        banner = _banner(log, proc)
        token = Path(_settings(banner)["CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"]).read_text()
        yield Served(banner[0].rsplit(" ", 1)[1], banner[1].rsplit(" ", 1)[1], banner, token)
    finally:
        stop(proc, signal.SIGINT, timeout=30)
    assert proc.returncode == 0, log.read_text()


def _without_token(environ: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k != TOKEN_ENV}


def _banner(log: Path, proc: subprocess.Popen[str]) -> list[str]:
    """The start lines, once the last (gcloud's credentials setting) is written."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        lines = log.read_text().splitlines()
        if any(line.startswith("CLOUDSDK_AUTH_") for line in lines):
            return lines
        time.sleep(0.05)
    raise AssertionError(f"the emulator did not print its settings:\n{log.read_text()}")


def _settings(banner: list[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in banner if line.startswith("CLOUDSDK_"))


def _grpc_client(served: Served) -> aiplatform_v1.JobServiceClient:
    return aiplatform_v1.JobServiceClient(
        transport=JobServiceGrpcTransport(channel=emulator_channel(served.address, served.token)))


def _rest_client(served: Served) -> aiplatform_v1.JobServiceClient:
    """The GAPIC client over REST, with the token as its OAuth access token."""
    return aiplatform_v1.JobServiceClient(transport="rest", credentials=Credentials(served.token),
                                          client_options={"api_endpoint": served.url.rstrip("/")})


def _http(url: str, verb: str, path: str, body: bytes | None = None,
          headers: dict[str, str] | None = None) -> tuple[int, Any, http.client.HTTPMessage]:
    """One request as curl sends it; (status, JSON body, headers)."""
    host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    try:
        connection.request(verb, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, json.loads(response.read()), response.headers
    finally:
        connection.close()


def _until_done(client: aiplatform_v1.JobServiceClient, name: str, get: str = "get_custom_job") -> Any:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        job = getattr(client, get)(name=name)
        if job.end_time:
            return job
        time.sleep(0.1)
    raise AssertionError(f"{name} did not end")


# --- gcloud, end to end ------------------------------------------------------------------

@pytest.mark.slow
def test_the_emulator_prints_gclouds_settings_for_its_rest_port(served: Served) -> None:
    assert served.banner[0].startswith("vxtrain emulator listening on 127.0.0.1:")
    assert re.fullmatch(r"vxtrain emulator serving REST on http://127\.0\.0\.1:\d+/", served.banner[1])
    assert served.url != f"http://{served.address}/"  # two ports
    settings = _settings(served.banner)
    assert {settings[f"CLOUDSDK_API_ENDPOINT_OVERRIDES_{api}"] for api in ("AIPLATFORM", "LOGGING")} == {served.url}
    assert "CLOUDSDK_AUTH_DISABLE_CREDENTIALS" not in settings  # gcloud sends the token from its file


def test_without_a_token_file_the_banner_says_how_gcloud_gets_the_token() -> None:
    """An emulator whose token came from VXTRAIN_EMULATOR_TOKEN: gcloud takes a token only from a file."""
    out = io.StringIO()
    emulator_started("127.0.0.1:1", "http://127.0.0.1:2/", rest.gcloud_environment("http://127.0.0.1:2/"), out)
    lines = out.getvalue().splitlines()
    assert lines[:2] == ["vxtrain emulator listening on 127.0.0.1:1",
                         "vxtrain emulator serving REST on http://127.0.0.1:2/"]
    assert not any(line.startswith("CLOUDSDK_AUTH_") for line in lines)
    assert "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE" in lines[-1]
    out = io.StringIO()
    emulator_started("127.0.0.1:1", None, {}, out)
    assert out.getvalue() == "vxtrain emulator listening on 127.0.0.1:1\n"  # no REST port: the line it always was


@pytest.mark.slow
def test_gcloud_runs_a_job_that_the_grpc_client_sees(served: Served, tmp_path: Path) -> None:
    """create, describe, list, stream-logs, cancel, hp-tuning-jobs create: what gcloud
    creates over REST runs, and the gRPC client reads it from the same store."""
    _gcloud()
    (tmp_path / "config").mkdir()
    env = {**_environment(tmp_path / "config", SimpleNamespace(url=served.url)), **_settings(served.banner)}
    del env["CLOUDSDK_AUTH_DISABLE_CREDENTIALS"]  # the recorder's setting: the emulator wants its token
    for name, text in (("hello.yaml", HELLO), ("long.yaml", LONG), ("study.yaml", STUDY)):
        (tmp_path / name).write_text(text)
    grpc_client = _grpc_client(served)

    def gcloud(command: str) -> str:
        """gcloud's stdout; its stderr (where it says what it did) after a line "--"."""
        code, out, err = _run(f"gcloud ai {command}", tmp_path, env)
        assert code == 0, f"gcloud ai {command}\n{err}"
        return f"{out}\n--\n{err}"

    created = gcloud("custom-jobs create --config hello.yaml --region us-central1 --display-name hello")
    hello = _SUBMITTED.search(created)["name"]  # type: ignore[index]
    assert _until_done(grpc_client, hello).state == aiplatform_v1.JobState.JOB_STATE_SUCCEEDED
    # stream-logs checks whether to go on every --polling-interval s (60 by default): it runs beside the rest
    logs = subprocess.Popen(["gcloud", "ai", "custom-jobs", "stream-logs", hello, "--polling-interval", "1"],
                            cwd=tmp_path, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        described = json.loads(gcloud(f"custom-jobs describe {hello} --format json").split("\n--\n")[0])
        assert (described["state"], described["displayName"]) == ("JOB_STATE_SUCCEEDED", "hello")
        assert hello in gcloud("custom-jobs list --region us-central1 --format 'value(name)'")

        long = _SUBMITTED.search(gcloud("custom-jobs create --config long.yaml --region us-central1 "
                                        "--display-name long"))["name"]  # type: ignore[index]
        gcloud(f"custom-jobs cancel {long}")
        assert _until_done(grpc_client, long).state == aiplatform_v1.JobState.JOB_STATE_CANCELLED

        gcloud("hp-tuning-jobs create --config study.yaml --region us-central1 --display-name study "
               "--max-trial-count 2 --parallel-trial-count 1")
        studies = grpc_client.list_hyperparameter_tuning_jobs(
            request={"parent": PARENT, "filter": 'display_name="study"'})
        (study,) = list(studies)
        assert _until_done(grpc_client, study.name, "get_hyperparameter_tuning_job").state == \
            aiplatform_v1.JobState.JOB_STATE_SUCCEEDED
        out, err = logs.communicate(timeout=90)
    finally:
        stop(logs)
    assert logs.returncode == 0, err
    assert re.search(r"workerpool0-0\s+hello over REST", out), out


# --- the GAPIC REST transport, curl ---------------------------------------------------

@pytest.mark.slow
def test_the_gapic_rest_transport_and_grpc_share_one_store(served: Served) -> None:
    rest_client = _rest_client(served)
    job = aiplatform_v1.CustomJob(display_name="over-rest", labels={"via": "rest"}, job_spec={"worker_pool_specs": [{
        "machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1,
        "container_spec": {"image_uri": "python", "command": ["python3", "-c", "pass"]}}]})
    created = [rest_client.create_custom_job(parent=PARENT, custom_job=job) for _ in range(2)]
    assert rest_client.get_custom_job(name=created[0].name).labels == {"via": "rest"}
    pages = list(rest_client.list_custom_jobs(request={"parent": PARENT, "page_size": 1,
                                                       "filter": 'labels.via="rest"'}).pages)
    assert [len(page.custom_jobs) for page in pages] == [1, 1]  # pageSize and pageToken on the query
    assert {page.custom_jobs[0].name for page in pages} == {c.name for c in created}

    grpc_client = _grpc_client(served)
    for one in created:
        assert grpc_client.get_custom_job(name=one.name).display_name == "over-rest"
        _until_done(rest_client, one.name)
    rest_client.delete_custom_job(name=created[0].name).result()
    with pytest.raises(gexc.NotFound):
        grpc_client.get_custom_job(name=created[0].name)


def test_errors_come_in_googles_shape(served: Served) -> None:
    missing = f"/v1/{PARENT}/customJobs/1"
    cases = [
        ("GET", "/v1/nothing/here", None, 404, "NOT_FOUND", "Method not found."),
        ("PUT", missing, None, 404, "NOT_FOUND", "takes DELETE or GET, not PUT"),
        ("POST", f"/v1/{PARENT}/customJobs", b"{not json", 400, "INVALID_ARGUMENT", "Invalid JSON payload"),
        ("POST", f"/v1/{PARENT}/customJobs", b'{"bogus": 1}', 400, "INVALID_ARGUMENT", 'no field named "bogus"'),
        ("GET", f"/v1/{PARENT}/customJobs?bogus=1", None, 400, "INVALID_ARGUMENT", "Cannot bind query parameter"),
        ("GET", f"{missing}?alt=json", None, 404, "NOT_FOUND", "does not exist"),
    ]
    for verb, path, body, status, code, said in cases:
        got, answer, headers = _http(served.url, verb, path, body, served.bearer)
        assert (got, answer["error"]["code"], answer["error"]["status"]) == (status, status, code), answer
        assert said in answer["error"]["message"], answer
        assert headers["Content-Type"].startswith("application/json")
    # What http.server refuses before any route is asked: still Google's shape, not an HTML page.
    got, answer, _ = _http(served.url, "OPTIONS", f"/v1/{PARENT}/customJobs", None, served.bearer)
    assert (got, answer["error"]["status"]) == (501, "UNIMPLEMENTED")
    got, answer, _ = _http(served.url, "POST", f"/v1/{PARENT}/customJobs", None,
                           {**served.bearer, "Content-Length": "-1"})
    assert (got, answer["error"]["status"]) == (400, "INVALID_ARGUMENT")
    head, answer = _raw(served.url, f"POST /v1/{PARENT}/customJobs HTTP/1.1\r\nHost: h\r\n"
                                    f"Authorization: Bearer {served.token}\r\nTransfer-Encoding: chunked\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 411") and answer["error"]["code"] == 411, (head, answer)


def test_every_call_needs_the_token(served: Served) -> None:
    for headers in ({}, {"Authorization": "Bearer not-the-token"}):
        status, answer, sent = _http(served.url, "GET", f"/v1/{PARENT}/customJobs", headers=headers)
        assert (status, answer["error"]["code"], answer["error"]["status"]) == (401, 401, "UNAUTHENTICATED")
        assert sent["WWW-Authenticate"] == "Bearer"
    assert _http(served.url, "GET", "/v1/no/such/path")[0] == 401  # before routing: nothing is told


def test_log_entries_and_quota_infos_answer_on_their_rest_paths(served: Served) -> None:
    def call(verb: str, path: str, body: Any = None) -> tuple[int, Any]:
        status, answer, _ = _http(served.url, verb, path, None if body is None else json.dumps(body).encode(),
                                  served.bearer)
        return status, answer

    assert call("POST", "/v2/entries:list", {"resourceNames": ["projects/nobody"], "pageSize": 5}) == (200, {})
    status, answer = call("POST", "/v2/entries:list", {"resourceNames": ["x"]})
    assert (status, answer["error"]["status"]) == (400, "INVALID_ARGUMENT")
    status, answer = call("GET", "/v1/projects/p/locations/us-central1/services/s/quotaInfos")
    assert (status, answer["error"]["status"]) == (400, "INVALID_ARGUMENT")  # quotaInfos live under global
    assert call("GET", "/v1/projects/p/locations/global/services/s/quotaInfos") == (200, {})


@pytest.mark.slow
def test_faults_apply_on_rest_as_on_grpc() -> None:
    handle = start_emulator(out=io.StringIO(), environ={}, http_port=0,
                            faults=["list:unavailable:1", "quotas:permission:1"])
    try:
        url, bearer = handle.http_url or "", _bearer(handle)
        status, answer, _ = _http(url, "GET", f"/v1/{PARENT}/customJobs", headers=bearer)
        assert (status, answer["error"]["status"]) == (503, "UNAVAILABLE")
        assert _http(url, "GET", f"/v1/{PARENT}/customJobs", headers=bearer)[:2] == (200, {})
        status, answer, _ = _http(url, "GET", "/v1/projects/p/locations/global/services/s/quotaInfos", headers=bearer)
        assert (status, answer["error"]["status"]) == (403, "PERMISSION_DENIED")
    finally:
        handle.stop()


def _bearer(handle: EmulatorHandle) -> dict[str, str]:
    assert handle.token is not None
    return {"Authorization": f"Bearer {handle.token.value}"}


@pytest.mark.slow
def test_the_rest_server_asks_its_gate_of_every_call() -> None:
    """The seam the emulator's token plugs into: its gate judges every call and words the
    refusal, as the gRPC port words it (a private token's says so, and names no variable)."""
    server = rest.serve([quotas.service(QuotaStore(), FaultPlan())], ["127.0.0.1"], 0, gate=private("t0ken"))
    try:
        url = f"http://127.0.0.1:{server.port}/"
        path = "/v1/projects/p/locations/global/services/s/quotaInfos"
        for headers in ({}, {"Authorization": "Bearer wrong"}):
            status, answer, sent = _http(url, "GET", path, headers=headers)
            assert (status, answer["error"]["code"], answer["error"]["status"]) == (401, 401, "UNAUTHENTICATED")
            assert sent["WWW-Authenticate"] == "Bearer"
            assert answer["error"]["message"] == private("t0ken").refusal(headers.get("Authorization"))
            assert "is private to the process that started it" in answer["error"]["message"]
            assert TOKEN_ENV not in answer["error"]["message"]
        assert _http(url, "GET", path, headers={"Authorization": "Bearer t0ken"})[:2] == (200, {})
    finally:
        server.stop()


def _raw(url: str, request: str) -> tuple[bytes, Any]:
    """Send ``request`` as written; the answer's head and JSON body, once the server closed."""
    host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request.encode())
        answer = b""
        while chunk := sock.recv(65536):  # the server closes: recv ends (a timeout fails the test)
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return head, json.loads(body)


@pytest.mark.slow
def test_a_caller_without_the_token_gets_401_before_its_body_is_read() -> None:
    """A body announced as 1 GB and never sent: 401 at once, and the connection closed (its
    body unread), not a thread waiting for bytes that would be buffered. A small body (a
    client with a wrong token) is read and dropped: its connection goes on."""
    server = rest.serve([quotas.service(QuotaStore(), FaultPlan())], ["127.0.0.1"], 0, gate=private("t0ken"))
    url = f"http://127.0.0.1:{server.port}/"
    try:
        head, answer = _raw(url, "POST /v1/x HTTP/1.1\r\nHost: h\r\nContent-Length: 1000000000\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 401") and b"Connection: close" in head, head
        assert answer["error"]["status"] == "UNAUTHENTICATED"
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            path = "/v1/projects/p/locations/global/services/s/quotaInfos"
            connection.request("POST", "/v1/x", body=b'{"a": 1}', headers={"Authorization": "Bearer wrong"})
            assert connection.getresponse().read() and connection.sock is not None  # still open
            connection.request("GET", path, headers={"Authorization": "Bearer t0ken"})
            assert connection.getresponse().status == 200
        finally:
            connection.close()
    finally:
        server.stop()


@pytest.mark.slow
def test_rest_calls_are_counted_with_the_grpc_ones() -> None:
    """``handle.calls`` counts an RPC by its name whichever port it came by; a refused call
    or a path no rule matches is not a call of any RPC."""
    handle = start_emulator(out=io.StringIO(), environ={}, http_port=0)
    try:
        url, bearer = handle.http_url or "", _bearer(handle)
        assert _http(url, "GET", f"/v1/{PARENT}/customJobs", headers=bearer)[0] == 200
        assert _http(url, "POST", "/v2/entries:list", b'{"resourceNames": ["projects/p"]}', bearer)[0] == 200
        assert _http(url, "GET", f"/v1/{PARENT}/customJobs")[0] == 401
        assert _http(url, "GET", "/v1/no/such/path", headers=bearer)[0] == 404
        with emulator_channel(handle.address, handle.token.value if handle.token else None) as channel:
            client = aiplatform_v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))
            list(client.list_custom_jobs(parent=PARENT))
        assert handle.calls.snapshot() == {"ListCustomJobs": 2, "ListLogEntries": 1}
    finally:
        handle.stop()


@pytest.mark.slow
def test_stop_ends_keep_alive_connections() -> None:
    """HTTP/1.1 clients keep their connection open; stop() hangs up on them instead of
    waiting (tests/conftest.py's leak check fails a thread left behind)."""
    handle = start_emulator(out=io.StringIO(), environ={}, http_port=0)
    connection = http.client.HTTPConnection("127.0.0.1", handle.rest.port if handle.rest else 0, timeout=30)
    try:
        connection.request("GET", f"/v1/{PARENT}/customJobs", headers=_bearer(handle))
        assert connection.getresponse().read() == b"{}"
        started = time.monotonic()
        handle.stop()
        assert time.monotonic() - started < 5
    finally:
        connection.close()
        handle.stop()


@pytest.mark.slow
def test_the_rest_port_is_bound_exclusively_and_on_loopback_only() -> None:
    handle = start_emulator(out=io.StringIO(), environ={}, http_port=0)
    try:
        assert handle.rest is not None
        with pytest.raises(VxtrainError, match="--http-port"):
            start_emulator(out=io.StringIO(), environ={}, http_port=handle.rest.port)
    finally:
        handle.stop()
    with pytest.raises(UsageError, match="refusing to serve on 0.0.0.0"):
        start_emulator(host="0.0.0.0", environ={}, http_port=0)


# --- the routes ------------------------------------------------------------------------

def test_every_served_rpc_has_a_rest_route() -> None:
    """An RPC served on the gRPC port without an http rule (a new one, a service whose
    rules are not read) fails here, not in a user's gcloud."""
    emulator = Emulator(out=io.StringIO())
    try:
        services = [build(emulator) for build in REST_SERVICES]
        assert {s.name for s in services} == {jobservice.SERVICE, logging_service.SERVICE,
                                              persistent_resources.SERVICE, quotas.SERVICE}
        for service in services:
            for rpc in service.rpcs:
                assert rest.http_rules(service.name, rpc), f"{service.name}.{rpc} has no google.api.http rule"
        table = {(r.verb, r.path.pattern) for r in rest.routes(services)}
    finally:
        emulator.close()
    assert table >= {
        ("POST", "/v2/entries:list"),
        ("GET", "/v1/(projects/[^/]+/locations/[^/]+/services/[^/]+)/quotaInfos"),
        ("POST", "/v1/(projects/[^/]+/locations/[^/]+/customJobs/[^/]+):cancel"),
    }


@pytest.mark.slow
@pytest.mark.parametrize(("template", "path", "values"), [
    ("/v1/{parent=projects/*/locations/*}/customJobs", "/v1/projects/p/locations/r/customJobs",
     ("projects/p/locations/r",)),
    ("/v1/{name=projects/*/locations/*/customJobs/*}:cancel", "/v1/projects/p/locations/r/customJobs/7:cancel",
     ("projects/p/locations/r/customJobs/7",)),
    ("/v1/{name=projects/*/locations/*/customJobs/*}:cancel", "/v1/projects/p/locations/r/customJobs/7", None),
    ("/v1/{name=projects/*/locations/*}/jobs/{id}", "/v1/projects/p/locations/r/jobs/9",
     ("projects/p/locations/r", "9")),
    ("/v1/{name=files/**}", "/v1/files/a/b/c", ("files/a/b/c",)),
    ("/v1/{parent=projects/*/locations/*}/customJobs", "/v1/projects/p/locations/r/x/customJobs", None),
])
def test_path_templates_match_as_the_http_rule_says(template: str, path: str, values: tuple[str, ...] | None) -> None:
    pattern, _ = rest.compile_template(template)
    found = pattern.fullmatch(path)
    assert (found.groups() if found else None) == values


# --- hostile requests: bounded, answered, never a traceback --------------------------------

def test_a_body_over_googles_limit_is_refused_unread_and_the_port_serves_on(capsys: pytest.CaptureFixture[str]) -> None:
    """Content-Length: 10^12 (a MemoryError and no answer, before) and one byte over the limit
    are 400 in the words of Google's front end, the body never read (the connection closes)."""
    handle = start_emulator(out=io.StringIO(), environ={}, http_port=0)
    try:
        url, bearer = handle.http_url or "", _bearer(handle)
        for length in (10**12, rest.MAX_BODY + 1):
            head, answer = _raw(url, f"POST /v1/{PARENT}/customJobs HTTP/1.1\r\nHost: h\r\n"
                                     f"Authorization: {bearer['Authorization']}\r\nContent-Length: {length}\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 400") and b"Connection: close" in head, head
            assert answer["error"] == {"code": 400, "status": "INVALID_ARGUMENT",
                                       "message": "Request payload size exceeds the limit: 10485760 bytes."}
        assert _http(url, "GET", f"/v1/{PARENT}/customJobs", headers=bearer)[:2] == (200, {})
        assert handle.jobs() == []
    finally:
        handle.stop()
    assert "Traceback" not in capsys.readouterr().err


def test_json_nested_past_any_sense_is_400_not_500() -> None:
    handle = start_emulator(out=io.StringIO(), environ={}, http_port=0)
    try:
        url, bearer = handle.http_url or "", _bearer(handle)
        for body in ('{"displayName": ' + "[" * 100_000 + "]" * 100_000 + "}",
                     '{"labels": {"a": ' + '{"b": ' * 50_000 + "1" + "}" * 50_000 + "}}"):
            status, answer, _ = _http(url, "POST", f"/v1/{PARENT}/customJobs", body.encode(), bearer)
            assert (status, answer["error"]["status"]) == (400, "INVALID_ARGUMENT"), answer
            assert answer["error"]["message"].startswith("Invalid JSON payload received.")
    finally:
        handle.stop()


def test_a_client_that_drops_its_connection_leaves_one_line_not_a_traceback(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A client that announces a body, sends part of it and resets the connection (a slow
    client given up on): the server says so in one line, and serves the next call."""
    handle = start_emulator(out=io.StringIO(), environ={}, http_port=0)
    try:
        url, bearer = handle.http_url or "", _bearer(handle)
        host, port = url.removeprefix("http://").rstrip("/").rsplit(":", 1)
        for _ in range(3):
            with socket.create_connection((host, int(port)), timeout=10) as sock:
                sock.sendall(f"POST /v1/{PARENT}/customJobs HTTP/1.1\r\nHost: h\r\nAuthorization: "
                             f"{bearer['Authorization']}\r\nContent-Length: 1000\r\n\r\n{{\"display".encode())
                time.sleep(0.2)  # the server is reading the body
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # close: a reset
        assert _http(url, "GET", f"/v1/{PARENT}/customJobs", headers=bearer)[:2] == (200, {})
    finally:
        handle.stop()
    err = capsys.readouterr().err
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert 1 <= len(lines) <= 3, err
    assert all(line.startswith("vxtrain emulator: REST: dropped the connection from 127.0.0.1: ") for line in lines)
