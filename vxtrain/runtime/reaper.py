"""No replica outlives vxtrain, even when vxtrain itself is SIGKILLed.

A stop signal is handled (vxtrain.runtime.signals), but SIGKILL (the OOM
killer, a CI timeout's ``kill -9``) ends vxtrain at once, and replicas run in
their own sessions: without help they would run on, orphaned, and so would the
processes they started.

**The watchdog** guards them, on any POSIX system (Linux and macOS alike): one
small process per vxtrain process, in its own session, holding the read end of
a pipe. vxtrain writes ``+PGID`` when a replica starts (it leads its own
group) and ``-PGID`` once it has stopped the group and reaped the leader. When
vxtrain dies, however it dies, the kernel closes the pipe; the watchdog reads
end-of-file, SIGKILLs every group still listed (grandchildren included) and
exits. If the watchdog itself dies, the next replica vxtrain starts brings up
another, told about every group still listed.

Why not the Linux parent-death signal (``prctl(PR_SET_PDEATHSIG)``)? It must
be set between fork and exec (``preexec_fn``), which makes Python fork the
whole process instead of using vfork/posix_spawn; in a process where gRPC runs
(the emulator, ``submit --target local``) gRPC's fork handlers then abort the
child (SIGABRT). It would also reach the replica only, not its process group,
and fire when the *thread* that started the replica ends.

What remains: killing vxtrain *and* its watchdog at once (two sessions: a
process-group kill reaches only one; a kill of the whole cgroup or container
takes the replicas too) leaves the replicas running. A group whose every member
is gone by the time the watchdog signals it has a free id that could in
principle belong to a new session by then (pids are handed out cyclically, so
the pid space would have to wrap around in that moment).
"""
from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import threading
from typing import IO

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


class _Watchdog:
    """The process that kills the groups vxtrain still owns once vxtrain is gone."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pipe: IO[bytes] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = 0  # the vxtrain process that started it (a forked child must not write)
        self._groups: set[int] = set()  # told to a new watchdog if this one dies

    def _writer(self) -> IO[bytes] | None:
        if self._pipe is not None and self._pid == os.getpid():
            return self._pipe
        if self._proc is not None:
            self._proc.poll()  # a watchdog that died: reap it rather than leave a zombie
        read_end, write_end = os.pipe()  # both close-on-exec: no replica inherits the write end
        try:
            self._proc = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHDOG], stdin=read_end,
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
        except OSError:
            os.close(write_end)
            return None  # cannot start one: the stop signals still stop the replicas
        finally:
            os.close(read_end)
        self._pipe, self._pid = os.fdopen(write_end, "wb", buffering=0), os.getpid()
        try:
            self._pipe.write("".join(f"+{g}\n" for g in sorted(self._groups)).encode())
        except OSError:
            self._pipe = None
        return self._pipe

    def send(self, op: str, pgid: int) -> None:
        with self._lock:
            (self._groups.add if op == "+" else self._groups.discard)(pgid)
            if op == "-" and self._pipe is None:
                return  # no watchdog (any more) to tell
            pipe = self._writer()
            if pipe is None:
                return
            try:
                pipe.write(f"{op}{pgid}\n".encode())
            except OSError:  # the watchdog died: another starts with the next replica
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
    _WATCHDOG.send("+", pgid)


def release(pgid: int) -> None:
    """Group ``pgid`` is stopped and its leader reaped: the watchdog forgets it."""
    _WATCHDOG.send("-", pgid)


def watchdog_pid() -> int | None:
    """The watchdog of this process, if one was started (for tests)."""
    return _WATCHDOG.pid
