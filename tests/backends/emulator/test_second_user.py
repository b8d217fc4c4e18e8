"""No listener but the emulator that holds the token ever receives it (issue 34, item 1).

Another local user (``nobody``, through ``setpriv``) listens where vxtrain's client might
call: ``[::1]:PORT`` beside an emulator on ``127.0.0.1:PORT`` (``localhost`` may resolve
to either), or the port itself once no emulator serves it, and records every call it hears
with its metadata (tests/backends/emulator/eavesdropper.py). Before the fix, the client sent
the token to whatever answered on loopback: ``vxtrain list --endpoint localhost:PORT`` gave
root's token to nobody, who then ran a job as root. Now the token goes through the
emulator's Unix socket in the user's private folder only (vxtrain.backends.tokens).

Acting as another user needs root and setpriv: without them these tests skip, saying why.
"""
from __future__ import annotations

import functools
import io
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.backends.emulator.conftest import second_at_ipv6
from tests.environment import under_ci
from tests.incli import run
from tests.processes import stop
from vxtrain.backends import open_backend, open_log_reader
from vxtrain.backends.emulator import start_emulator
from vxtrain.backends.tokens import TOKEN_ENV, folder_problem, own_socket, socket_file, token_file, token_folder
from vxtrain.backends.vertex import emulator_channel
from vxtrain.errors import PermissionError_, VxtrainError
from vxtrain.vocab.kinds import CUSTOM

EAVESDROPPER = Path(__file__).with_name("eavesdropper.py")
NOBODY = 65534
AS_NOBODY = ("setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups")
LISTING = ("list", "--project", "p", "--region", "us-central1", "-o", "json")
PARENT = "projects/p/locations/us-central1"


def require_setpriv() -> None:
    """Listening as another user needs root (to become ``nobody``) and setpriv."""
    if os.geteuid() != 0:
        ci = " (under CI too: this runner is not root, so another user's listener is not tested here)"
        pytest.skip("listening as another user needs root" + (ci if under_ci() else ""))
    if shutil.which("setpriv") is None:
        if under_ci():
            pytest.fail("setpriv (util-linux) is not installed; under CI this must be tested")
        pytest.skip("setpriv (util-linux) is not installed: cannot listen as another user")
    why = _nobody_cannot_run_python()
    if why is not None:
        if under_ci():
            pytest.fail(f"{why}; under CI this must be tested")
        pytest.skip(why)


@functools.cache
def _nobody_cannot_run_python() -> str | None:
    """Why nobody cannot run this interpreter (its listeners are this Python), or None: a
    Python under root's 0700 home (pyenv's) runs for nobody only where its libpython is also
    a system one."""
    probe = subprocess.run([*AS_NOBODY, sys.executable, "-c", "pass"], capture_output=True, text=True, timeout=60)
    if probe.returncode == 0:
        return None
    return f"nobody cannot run this Python ({sys.executable}): {probe.stderr.strip()[-300:]}"


@dataclass
class Eavesdropper:
    """nobody's listener: the port it took and the file it records each call in."""

    proc: subprocess.Popen[str]
    port: int
    record: Path

    def calls(self) -> list[dict[str, Any]]:
        """Every call it heard: ``{"method", "metadata": [[key, value], ...]}``."""
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text().splitlines()]

    def heard(self, token: str) -> bool:
        """Whether any call carried an Authorization, or ``token`` anywhere."""
        return any(key.lower() == "authorization" for call in self.calls() for key, _ in call["metadata"]) \
            or (self.record.exists() and token in self.record.read_text())


