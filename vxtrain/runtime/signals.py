"""The one signal policy of a vxtrain process that starts replicas.

SIGINT (Ctrl-C), SIGTERM (service managers, CI runners, ``kill``) and SIGHUP
(the terminal closed) all mean: stop every replica this process started, then
exit. Replicas run in their own sessions (vxtrain.runtime.runner), so none of
these signals reaches them; if vxtrain died of one (SIGTERM and SIGHUP end
Python without unwinding), every replica would be orphaned.

- The first stop signal starts the stop; later ones do nothing, so a second
  Ctrl-C cannot break off the cleanup that stops the replicas.
- Under ``nohup`` (SIGHUP ignored when vxtrain starts) a hang-up stays ignored.
- Handlers can be set in the main thread only; elsewhere these helpers do
  nothing (the runner itself installs no handler and runs in any thread).

``local-run`` (``stop_on_signals``: the runner stops its replicas when the
event is set), ``submit --target local`` and ``emulator``
(``interrupt_on_signals``: KeyboardInterrupt unwinds to the emulator's
``stop()``) all use this module.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from types import FrameType

#: Signals that stop a run cleanly (every replica stopped) instead of killing vxtrain.
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@contextmanager
def on_stop_signal(stop: Callable[[], None]) -> Iterator[None]:
    """While the block runs, the first stop signal calls ``stop()``; later ones do nothing.

    The previous handlers come back when the block ends. An exception that
    ``stop`` raises (KeyboardInterrupt) surfaces in the main thread.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired = False

    def handler(signum: int, frame: FrameType | None) -> None:
        nonlocal fired
        if not fired:
            fired = True
            stop()

    previous = {sig: signal.signal(sig, handler) for sig in STOP_SIGNALS if not _ignored_hangup(sig)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _ignored_hangup(sig: signal.Signals) -> bool:
    """SIGHUP already ignored: vxtrain runs under ``nohup`` and must outlive the terminal."""
    return sig == signal.SIGHUP and signal.getsignal(sig) is signal.SIG_IGN


def stop_on_signals(stop: threading.Event) -> AbstractContextManager[None]:
    """Turn the first stop signal into ``stop.set()`` while the block runs."""
    return on_stop_signal(stop.set)


def interrupt_on_signals() -> AbstractContextManager[None]:
    """Turn the first stop signal into KeyboardInterrupt while the block runs."""
    return on_stop_signal(_interrupt)


def _interrupt() -> None:
    raise KeyboardInterrupt
