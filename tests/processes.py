"""Stopping a process a test started, whatever state the test left it in."""
from __future__ import annotations

import os
import signal
import subprocess
from typing import Any


def stop(proc: subprocess.Popen[Any], signum: int = signal.SIGTERM, timeout: float = 10.0) -> tuple[Any, Any]:
    """Send ``signum`` to ``proc`` (if it still runs) and wait up to ``timeout`` seconds; past
    that, SIGKILL it, with its process group when it leads one of its own (start_new_session).

    Returns what ``communicate`` read (its pipes are drained, so a process blocked on a
    full pipe can still exit, then closed); ``proc.returncode`` is set. Never raises for
    a slow process: it is a teardown, and the test's own failure is the one to report.
    """
    if proc.poll() is None:
        proc.send_signal(signum)
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(proc)
        return proc.communicate()


def _kill(proc: subprocess.Popen[Any]) -> None:
    try:
        if os.getpgid(proc.pid) == proc.pid != os.getpgrp():  # its own group: the whole group
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # in ours: the group would be pytest too
            proc.kill()
    except ProcessLookupError:  # ended meanwhile
        pass
