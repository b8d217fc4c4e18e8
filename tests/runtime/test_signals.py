"""The one stop-signal policy (vxtrain.runtime.signals), with real signals and real processes.

SIGINT, SIGTERM and SIGHUP stop every replica the process started; a second
signal does not break off the cleanup; under ``nohup`` a hang-up stays ignored.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.polling import wait_for
from tests.processes import stop
from vxtrain.runtime.signals import STOP_SIGNALS, interrupt_on_signals, on_stop_signal, stop_on_signals
from vxtrain.vocab.kinds import CUSTOM

ROOT = Path(__file__).resolve().parent.parent.parent


@pytest.fixture
def restore_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    yield
    for sig, old in saved.items():
        signal.signal(sig, old)


@pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_the_first_stop_signal_stops_later_ones_do_nothing(signum: int, restore_handlers: None) -> None:
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    calls: list[int] = []
    with on_stop_signal(lambda: calls.append(signum)):
        os.kill(os.getpid(), signum)
        os.kill(os.getpid(), signal.SIGTERM)
    assert calls == [signum]
    assert {sig: signal.getsignal(sig) for sig in STOP_SIGNALS} == before
    stop = threading.Event()
    with stop_on_signals(stop):
        os.kill(os.getpid(), signum)
    assert stop.is_set()


def test_interrupt_raises_once_so_cleanup_is_not_broken_off(restore_handlers: None) -> None:
    cleaned = False
    with pytest.raises(KeyboardInterrupt), interrupt_on_signals():
        try:
            os.kill(os.getpid(), signal.SIGHUP)
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C during the cleanup
            cleaned = True
    assert cleaned


def test_under_nohup_a_hangup_stays_ignored(restore_handlers: None) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    stop = threading.Event()
    with stop_on_signals(stop):
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        os.kill(os.getpid(), signal.SIGHUP)
    assert not stop.is_set()


def test_outside_the_main_thread_no_handler_is_set() -> None:
    before = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    seen: list[object] = []

    def body() -> None:
        with stop_on_signals(threading.Event()):
            seen.append({sig: signal.getsignal(sig) for sig in STOP_SIGNALS})

    worker = threading.Thread(target=body)
    worker.start()
    worker.join()
    assert seen == [before]


# --- real processes: a hang-up leaves no replica running ----------------------------

#: The chief: records its pid, starts a grandchild, sleeps. ``sys.argv[1]`` (a
#: unique directory, not on vxtrain's own command line) is on both command
#: lines, which is how survivors are found.
REPLICA = r'''
import os, subprocess, sys, time
marker = sys.argv[1]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker])
open(os.path.join(marker, "pids"), "w").write(f"{os.getpid()} {child.pid}")
time.sleep(600)
'''


def _spec(tmp_path: Path) -> Path:
    command = [sys.executable, "-c", REPLICA, str(tmp_path / "run")]
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps({"display_name": "hangup", "chief": {
        "machine_type": "n1-standard-4", "image": "gcr.io/p/train:1", "command": command}}))
    return path


def survivors(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line contains ``marker``, from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if marker.encode() in cmdline and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _cli(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("VXTRAIN_EMULATOR_FAULTS", None)
    return subprocess.Popen([sys.executable, "-m", "vxtrain", *args], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _start_emulator_with_the_job(spec: Path) -> subprocess.Popen[str]:
    import vxtrain
    from vxtrain.backends import open_backend

    proc = _cli("emulator", "--port", "0")
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        assert "listening on" in line, line
        with open_backend(endpoint=line.strip().rsplit(" ", 1)[1]) as backend:
            backend.create(CUSTOM, "projects/p/locations/us-central1", vxtrain.compile(spec))
    except BaseException:
        stop(proc)  # a failed start or create leaves no emulator behind
        raise
    return proc


def _wait_for(path: Path, timeout: float = 30) -> None:
    """Wait until the replica and its child have written their pids to ``path``."""
    wait_for(lambda: path.exists() and len(path.read_text().split()) == 2, timeout,
             f"the replica and its child to write their pids to {path}")


@pytest.mark.slow
@pytest.mark.parametrize("command, code", [("emulator", 0), ("submit --target local --wait", 130)])
def test_a_hangup_leaves_no_replica_running(tmp_path: Path, command: str, code: int) -> None:
    """The terminal closes: vxtrain gets SIGHUP (its replicas, in their own
    sessions, do not), stops every replica and its children, and exits."""
    spec, marker = _spec(tmp_path), str(tmp_path / "run")
    Path(marker).mkdir()
    if command == "emulator":
        proc = _start_emulator_with_the_job(spec)
    else:
        proc = _cli(*command.split(), str(spec))
    try:
        _wait_for(Path(marker) / "pids")
        assert len(survivors(marker)) == 2  # the replica and its child
        proc.send_signal(signal.SIGHUP)
        _, stderr = proc.communicate(timeout=30)
        assert proc.returncode == code, stderr
        assert "Traceback" not in stderr
        wait_for(lambda: not survivors(marker), 5, "the replica and its child to end")
    finally:
        stop(proc, signal.SIGKILL, timeout=5)
        for pid in survivors(marker):
            os.kill(pid, signal.SIGKILL)
