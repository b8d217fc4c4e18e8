"""The emulator runs the commands of the jobs it is sent: it binds loopback only,
unless told otherwise in words (``--allow-remote``), and then it says so loudly."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from vxtrain.backends.emulator import start_emulator
from vxtrain.backends.emulator.server import is_loopback_host
from vxtrain.errors import UsageError

ROOT = Path(__file__).resolve().parents[3]


def _emulator(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vxtrain", "emulator", "--port", "0", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.slow
@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.1"])
def test_a_host_that_is_not_loopback_is_refused_with_exit_2(host: str) -> None:
    done = _emulator("--host", host)
    assert done.returncode == 2, done.stderr
    assert f"refusing to serve on {host}" in done.stderr and "--allow-remote" in done.stderr
    assert "listening" not in done.stderr and "Traceback" not in done.stderr


@pytest.mark.slow
def test_allow_remote_warns_loudly_before_binding() -> None:
    # 192.0.2.1 (TEST-NET-1) is no address of this machine: the warning comes out,
    # then the bind fails, and nothing is ever exposed by the test.
    done = _emulator("--host", "192.0.2.1", "--allow-remote")
    assert "WARNING" in done.stderr and "can run any command as this user" in done.stderr
    assert done.returncode == 1 and "192.0.2.1" in done.stderr


@pytest.mark.parametrize("host, loopback", [("127.0.0.1", True), ("127.0.0.2", True), ("::1", True),
                                            ("localhost", True), ("0.0.0.0", False), ("::", False),
                                            ("10.0.0.1", False)])
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback_host(host) is loopback


def test_the_python_api_refuses_too() -> None:
    with pytest.raises(UsageError, match="refusing to serve on 0.0.0.0"):
        start_emulator("0.0.0.0", 0, environ={})
