"""What a test leaves running: threads and child processes (tests/conftest.py's ``_no_leaks``).

A thread that outlives its test runs on during the tests after it; one that uses the
global ``random`` (google-api-core's retry backoff does) then breaks hypothesis in
whichever property test happens to be drawing (issue 26). A child process left behind
holds ports and files, and nothing else will ever stop it. So each test's threads and
direct children are compared with what was there before it; what is new and still
running after a short grace fails the test, and the processes are killed.

Children are read from ``/proc/self/task/*/children`` (Linux; every thread's list,
since a child belongs to the thread that forked it), identified by pid *and* start
time so a reused pid is not taken for the old process. Zombies count as gone: they
no longer run, and subprocess reaps them.
"""
from __future__ import annotations

import functools
import gc
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
import weakref
from concurrent import futures
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

#: How long what a test started may take to finish after it (a thread's last write,
#: a process reacting to its SIGTERM). Paid only by a test that leaves something.
GRACE = 2.0

_TASKS = Path("/proc/self/task")  # this process's threads (self: whichever process reads it)


@dataclass(frozen=True)
class Child:
    """A running direct child of this process."""

    pid: int
    started: int  # clock ticks after boot (/proc/PID/stat field 22): with the pid, one process


@dataclass(frozen=True)
class Snapshot:
    """The threads and children running at one moment."""

    threads: frozenset[threading.Thread]
    children: frozenset[Child]
    pools: int  # the number the next thread pool made will get (see number_pools)


def snapshot() -> Snapshot:
    """What runs now (cheap: one listing of this process's threads, and a read per child)."""
    return Snapshot(frozenset(threading.enumerate()), frozenset(running_children()), next(_POOL_NUMBERS))


# A thread pool starts its workers lazily, one per task while it has fewer than
# max_workers: an emulator that a module or session fixture keeps (its grpc server's
# executor) gains threads during whichever tests first send it requests. Those belong
# to a pool older than the test, not to the test; so pools are numbered as they are
# made, and a worker counts only when its pool was made during the test.
_POOL_NUMBERS = itertools.count()


def number_pools() -> None:
    """Have every ThreadPoolExecutor made from now on carry its number (pytest_configure calls this)."""
    init = futures.ThreadPoolExecutor.__init__
    if getattr(init, "_numbers_pools", False):
        return

    @functools.wraps(init)
    def numbered(self: futures.ThreadPoolExecutor, *args: Any, **kwargs: Any) -> None:
        self._leaks_number = next(_POOL_NUMBERS)  # type: ignore[attr-defined]
        init(self, *args, **kwargs)

    numbered._numbers_pools = True  # type: ignore[attr-defined]
    futures.ThreadPoolExecutor.__init__ = numbered  # type: ignore[method-assign]


def _pool_number(thread: threading.Thread) -> int | None:
    """The number of the pool ``thread`` works for; None when it is no pool's worker (or an unnumbered one's)."""
    # concurrent.futures.thread._worker's first argument is a weak reference to its executor
    args = getattr(thread, "_args", ())
    ref = args[0] if args and isinstance(args[0], weakref.ref) else None
    pool = ref() if ref is not None else None
    return getattr(pool, "_leaks_number", None)


def running_children() -> list[Child]:
    """The direct children of this process that have not ended (zombies excluded)."""
    found = []
    for pid in _child_pids():
        child = _running(pid)
        if child is not None:
            found.append(child)
    return found


def _child_pids() -> set[int]:
    """The pids of every thread's children (zombies included)."""
    pids: set[int] = set()
    try:
        tasks = os.listdir(_TASKS)
    except OSError:  # not Linux: no process check (the thread check still runs)
        return pids
    for task in tasks:
        try:
            pids.update(int(p) for p in (_TASKS / task / "children").read_text().split())
        except OSError:  # the thread ended meanwhile
            continue
    return pids


