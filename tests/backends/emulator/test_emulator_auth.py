"""Who may talk to the emulator (issue 29): every call, gRPC and REST, carries the
emulator's bearer token, else it is UNAUTHENTICATED (HTTP 401) and nothing is done.

The emulator runs the command of every job it is sent: before the token, any local
user could run code as the user who started it. The tests that matter most run a
call as another user (``nobody``, through ``runuser``), so they need root; without
it they skip (and say so under CI, whose runner may not be root).
"""
from __future__ import annotations

import fcntl
import io
import ipaddress
import json
import os
import shutil
import socket
import stat
import struct
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.cloud.aiplatform_v1.types import job_service

from tests.backends.emulator.conftest import second_at_ipv6
from tests.environment import under_ci
from tests.incli import run
from tests.processes import stop
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.emulator.auth import GCLOUD_TOKEN_FILE_ENV, authorize, private
from vxtrain.backends.tokens import TOKEN_ENV, find_token, token_file, token_folder
from vxtrain.backends.vertex import emulator_channel
from vxtrain.errors import VxtrainError

ROOT = Path(__file__).resolve().parents[3]
PARENT = "projects/p/locations/us-central1"
CREATE = "/google.cloud.aiplatform.v1.JobService/CreateCustomJob"
LIST = "/google.cloud.aiplatform.v1.JobService/ListCustomJobs"
TAIL = "/google.logging.v2.LoggingServiceV2/TailLogEntries"


def create_request() -> bytes:
    """A CreateCustomJob request whose job would run ``true``."""
    job = {"display_name": "intruder", "job_spec": {"worker_pool_specs": [{
        "machine_spec": {"machine_type": "n1-standard-4"}, "replica_count": 1,
        "container_spec": {"image_uri": "us-docker.pkg.dev/p/r/t:1", "command": ["true"]}}]}}
    return bytes(job_service.CreateCustomJobRequest.serialize(
        job_service.CreateCustomJobRequest(parent=PARENT, custom_job=job)))


def status_of(call: Any) -> grpc.StatusCode:
    """The status code of a raw gRPC call (``call()`` raises grpc.RpcError, or succeeds)."""
    try:
        call()
    except grpc.RpcError as exc:
        code: grpc.StatusCode = exc.code()
        return code
    return grpc.StatusCode.OK


@pytest.fixture
def file_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """No VXTRAIN_EMULATOR_TOKEN: emulators write a token file, clients read it."""
    monkeypatch.delenv(TOKEN_ENV)


# --- the check --------------------------------------------------------------------

def test_authorize_takes_bearer_and_the_token_alone() -> None:
    assert authorize("s3cret", "Bearer s3cret")
    assert authorize("s3cret", "bearer s3cret")  # the scheme is case-insensitive (RFC 9110, 11.1)
    for header in (None, "", "Bearer", "Bearer s3cre", "Bearer s3cret2", "Basic s3cret", "s3cret",
                   "Bearer S3CRET", "Bearer s3crét"):
        assert not authorize("s3cret", header), header


# --- gRPC and REST refuse a call without the token ----------------------------------------

def test_grpc_calls_without_the_token_or_with_a_wrong_one_are_unauthenticated(emulator: EmulatorHandle) -> None:
    """Unary and streaming (TailLogEntries, a bidi stream) alike; a refused create stores nothing."""
    plain = grpc.insecure_channel(emulator.address)
    wrong = emulator_channel(emulator.address, token="not-the-token")
    right = emulator_channel(emulator.address)
    try:
        for channel in (plain, wrong):
            create = channel.unary_unary(CREATE)
            assert status_of(lambda: create(create_request(), timeout=10)) == grpc.StatusCode.UNAUTHENTICATED
            tail = channel.stream_stream(TAIL)
            assert status_of(lambda: list(tail(iter([b""]), timeout=10))) == grpc.StatusCode.UNAUTHENTICATED
        assert emulator.jobs() == []
        listed = right.unary_unary(LIST)
        assert status_of(lambda: listed(job_service.ListCustomJobsRequest.serialize(
            job_service.ListCustomJobsRequest(parent=PARENT)), timeout=10)) == grpc.StatusCode.OK
    finally:
        for channel in (plain, wrong, right):
            channel.close()


