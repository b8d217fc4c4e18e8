"""However vxtrain ends, no replica (nor a replica's child) outlives it.

Real processes and real signals: ``local-run``, ``submit --target local --wait``
and ``emulator`` run a chief that starts a grandchild; vxtrain gets SIGINT,
SIGTERM, SIGHUP or SIGKILL, and /proc must then hold neither (nor vxtrain's
watchdog). SIGHUP of ``emulator`` and ``submit`` is in test_signals.py, SIGINT
and SIGHUP of ``local-run`` in test_runner.py.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.polling import wait_for
from tests.runtime.test_signals import ROOT, _cli, _spec, _start_emulator_with_the_job, _wait_for, survivors
from vxtrain.runtime import reaper

#: Exit status of each command after a stop signal (the emulator's normal way to stop is one).
STOPPED = {"local-run": 130, "submit --target local --wait": 130, "emulator": 0}
CASES = [(command, sig) for command in STOPPED for sig in (signal.SIGTERM, signal.SIGKILL)] + [
    ("emulator", signal.SIGINT), ("submit --target local --wait", signal.SIGINT)]


ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _children_of(pid: int) -> list[int]:
    """Live children of ``pid`` (vxtrain's watchdog among them), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def _alive(pids: list[int]) -> list[int]:
    """Of ``pids``, those still alive (not zombies)."""
    return [p for p in pids if Path(f"/proc/{p}/stat").exists()
            and (Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split() or ["X"])[0] not in "ZX"]


def _wait_gone(pids: list[int], timeout: float = 5.0) -> None:
    """Fail unless every one of ``pids`` has ended within ``timeout`` seconds."""
    wait_for(lambda: not _alive(pids), timeout, f"processes {pids} to end")


@pytest.mark.slow
@pytest.mark.parametrize("command, signum", CASES, ids=lambda v: getattr(v, "name", str(v)))
def test_no_replica_outlives_vxtrain(tmp_path: Path, command: str, signum: signal.Signals) -> None:
    spec, marker = _spec(tmp_path), str(tmp_path / "run")
    Path(marker).mkdir()
    proc = _start_emulator_with_the_job(spec) if command == "emulator" else _cli(*command.split(), str(spec))
    try:
        _wait_for(Path(marker) / "pids")
        assert len(survivors(marker)) == 2  # the replica and its child
        helpers = _children_of(proc.pid)  # the replica's parent is vxtrain; the watchdog too
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=30)
        expected = -signal.SIGKILL if signum == signal.SIGKILL else STOPPED[command]
        assert proc.returncode == expected, stderr
        assert "Traceback" not in stderr
        _wait_gone(survivors(marker))
        _wait_gone(helpers)  # the watchdog ends with vxtrain
        if signum != signal.SIGKILL and command != "emulator":
            assert "vxtrain: interrupted" in stderr
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in survivors(marker):
            os.kill(pid, signal.SIGKILL)


def test_the_watchdog_kills_a_group_vxtrain_still_owned_when_it_died(tmp_path: Path) -> None:
    """The watchdog's owner dies: it kills every group still listed, then ends."""
    victim = subprocess.Popen(["sleep", "600"], start_new_session=True)
    owner = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from vxtrain.runtime import reaper; "
        f"reaper.guard({victim.pid}); print(reaper.watchdog_pid(), flush=True); time.sleep(600)")],
        stdout=subprocess.PIPE, text=True, env=ENV)
    try:
        assert owner.stdout is not None
        watchdog = int(owner.stdout.readline())
        time.sleep(0.2)
        assert victim.poll() is None
        owner.kill()
        owner.wait()
        assert victim.wait(timeout=10) == -signal.SIGKILL
        _wait_gone([watchdog])
    finally:
        for p in (owner, victim):
            if p.poll() is None:
                p.kill()
            p.wait()
        assert owner.stdout is not None
        owner.stdout.close()


@pytest.mark.slow
def test_a_released_group_is_left_alone(tmp_path: Path) -> None:
    """Once vxtrain has stopped and reaped a replica, the watchdog forgets its group."""
    bystander = subprocess.Popen(["sleep", "600"], start_new_session=True)
    owner = subprocess.Popen([sys.executable, "-c", (
        "from vxtrain.runtime import reaper; "
        f"reaper.guard({bystander.pid}); reaper.release({bystander.pid})")], env=ENV)
    try:
        assert owner.wait(timeout=30) == 0
        time.sleep(0.3)
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()