@pytest.fixture
def eavesdrop() -> Iterator[Callable[..., Eavesdropper]]:
    """Start nobody's listeners (``eavesdrop("[::1]:0")``); all are stopped at teardown."""
    folder = Path(tempfile.mkdtemp(prefix="vxtrain-eavesdrop-"))
    os.chown(folder, NOBODY, NOBODY)  # where nobody writes its record (tmp_path is root's 0700)
    procs: list[subprocess.Popen[str]] = []

    def start(*addresses: str) -> Eavesdropper:
        record = folder / f"record-{len(procs)}.jsonl"
        proc = subprocess.Popen([*AS_NOBODY, sys.executable, str(EAVESDROPPER), str(record), *addresses],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("ready "):
            _, err = stop(proc)
            pytest.fail(f"nobody's listener on {' '.join(addresses)} did not start: {err}")
        return Eavesdropper(proc, int(line.split()[1]), record)

    yield start
    for proc in procs:
        stop(proc)
    shutil.rmtree(folder)


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


V6 = pytest.mark.skipif(not _has_ipv6_loopback(), reason="this host has no ::1 to listen on")


@pytest.mark.slow
@pytest.mark.parametrize("source", ["environment", "file"])
@pytest.mark.parametrize(("listen", "endpoint"), [
    pytest.param(("[::1]:0",), "[::1]:{port}", marks=V6, id="v6"),
    pytest.param(("127.0.0.1:0",), "127.0.0.1:{port}", id="v4"),
    pytest.param(("127.0.0.1:0", "[::1]:0"), "localhost:{port}", marks=V6, id="localhost"),
])
def test_another_users_listener_on_a_port_without_an_emulator_never_hears_the_token(
        listen: tuple[str, ...], endpoint: str, source: str, eavesdrop: Callable[..., Eavesdropper],
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """No emulator serves the port; the token is in VXTRAIN_EMULATOR_TOKEN, or in the port's
    token file (left there by an emulator killed on it). `vxtrain list --endpoint` reaches
    nobody's listener (it records the calls), and sends it no token."""
    require_setpriv()
    spy = eavesdrop(*listen)
    token = os.environ[TOKEN_ENV]
    if source == "file":
        monkeypatch.delenv(TOKEN_ENV)
        path = token_file(spy.port)
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(token)
        path.chmod(0o600)  # as the emulator writes it: a file vxtrain would read (find_token)
    try:
        run(capsys, *LISTING, "--endpoint", endpoint.format(port=spy.port))
    finally:
        token_file(spy.port).unlink(missing_ok=True)
    assert spy.calls(), "nobody's listener heard no call: this test would prove nothing"
    assert not spy.heard(token), spy.calls()


@pytest.mark.slow
@V6
def test_beside_an_emulator_on_127_0_0_1_a_listener_on_v6_hears_nothing(
        eavesdrop: Callable[..., Eavesdropper], capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: root's emulator on 127.0.0.1:PORT, nobody on [::1]:PORT. Whichever
    loopback name the user gives, the client reaches the emulator (through its socket, which
    the port names) and nobody hears no token."""
    require_setpriv()
    with start_emulator("127.0.0.1", out=io.StringIO(), environ={}) as handle:
        spy = eavesdrop(f"[::1]:{handle.port}")
        for endpoint in (f"localhost:{handle.port}", f"[::1]:{handle.port}", handle.address):
            code, listed, err = run(capsys, *LISTING, "--endpoint", endpoint)
            assert (code, listed) == (0, {"jobs": []}), err
        assert handle.calls["ListCustomJobs"] == 3
    assert not spy.heard(os.environ[TOKEN_ENV]), spy.calls()


@pytest.mark.slow
def test_a_socket_another_user_put_in_a_token_folder_open_to_others_hears_no_token(
        eavesdrop: Callable[..., Eavesdropper], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A token folder left open to others (mode 777: a mkdir under umask 000) lets nobody put
    a socket where the port's emulator socket would be: the client sends it nothing, and no
    token to the TCP port either (nobody listens there too)."""
    require_setpriv()
    cache = Path(tempfile.mkdtemp(prefix="vxtrain-open-cache-"))
    cache.chmod(0o755)  # the suite's cache folder is root's 0700: nobody could not reach the folder in it
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    folder = token_folder()
    folder.mkdir(mode=0o700)
    spy = eavesdrop("127.0.0.1:0")
    folder.chmod(0o777)
    try:
        planted = eavesdrop(f"unix:{socket_file(spy.port)}")
        assert socket_file(spy.port).lstat().st_uid == NOBODY
        run(capsys, *LISTING, "--endpoint", f"127.0.0.1:{spy.port}")
    finally:
        shutil.rmtree(cache)
    token = os.environ[TOKEN_ENV]
    assert spy.calls(), "the client called neither listener: this test would prove nothing"
    assert not planted.heard(token) and not spy.heard(token), (planted.calls(), spy.calls())


# --- the checks themselves, as this user ----------------------------------------------------

def _socket_at(path: Path) -> socket.socket:
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(path))
    listener.listen()
    return listener


def test_a_socket_is_used_only_in_a_private_folder_and_when_it_is_this_users(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = token_folder()
    folder.mkdir(mode=0o700)
    with _socket_at(socket_file(4242)):
        assert own_socket(4242) == socket_file(4242)
        assert own_socket(4243) is None  # no emulator of this user's on that port
        folder.chmod(0o755)  # listable by others
        assert own_socket(4242) is None and "open to other users" in (folder_problem(folder) or "")
        folder.chmod(0o700)
        tmp_path.chmod(0o777)  # a folder above that anyone may rename it out of
        assert own_socket(4242) is None and "writable by other users" in (folder_problem(folder) or "")
        tmp_path.chmod(0o1777)  # sticky, as /tmp: others cannot rename what is not theirs
        assert own_socket(4242) == socket_file(4242)
        tmp_path.chmod(0o700)
        if os.geteuid() == 0:
            os.chown(socket_file(4242), NOBODY, NOBODY, follow_symlinks=False)
            assert own_socket(4242) is None  # another user's socket, however it got there


def test_a_token_folder_that_is_a_link_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert "is not a folder" in (folder_problem(tmp_path / "link") or "")
    assert stat.S_IMODE((tmp_path / "real").stat().st_mode) == 0o700 and folder_problem(tmp_path / "real") is None


def test_the_emulator_refuses_a_token_folder_another_user_can_replace(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Its socket would be where another user could swap in their own: it does not start."""
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "open" / "cache"))
    with pytest.raises(VxtrainError, match="writable by other users"):
        start_emulator(out=io.StringIO(), environ={})


def test_the_emulator_refuses_its_own_token_folder_once_others_could_write_into_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A token folder of this user's left open to writing (a mkdir under umask 000) may hold
    what another user put there: it is refused as every private folder of vxtrain's is
    (vxtrain.private), never quietly made 0700; one others may only read is tightened."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = token_folder()
    folder.mkdir(mode=0o700)
    folder.chmod(0o777)
    with pytest.raises(VxtrainError, match="open to other users"):
        start_emulator(out=io.StringIO(), environ={})
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777
    folder.chmod(0o755)
    with start_emulator(out=io.StringIO(), environ={}):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


# --- the private token of --target local is handed over, not looked up ------------------------

@pytest.mark.slow
def test_open_backend_local_hands_its_private_token_to_its_client_and_log_readers() -> None:
    """The code that starts the emulator has the token in hand: the client it builds carries
    it, and a log reader of the same emulator gets it from the backend (``backend.token``);
    one opened without it is refused (the token is nowhere to be found: no registry)."""
    with open_backend("local", token="the-private-one", job_output=io.StringIO()) as backend:
        assert backend.token == "the-private-one"
        assert backend.list(CUSTOM, PARENT) == []
        assert backend.endpoint is not None
        with open_log_reader(backend.endpoint) as reader, pytest.raises(PermissionError_) as refused:
            list(reader.list_entries("p", 'resource.type="ml_job"'))
        assert "is private to the process that started it" in str(refused.value)
        assert TOKEN_ENV not in str(refused.value).split("vxtrain sends")[0]
        with open_log_reader(backend.endpoint, token=backend.token) as reader:
            assert list(reader.list_entries("p", 'resource.type="ml_job"')) == []


# --- the emulator's socket: one per port, a live one kept, a stale one replaced ---------------

def test_the_emulator_serves_its_socket_while_it_runs_and_removes_it_on_stop() -> None:
    with start_emulator(out=io.StringIO(), environ={}) as handle:
        assert handle.socket == socket_file(handle.port) == own_socket(handle.port)
        assert stat.S_ISSOCK(handle.socket.lstat().st_mode)
        assert stat.S_IMODE(handle.socket.parent.stat().st_mode) == 0o700
    assert not handle.socket.exists()


def test_a_second_emulator_on_the_port_number_at_another_address_is_refused_whatever_its_token() -> None:
    """127.0.0.1:P and [::1]:P bind apart; with a token from the environment there is no token
    file to lock, and the live socket on P says another emulator of this user's serves it."""
    with start_emulator("127.0.0.1", out=io.StringIO(), environ={}) as first:
        assert first.token is not None and first.token.file is None  # VXTRAIN_EMULATOR_TOKEN: no file
        refused = second_at_ipv6(first, "took over the live one's socket")
        if "in use" in refused or "not an address" in refused:
            pytest.skip(f"[::1]:{first.port} cannot be bound here: {refused}")
        assert f"another emulator of this user's serves port {first.port}" in refused
        assert own_socket(first.port) == first.socket


def test_a_socket_left_by_a_killed_emulator_is_replaced(tmp_path: Path) -> None:
    """Nothing answers a killed emulator's socket: the next emulator on the port removes it."""
    with start_emulator(out=io.StringIO(), environ={}) as first:
        port = first.port
    stale = socket_file(port)
    with socket.socket(socket.AF_UNIX) as dead:  # bound, never listening, closed: a file nothing answers
        dead.bind(str(stale))
    try:
        handle = start_emulator(port=port, out=io.StringIO(), environ={})
    except VxtrainError as exc:
        stale.unlink(missing_ok=True)
        if "in use" in str(exc):
            pytest.skip(f"port {port} was taken again before the second emulator could bind it")
        raise
    with handle:
        assert own_socket(port) == handle.socket
        assert handle.jobs() == [] and not _refused(handle.address)


def _refused(address: str) -> bool:
    """Whether a list through vxtrain's client is refused (the token did not get through)."""
    with open_backend(endpoint=address) as backend:
        try:
            backend.list(CUSTOM, PARENT)
        except PermissionError_:
            return True
    return False


@pytest.mark.slow
def test_a_link_another_user_owns_as_the_cache_folder_cannot_swap_in_their_socket(
        eavesdrop: Callable[..., Eavesdropper], monkeypatch: pytest.MonkeyPatch) -> None:
    """XDG_CACHE_HOME is a link nobody owns in a sticky folder (as /tmp), pointing at this
    user's own folder, where this user's socket is: every folder it leads to checks out. After
    the client's channel is made (the check) and before gRPC connects (or reconnects), nobody
    points the link at a folder of theirs holding their own socket of the same name; the
    client must never have trusted a way another user can change."""
    require_setpriv()
    base = Path(tempfile.mkdtemp(prefix="vxtrain-linked-cache-"))
    base.chmod(0o1777)
    try:
        real, link, theirs = base / "real", base / "cache", base / "theirs"
        (real / "vxtrain").mkdir(parents=True, mode=0o700)
        real.chmod(0o700)
        assert subprocess.run([*AS_NOBODY, "ln", "-s", str(real), str(link)], check=False).returncode == 0
        assert subprocess.run([*AS_NOBODY, "mkdir", "-p", str(theirs / "vxtrain")], check=False).returncode == 0
        monkeypatch.setenv("XDG_CACHE_HOME", str(link))
        monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
        spy = eavesdrop("127.0.0.1:0")  # the TCP port: a client that trusts no socket calls here, without a token
        planted = eavesdrop(f"unix:{theirs / 'vxtrain' / f'emulator-{spy.port}.sock'}")
        with _socket_at(socket_file(spy.port)), emulator_channel(f"127.0.0.1:{spy.port}") as channel:
            swap = subprocess.run([*AS_NOBODY, "ln", "-sfn", str(theirs), str(link)], check=False)
            assert swap.returncode == 0 and os.readlink(link) == str(theirs)
            call = channel.unary_unary("/google.cloud.aiplatform.v1.JobService/ListCustomJobs")
            call(b"", timeout=10)
    finally:
        shutil.rmtree(base)
    token = os.environ[TOKEN_ENV]
    assert spy.calls() or planted.calls(), "the client called neither listener: this test would prove nothing"
    assert not planted.heard(token) and not spy.heard(token), (planted.calls(), spy.calls())