def _outward_address() -> str | None:
    """An IPv4 address of one of this host's interfaces that is not loopback, or None (read
    from the interfaces, Linux's SIOCGIFADDR: the suite's guard forbids probing a route out)."""
    siocgifaddr = 0x8915
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        for _, name in socket.if_nameindex():
            try:
                packed = fcntl.ioctl(probe.fileno(), siocgifaddr, struct.pack("256s", name[:15].encode()))
            except OSError:  # no IPv4 address on it
                continue
            address = socket.inet_ntoa(packed[20:24])
            if not ipaddress.ip_address(address).is_loopback:
                return address
    return None


def test_the_token_is_never_sent_to_an_endpoint_that_is_not_loopback(monkeypatch: pytest.MonkeyPatch) -> None:
    """An emulator served on this host's outward address (--allow-remote) with the very token
    the client holds refuses the client: the channel to a non-loopback endpoint carries none."""
    address = _outward_address()
    if address is None:
        pytest.skip("this host has no address but loopback")
    # The suite's guard sends non-loopback gRPC to a closed port; this address is this host's own.
    monkeypatch.setenv("no_grpc_proxy", f"{os.environ.get('no_grpc_proxy', '')},{address}")
    with start_emulator(address, allow_remote=True, out=io.StringIO()) as handle:
        assert handle.token is not None and handle.token.value == os.environ[TOKEN_ENV]
        with emulator_channel(handle.address) as channel:
            listed = channel.unary_unary(LIST)
            assert status_of(lambda: listed(job_service.ListCustomJobsRequest.serialize(
                job_service.ListCustomJobsRequest(parent=PARENT)), timeout=10)) == grpc.StatusCode.UNAUTHENTICATED


def test_the_refusal_says_where_the_token_is(emulator: EmulatorHandle) -> None:
    with grpc.insecure_channel(emulator.address) as channel:
        with pytest.raises(grpc.RpcError) as refused:
            channel.unary_unary(LIST)(b"", timeout=10)
    assert refused.value.details().startswith("Request is missing required authentication credential.")
    assert TOKEN_ENV in refused.value.details()


def _http(url: str, token: str | None) -> int:
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


@pytest.mark.slow
def test_rest_calls_without_the_token_or_with_a_wrong_one_are_401() -> None:
    with start_emulator(out=io.StringIO(), environ={}, http_port=0) as handle:
        assert handle.http_url is not None and handle.token is not None
        url = f"{handle.http_url}v1/{PARENT}/customJobs"
        assert _http(url, None) == 401
        assert _http(url, "not-the-token") == 401
        assert _http(url, handle.token.value) == 200


# --- the token file -------------------------------------------------------------------------

@pytest.mark.usefixtures("file_token")
def test_the_token_file_is_private_and_removed_on_stop() -> None:
    handle = start_emulator(out=io.StringIO(), environ={})
    try:
        assert handle.token is not None and handle.token.file == token_file(handle.port)
        path = handle.token.file
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        assert path.read_text() == handle.token.value
        assert handle.gcloud_environment() == {GCLOUD_TOKEN_FILE_ENV: str(path)}
    finally:
        handle.stop()
    assert not path.exists()



