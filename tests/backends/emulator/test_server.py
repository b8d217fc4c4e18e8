"""Binding, stopping, and the ``vxtrain emulator`` command that serves it."""
from __future__ import annotations

import io
import os
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1 as v1

from tests.polling import wait_for
from tests.processes import stop
from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, pool, py, wait_until
from tests.conftest import ROOT
from vxtrain.backends.emulator import CUSTOM, EmulatorHandle, RpcError, start_emulator
from vxtrain.errors import UsageError, VxtrainError


def test_taken_port_is_a_clear_error(make_emulator: Any) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(VxtrainError, match=f"port {port} on 127.0.0.1 is in use"):
            start_emulator(port=port, environ={})
    first = make_emulator()
    with pytest.raises(VxtrainError, match="is in use"):  # no SO_REUSEPORT sharing between emulators
        start_emulator(port=first.port, environ={})


def test_a_name_binds_all_its_addresses_or_none(make_emulator: Any) -> None:
    """localhost is 127.0.0.1 and ::1: with 127.0.0.1's port taken, grpc alone
    would listen on ::1 only (a warning), and clients would reach the other process."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(VxtrainError, match=f"port {port} on localhost.* is in use"):
            start_emulator(host="localhost", port=port, environ={})
    handle = make_emulator(host="localhost")
    assert handle.address == f"localhost:{handle.port}"


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("VXTRAIN_EMULATOR_FAULTS", None)
    # its own session: a test's teardown can kill it with anything it started in its group
    return subprocess.Popen([sys.executable, "-m", "vxtrain", *args], stderr=subprocess.PIPE, text=True,
                            env=env, cwd=ROOT, start_new_session=True)


@pytest.mark.slow
def test_emulator_command_serves_until_interrupted(connect: Any) -> None:
    proc = _cli("emulator", "--port", "0", "--simulate", "0.2", "--fault", "get:internal:1")
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        assert line.startswith("vxtrain emulator listening on 127.0.0.1:"), line
        handle = EmulatorHandle.__new__(EmulatorHandle)  # only .address is used by connect()
        handle.host, handle.port = "127.0.0.1", int(line.strip().rsplit(":", 1)[1])
        client = connect(handle)
        name = client.create_custom_job(parent=PARENT, custom_job=custom_job()).name
        with pytest.raises(gexc.InternalServerError):
            client.get_custom_job(name=name)
        assert wait_until(client, name, TERMINAL).state == State.JOB_STATE_SUCCEEDED
    finally:
        stop(proc, signal.SIGINT, timeout=10)  # killed if Ctrl-C does not stop it: never left running
    assert proc.returncode == 0


def _emulator_threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name.startswith("vxtrain-emulator")}


def test_stop_leaves_no_thread_behind(connect: Any) -> None:
    """grpc never shuts down the executor it is given; stop() does, and joins the jobs."""
    before = _emulator_threads()
    handle = start_emulator(environ={}, out=io.StringIO())
    try:
        client = connect(handle)
        done = client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py("pass"))])).name
        wait_until(client, done, TERMINAL)
        client.create_custom_job(parent=PARENT,
                                 custom_job=custom_job(pools=[pool(py("import time; time.sleep(60)"))]))
        assert _emulator_threads() - before
    finally:  # stop() is what is tested, but a failure above must not leave the emulator running
        handle.stop(grace=0)
    assert _emulator_threads() - before == set()
    with pytest.raises(RpcError) as info:  # and nothing can start behind it
        handle.emulator.create(CUSTOM, PARENT, v1.CustomJob(custom_job(pools=[pool(py("pass"))])))
    assert info.value.code == grpc.StatusCode.UNAVAILABLE
    assert _emulator_threads() - before == set()


@pytest.mark.slow
def test_sigterm_stops_the_emulator_and_the_processes_of_its_jobs(connect: Any, tmp_path: Path) -> None:
    """SIGTERM (a service manager, CI, ``kill``) is a normal stop, like Ctrl-C:
    replicas run in their own sessions, so without it they would be orphaned."""
    proc = _cli("emulator", "--port", "0")
    pid_file = tmp_path / "pid"
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        handle = EmulatorHandle.__new__(EmulatorHandle)  # only .address is used by connect()
        handle.host, handle.port = "127.0.0.1", int(line.strip().rsplit(":", 1)[1])
        code = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
        connect(handle).create_custom_job(parent=PARENT, custom_job=custom_job(pools=[pool(py(code))]))
        wait_for(lambda: pid_file.exists() and pid_file.read_text(), 15, "the replica to record its pid")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=20) == 0
    finally:
        stop(proc, signal.SIGKILL)  # a no-op once it exited: else killed (and reaped) here
    with pytest.raises(ProcessLookupError):
        os.kill(int(pid_file.read_text()), 0)


@pytest.mark.slow
def test_emulator_command_on_a_taken_port_exits_non_zero(make_emulator: Any) -> None:
    taken = make_emulator()
    proc = _cli("emulator", "--port", str(taken.port))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert f"port {taken.port} on 127.0.0.1 is in use" in err and "Traceback" not in err


def test_command_registration() -> None:
    import typer
    from typer.testing import CliRunner

    from vxtrain.commands import emulator as command

    app = typer.Typer()
    command.register(app)

    @app.command("other")
    def _other() -> None:  # a second command keeps typer from flattening the app
        """Placeholder."""

    result = CliRunner().invoke(app, ["emulator", "--help"])
    assert result.exit_code == 0
    for flag in ("--host", "--port", "--fault", "--simulate"):
        assert flag in result.output
    bad = CliRunner().invoke(app, ["emulator", "--fault", "create:nope:1", "--port", "0"])
    assert isinstance(bad.exception, UsageError)
