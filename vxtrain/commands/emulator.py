"""``vxtrain emulator``: serve the emulated Vertex AI JobService until Ctrl-C.

grpc and google.cloud.aiplatform are imported only when the command runs: the
CLI imports every command module at startup and must stay fast.
"""
from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Annotated, Optional

import typer

#: The port ``vxtrain emulator`` listens on when none is given (``--endpoint 127.0.0.1:8470``);
#: the same as vxtrain.backends.emulator.DEFAULT_PORT, repeated to keep this import light.
DEFAULT_PORT = 8470


@contextmanager
def interrupt_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise KeyboardInterrupt once, then are ignored until the block ends.

    SIGTERM is how service managers, CI runners and ``kill`` stop a process;
    by default it ends Python without unwinding, and the replicas of running
    jobs (each in its own session: vxtrain.runtime.runner) would be orphaned.
    Ignoring the signals after the first keeps a second one from breaking off
    the cleanup that stops those replicas. Main thread only (signal handlers
    can be set nowhere else).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    sigs = (signal.SIGINT, signal.SIGTERM)

    def interrupt(signum: int, frame: FrameType | None) -> None:
        for sig in sigs:
            signal.signal(sig, signal.SIG_IGN)
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in sigs}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def emulator(host: str = "127.0.0.1", port: int = DEFAULT_PORT, fault: Sequence[str] = (),
             simulate: float | None = None, workdir: str | Path | None = None,
             seed: int | None = None) -> int:
    """Serve on ``host:port`` until Ctrl-C or SIGTERM (the normal ways to stop it: exit 0),
    then cancel the running jobs and stop their processes."""
    from vxtrain.backends.emulator import parse_fault, start_emulator

    faults = [parse_fault(f) for f in fault]  # bad --fault values fail before binding
    with interrupt_on_signals():
        handle = start_emulator(host, port, faults=faults, simulate_seconds=simulate, workdir=workdir,
                                seed=seed)
        print(f"vxtrain emulator listening on {handle.address}", file=sys.stderr, flush=True)
        try:
            handle.wait_for_termination()
        except KeyboardInterrupt:
            print("vxtrain emulator stopped", file=sys.stderr, flush=True)
        finally:
            handle.stop()
    return 0


def register(app: typer.Typer) -> None:
    """Add the ``emulator`` command to ``app``."""

    @app.command("emulator")
    def _emulator(
        host: Annotated[str, typer.Option("--host", help="Address to bind (loopback unless told otherwise).")]
        = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", help="Port to bind exclusively (0: any free port).")]
        = DEFAULT_PORT,
        fault: Annotated[Optional[list[str]], typer.Option(
            "--fault", help="METHOD:KIND:COUNT, repeatable; e.g. create:unavailable-before-commit:1. "
                            "Also VXTRAIN_EMULATOR_FAULTS (comma-separated).")] = None,
        simulate: Annotated[Optional[float], typer.Option(
            "--simulate", metavar="SECONDS",
            help="Run nothing: walk each job through its states over SECONDS and succeed.")] = None,
        workdir: Annotated[Optional[Path], typer.Option(
            "--workdir", help="Directory jobs' relative commands run in (default: here).")] = None,
        seed: Annotated[Optional[int], typer.Option(
            "--seed", help="Seed of studies' random search (reproducible trials).")] = None,
    ) -> None:
        """Serve the emulated Vertex AI JobService (gRPC) on 127.0.0.1 until Ctrl-C or SIGTERM."""
        raise typer.Exit(emulator(host, port, fault or (), simulate, workdir, seed))