@pytest.mark.usefixtures("file_token")
def test_a_token_file_others_can_read_is_not_sent_and_says_how_to_get_a_new_one(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A token file others may read (a chmod, a copy made under umask 022) is no secret: the
    client sends none (the emulator refuses the call: exit 4) and says why, once, with the fix."""
    listing = ("list", "--project", "p", "--region", "us-central1", "-o", "json")
    with start_emulator(out=io.StringIO(), environ={}) as handle:
        assert handle.token is not None and handle.token.file is not None
        path = handle.token.file
        assert run(capsys, *listing, "--endpoint", handle.address)[0] == 0
        path.chmod(0o644)
        code, _, err = run(capsys, *listing, "--endpoint", handle.address)
        assert code == 4 and "Traceback" not in err
        assert (f"vxtrain: warning: the emulator's token in {path} is not used: other users may read or change it "
                f"(mode 0644); stop the emulator on port {handle.port}, remove the file and start it again") in err
        code, _, err = run(capsys, *listing, "--endpoint", handle.address)
        assert code == 4 and "is not used" not in err  # said once
        path.chmod(0o600)
        assert run(capsys, *listing, "--endpoint", handle.address)[0] == 0


@pytest.mark.usefixtures("file_token")
def test_a_token_file_that_is_a_link_or_another_users_is_not_read(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    port = 1  # no emulator: the file alone is read
    path = token_file(port)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    real = tmp_path / "token"
    real.write_text("t0ken")
    real.chmod(0o600)
    try:
        path.write_text("t0ken")
        path.chmod(0o600)
        assert find_token(port) == "t0ken"
        path.unlink()
        path.symlink_to(real)
        assert find_token(port) is None
        assert f"the emulator's token in {path} is not used: it is a link, not a file" in capsys.readouterr().err
        if os.geteuid() != 0:
            pytest.skip("giving a file to another user needs root")
        path.unlink()
        path.write_text("t0ken")
        path.chmod(0o600)
        os.chown(path, 65534, 65534)  # nobody's: nobody chose the token vxtrain would send
        assert find_token(port) is None
        assert find_token(port, {**os.environ, TOKEN_ENV: "given"}) == "given"  # the variable is not a file
    finally:
        path.unlink(missing_ok=True)

def test_a_token_given_in_the_environment_is_never_written(emulator: EmulatorHandle) -> None:
    assert emulator.token is not None and emulator.token.value == os.environ[TOKEN_ENV]
    assert emulator.token.file is None and not token_file(emulator.port).exists()
    assert GCLOUD_TOKEN_FILE_ENV not in emulator.gcloud_environment()


@pytest.mark.usefixtures("file_token")
def test_a_token_file_left_on_the_port_is_replaced() -> None:
    """An emulator killed on a port leaves its file; the next one on that port writes its own."""
    with start_emulator(out=io.StringIO(), environ={}) as first:
        port = first.port
    stale = token_file(port)
    stale.write_text("stale")
    try:
        handle = start_emulator(port=port, out=io.StringIO(), environ={})
    except VxtrainError:  # the port was taken meanwhile: nothing to show here
        pytest.skip(f"port {port} was taken again before the second emulator could bind it")
    with handle:
        assert handle.token is not None and stale.read_text() == handle.token.value != "stale"


def test_the_token_folder_is_in_the_runtime_folder_only_when_it_is_this_users(tmp_path: Path) -> None:
    """`su` without `-` keeps the caller's XDG_RUNTIME_DIR: another user's folder, where this
    user's token folder would be made and then refuse its owner; the cache folder is used instead."""
    own, other, cache = tmp_path / "own", tmp_path / "other", tmp_path / "cache"
    own.mkdir()
    other.mkdir()
    assert token_folder({"XDG_RUNTIME_DIR": str(own), "XDG_CACHE_HOME": str(cache)}) == own / "vxtrain"
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    os.chown(other, 65534, 65534)  # nobody's
    assert token_folder({"XDG_RUNTIME_DIR": str(other), "XDG_CACHE_HOME": str(cache)}) == cache / "vxtrain"


@pytest.mark.usefixtures("file_token")
def test_a_second_emulator_on_the_port_number_at_another_address_leaves_the_first_ones_file() -> None:
    """127.0.0.1:P and [::1]:P bind apart but share the port's token file: the live one's file
    (locked while it serves) is neither replaced nor removed; the second is refused, saying why."""
    with start_emulator("127.0.0.1", out=io.StringIO(), environ={}) as first:
        assert first.token is not None and first.token.file is not None
        refused = second_at_ipv6(first, "replaced the live one's token file")
        if "in use" in refused:  # [::1]:P was taken by something else: nothing to show here
            pytest.skip(f"[::1]:{first.port} is taken: {refused}")
        assert f"another emulator of this user's serves port {first.port}" in refused and TOKEN_ENV in refused
        assert first.token.file.read_text() == first.token.value
        with emulator_channel(first.address) as channel:  # its clients still find its token
            assert status_of(lambda: channel.unary_unary(LIST)(job_service.ListCustomJobsRequest.serialize(
                job_service.ListCustomJobsRequest(parent=PARENT)), timeout=10)) == grpc.StatusCode.OK
        path = first.token.file
    assert not path.exists()


@pytest.mark.slow
@pytest.mark.usefixtures("file_token")
def test_the_emulator_command_prints_its_token_file_and_the_cli_reads_it(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`vxtrain emulator` (another process) prints CLOUDSDK_AUTH_ACCESS_TOKEN_FILE; `vxtrain list
    --endpoint` finds the token in that file, or in VXTRAIN_EMULATOR_TOKEN (a wrong one: exit 4)."""
    proc = subprocess.Popen([sys.executable, "-m", "vxtrain", "emulator", "--port", "0"], cwd=ROOT,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert proc.stderr is not None
        address = proc.stderr.readline().rsplit(" ", 1)[1].strip()
        name, _, value = proc.stderr.readline().strip().partition("=")
        assert name == GCLOUD_TOKEN_FILE_ENV and Path(value) == token_file(int(address.rsplit(":", 1)[1]))
        listing = ("list", "--endpoint", address, "--project", "p", "--region", "us-central1", "-o", "json")
        assert run(capsys, *listing)[:2] == (0, {"jobs": []})
        monkeypatch.setenv(TOKEN_ENV, "not-the-token")
        code, _, err = run(capsys, *listing)
        assert code == 4 and f"export {TOKEN_ENV}" in err and "Traceback" not in err
        monkeypatch.setenv(TOKEN_ENV, Path(value).read_text())
        assert run(capsys, *listing)[0] == 0
    finally:
        stop(proc, timeout=30)
    assert proc.returncode == 0
    assert not Path(value).exists()


def test_a_client_without_the_token_is_told_how_to_give_it(capsys: pytest.CaptureFixture[str]) -> None:
    """An emulator with a token this process's CLI cannot find (no file, a wrong variable)."""
    with start_emulator(out=io.StringIO(), environ={}, token=private()) as handle:
        code, _, err = run(capsys, "list", "--endpoint", handle.address, "--project", "p", "--region", "us-central1")
    assert code == 4
    assert "the emulator refused the call: Request had invalid authentication credentials." in err
    assert f"export {TOKEN_ENV}" in err and "run vxtrain as the user who started it" in err


# --- another user ---------------------------------------------------------------------

def require_root_and_runuser() -> None:
    """These tests act as another user (``nobody``): root, ``runuser`` and ``curl`` are needed."""
    if os.geteuid() != 0:
        ci = " (under CI too: this runner is not root, so another user's call is not tested here)"
        pytest.skip("acting as another user needs root" + (ci if under_ci() else ""))
    missing = [tool for tool in ("runuser", "curl") if shutil.which(tool) is None]
    if missing:
        reason = f"{' and '.join(missing)} not installed: cannot act as another user"
        if under_ci():
            pytest.fail(reason + "; under CI this must be tested")
        pytest.skip(reason)


def curl_grpc(address: str, method: str, body: bytes, *, user: str | None = "nobody",
              token: str | None = None) -> str:
    """A real gRPC call made with curl (HTTP/2, one length-prefixed message), as ``user``; its
    ``grpc-status`` ("16": UNAUTHENTICATED, "0": OK)."""
    command = ["curl", "-sS", "--http2-prior-knowledge", "-D", "-", "-o", "/dev/null", "--max-time", "10",
               "-H", "content-type: application/grpc", "-H", "te: trailers", "--data-binary", "@-",
               *(["-H", f"authorization: Bearer {token}"] if token else []), f"http://{address}{method}"]
    if user is not None:
        command = ["runuser", "-u", user, "--", *command]
    frame = b"\0" + len(body).to_bytes(4, "big") + body
    done = subprocess.run(command, input=frame, capture_output=True, timeout=30, check=True)
    headers = dict(line.split(":", 1) for line in done.stdout.decode().splitlines() if ":" in line)
    return str(headers.get("grpc-status", "")).strip()


def as_nobody(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["runuser", "-u", "nobody", "--", *command], capture_output=True, text=True, timeout=30)


@pytest.mark.slow
@pytest.mark.usefixtures("file_token")
def test_a_job_sent_as_another_user_is_refused(tmp_path: Path) -> None:
    """nobody cannot read root's token file, so its create (gRPC or REST) is refused and no job
    is stored; the same curl call with the token (root's) is served, so the refusal is the token's."""
    require_root_and_runuser()
    with start_emulator(out=io.StringIO(), environ={}, http_port=0, simulate_seconds=0.1) as handle:
        assert handle.token is not None and handle.token.file is not None and handle.http_url is not None
        denied = as_nobody("cat", str(handle.token.file))
        assert denied.returncode != 0 and "Permission denied" in denied.stderr
        assert curl_grpc(handle.address, CREATE, create_request()) == "16"
        rest = as_nobody("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d",
                         json.dumps({"displayName": "intruder"}), f"{handle.http_url}v1/{PARENT}/customJobs")
        assert rest.stdout == "401", rest
        assert handle.jobs() == []
        assert curl_grpc(handle.address, CREATE, create_request(), user=None, token=handle.token.value) == "0"
        assert [job.display_name for job in handle.jobs()] == ["intruder"]


def listening_ports(pid: int) -> set[int]:
    """The TCP ports process ``pid`` listens on (/proc: its socket inodes, matched in /proc/net/tcp*)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


@pytest.fixture
def local_submit(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], Path]]:
    """`vxtrain submit --target local --wait` of a job that runs until ``go`` exists."""
    started, go = tmp_path / "started", tmp_path / "go"
    code = (f"import os, pathlib, time; pathlib.Path({str(started)!r}).write_text('up')\n"
            f"deadline = time.time() + 60\n"
            f"while not os.path.exists({str(go)!r}) and time.time() < deadline: time.sleep(0.05)")
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: private\nchief:\n  machine_type: n1-standard-4\n"
                    "  image: us-docker.pkg.dev/p/r/train:1\n"
                    f"  command: [{json.dumps(sys.executable)}, -c, {json.dumps(code)}]\n")
    proc = subprocess.Popen([sys.executable, "-m", "vxtrain", "submit", str(spec), "--target", "local", "--wait",
                             "--project", "p", "--region", "us-central1", "--no-logs"], cwd=ROOT, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert started.exists(), proc.poll()
        yield proc, go
    finally:
        go.touch()
        stop(proc, timeout=30)


@pytest.mark.slow
def test_the_emulator_of_a_local_submit_answers_that_process_alone(
        local_submit: tuple[subprocess.Popen[str], Path]) -> None:
    """Its token is private (in memory, never written): nobody is refused, and so is root with
    VXTRAIN_EMULATOR_TOKEN; the submit's own client is served and the job succeeds."""
    require_root_and_runuser()
    proc, go = local_submit
    ports = listening_ports(proc.pid)
    assert len(ports) == 1, ports
    address = f"127.0.0.1:{ports.pop()}"
    assert curl_grpc(address, CREATE, create_request()) == "16"
    assert curl_grpc(address, CREATE, create_request(), user=None, token=os.environ[TOKEN_ENV]) == "16"
    assert not token_file(int(address.rsplit(":", 1)[1])).exists()
    go.touch()
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "JOB_STATE_SUCCEEDED" in out or "succeeded" in (out + err).lower(), out + err


def test_a_session_given_the_token_carries_it_where_none_is_found() -> None:
    """A library caller's ``Session(token=...)``: an emulator whose token this process cannot
    find (no file, another in the variable) answers the session that is given it, and refuses
    the one that is not."""
    from vxtrain.submission import Session

    with start_emulator(out=io.StringIO(), environ={}, token=private()) as handle:
        with Session(endpoint=handle.address) as session, pytest.raises(VxtrainError, match="authentication"):
            session.jobs("p", "us-central1")
        with Session(endpoint=handle.address, token=handle.token.value) as session:
            assert session.jobs("p", "us-central1") == []
