"""No replica outlives vxtrain, even when vxtrain itself is SIGKILLed.

A stop signal is handled (vxtrain.runtime.signals), but SIGKILL (the OOM
killer, a CI timeout's ``kill -9``) ends vxtrain at once, and replicas run in
their own sessions: without help they would run on, orphaned. Two guards,
each covering what the other cannot:

* **the parent-death signal** (Linux only): every replica is started with
  ``prctl(PR_SET_PDEATHSIG, SIGKILL)``, so the kernel kills it the moment the
  thread that started it dies. It reaches the replica only, not the processes
  the replica started (its process group).
* **the watchdog** (any POSIX system, macOS included): one small process per
  vxtrain process, in its own session, that holds the read end of a pipe.
  vxtrain writes ``+PGID`` when a replica starts and ``-PGID`` once it has
  stopped and reaped it. When vxtrain dies, however it dies, the kernel closes
  the pipe; the watchdog reads end-of-file and SIGKILLs every group still
  listed, grandchildren included, then exits.

What remains: on macOS (no parent-death signal), killing vxtrain *and* the
watchdog at once (``kill -9`` of both, a whole-tree kill) leaves replicas to
run on; on Linux it leaves only their own children. A group's leader killed by
its parent-death signal is reaped by init within milliseconds; if the group was
empty by then, its id is free again and could in principle be reused by a new
session before the watchdog signals it (pids are handed out cyclically, so this
needs the pid space to wrap around in that moment).
"""
from __future__ import annotations

import atexit
import ctypes
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import IO, Any

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

#: The watchdog's program (run with ``python -I -S``: no site, no user paths, fast).
WATCHDOG = r"""
import os, signal, sys
for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
    signal.signal(sig, signal.SIG_IGN)
groups = set()
for line in sys.stdin:
    op, pgid = line[:1], line[1:].strip()
    if pgid.isdigit():
        (groups.add if op == "+" else groups.discard)(int(pgid))
for pgid in groups:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


def _load_prctl() -> Any:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


#: libc's prctl, resolved before any fork (a child must not load libraries).
_PRCTL = _load_prctl()


def child_setup() -> Callable[[], None] | None:
    """The ``preexec_fn`` of a replica: die with the thread that starts it (Linux), else None.

    The started child checks its parent after arming the signal: had the
    parent died in between, the signal would never come.
    """
    prctl = _PRCTL
    if prctl is None:
        return None
    parent = os.getpid()

    def setup() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return setup


class _Watchdog:
    """The process that kills the groups vxtrain still owns once vxtrain is gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: IO[bytes] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0  # the vxtrain process that started it (a forked child must not write)

    def _writer(self) -> IO[bytes] | None:
        if self._pipe is not None and self._pid == os.getpid():
            return self._pipe
        read_end, write_end = os.pipe()  # both close-on-exec: no replica inherits the write end
        try:
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHDOG], stdin=read_end,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
        except OSError:
            os.close(write_end)
            return None  # the parent-death signal still guards the replicas (Linux)
        finally:
            os.close(read_end)
        self._pipe, self._pid = os.fdopen(write_end, "wb", buffering=0), os.getpid()
        return self._pipe

    def send(self, line: str) -> None:
        with self._lock:
            pipe = self._writer()
            if pipe is None:
                return
            try:
                pipe.write(line.encode())
            except OSError:  # the watchdog died: start another next time
                self._pipe = None

    def close(self) -> None:
        """At a normal exit: close the pipe (the watchdog kills what is still listed, if
        anything, and ends) and reap the watchdog."""
        with self._lock:
            pipe, proc, self._pipe, self._proc = self._pipe, self._proc, None, None
        if pipe is None or proc is None or self._pid != os.getpid():
            return
        pipe.close()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    @property
    def pid(self) -> int | None:
        """The watchdog's process id (None before the first replica)."""
        return self._proc.pid if self._proc is not None else None


_WATCHDOG = _Watchdog()
atexit.register(_WATCHDOG.close)


def guard(pgid: int) -> None:
    """Have the watchdog kill process group ``pgid`` if vxtrain dies before :func:`release`."""
    _WATCHDOG.send(f"+{pgid}\n")


def release(pgid: int) -> None:
    """Group ``pgid`` is stopped and its leader reaped: the watchdog forgets it."""
    _WATCHDOG.send(f"-{pgid}\n")


def watchdog_pid() -> int | None:
    """The watchdog of this process, if one was started (for tests)."""
    return _WATCHDOG.pid