def _running(pid: int) -> Child | None:
    """``pid`` as a Child, or None once it has ended (gone, or a zombie)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the ")" closing the command name: field 3 (state) is [0], field 22 (starttime) is [19]
    return None if fields[0] in ("Z", "X") else Child(pid, int(fields[19]))


def leftovers(before: Snapshot, grace: float = GRACE) -> tuple[list[threading.Thread], list[Child]]:
    """The threads and children started since ``before`` that still run ``grace`` seconds on
    (the wait ends as soon as none is left). Not counted: foreign threads, the workers of
    pools made before ``before``, vxtrain's process-wide watchdog."""
    deadline = time.monotonic() + grace
    threads = [t for t in threading.enumerate() if t not in before.threads and _counts(t, before)]
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    children = _new_children(before)
    while children and time.monotonic() < deadline:
        time.sleep(0.01)
        children = _new_children(before)
    return [t for t in threads if t.is_alive()], children


def _counts(thread: threading.Thread, before: Snapshot) -> bool:
    """Whether ``thread`` is one the test must not leave: not a foreign thread, not a worker
    of a pool older than the test. (No library thread of the suite's is process-wide by
    design; vxtrain's one process-wide helper is a process: see _watchdog_pid.)"""
    # _DummyThread: a thread Python did not start (gRPC's C core calling back into Python)
    # gets one the first time, and it is never removed; there is nothing to join.
    if isinstance(thread, threading._DummyThread) or not thread.is_alive():
        return False
    pool = _pool_number(thread)
    return pool is None or pool >= before.pools


def _new_children(before: Snapshot) -> list[Child]:
    return [c for c in running_children() if c not in before.children and c.pid != _watchdog_pid()]


def _watchdog_pid() -> int | None:
    """vxtrain's reaper watchdog: one per process by design (vxtrain.runtime.reaper), started
    with the first replica of any test and ended at exit, so never one test's leftover."""
    reaper = sys.modules.get("vxtrain.runtime.reaper")  # not imported: no watchdog to allow
    return reaper.watchdog_pid() if reaper is not None else None


def kill(children: list[Child]) -> None:
    """SIGKILL each child (its whole group when it leads one of its own) and reap it."""
    for child in children:
        try:
            if os.getpgid(child.pid) == child.pid != os.getpgrp():
                os.killpg(child.pid, signal.SIGKILL)
            else:
                os.kill(child.pid, signal.SIGKILL)
        except OSError:  # ended meanwhile
            continue
    for child in children:
        _reap(child.pid)


def _reap(pid: int) -> None:
    """Collect a killed child's exit status through the Popen holding it, if any: a Popen
    that never saw its process end warns (ResourceWarning, an error here) when collected."""
    # gc.get_objects() is slow (~0.1 s), but it is only paid by a test that leaked a process
    popen = next((o for o in gc.get_objects() if isinstance(o, subprocess.Popen) and o.pid == pid), None)
    try:
        if popen is not None:
            popen.wait()
        else:
            os.waitpid(pid, 0)
    except ChildProcessError:  # reaped meanwhile
        pass


def describe(threads: list[threading.Thread], children: list[Child]) -> str:
    """What a test left, one line each: the thread's name and where it runs, the process's command."""
    frames = sys._current_frames()
    lines = [f"thread {t.name!r}{' (daemon)' if t.daemon else ''}: {_where(frames.get(t.ident or 0))}"
             for t in threads]
    lines += [f"process {c.pid} (killed now): {_command(c.pid)}" for c in children]
    return "\n  ".join(lines)


def _where(frame: FrameType | None) -> str:
    """Where a thread started and where it is now (its first and last frames outside threading)."""
    if frame is None:
        return "(ended meanwhile)"
    stack = [f for f in traceback.extract_stack(frame) if not f.filename.endswith("threading.py")]
    if not stack:
        return "(in threading)"
    first, last = stack[0], stack[-1]
    where = f"runs {_short(first.filename)}:{first.lineno} {first.name}"
    return where if first is last else f"{where}, now at {_short(last.filename)}:{last.lineno} {last.name}"


def _short(filename: str) -> str:
    """A library's file from its package (site-packages/...), the repository's relative to it."""
    if "site-packages/" in filename:
        return filename.split("site-packages/", 1)[1]
    relative = os.path.relpath(filename)
    return filename if relative.startswith("..") else relative


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"
