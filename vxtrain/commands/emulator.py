"""``vxtrain emulator``: serve the emulated Vertex AI JobService (and Cloud Logging's
LoggingServiceV2 with its jobs' lines, and the Cloud Quotas API with the ``--quota``
limits, on the same port) until Ctrl-C.

The emulator (grpc and google.cloud.aiplatform's protos) is imported only when the
command runs: ``vxtrain emulator --help`` and completing its options import this
module, and would take 1.2 s longer with it.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Optional

import typer

from vxtrain.commands import _common as c
from vxtrain.model import DURATION_MAX_SECONDS
from vxtrain.render import emulator_started
from vxtrain.runtime.gpus import GpuOptions
from vxtrain.runtime.signals import interrupt_on_signals

#: The port ``vxtrain emulator`` listens on when none is given (``--endpoint 127.0.0.1:8470``):
#: vxtrain.backends.emulator.DEFAULT_PORT, repeated to keep this module light (the docstring says
#: why; tests/test_cli.py checks that the two agree).
DEFAULT_PORT = 8470


def emulator(host: str = "127.0.0.1", port: int = DEFAULT_PORT, fault: Sequence[str] = (),
             simulate: float | None = None, workdir: str | Path | None = None,
             seed: int | None = None, allow_remote: bool = False, quota: Sequence[str] = (),
             gpus: GpuOptions | None = None, stockout: Sequence[str] = (),
             pending: Sequence[str] = (), stockout_after: float = 1.0, preempt: Sequence[str] = (),
             http_port: int | None = None) -> int:
    """Serve on ``host:port`` until Ctrl-C, SIGTERM or SIGHUP (the normal ways to stop it:
    exit 0), then cancel the running jobs and stop their processes (vxtrain.runtime.signals).
    ``gpus``: how every job's replicas share this host's GPUs (as for ``local-run``).

    A host that is not loopback is refused (exit 2) unless ``allow_remote``: the
    emulator runs the commands of the jobs it is sent. ``quota``: the limits its Cloud
    Quotas API serves and its creates enforce (``METRIC:REGION=N``). Jobs created in a
    ``stockout`` region fail for capacity after ``stockout_after`` seconds; in a
    ``pending`` one they stay PENDING until cancelled. ``preempt``: ``REGION:AFTER[:COUNT]`` rules
    by which a job RUNNING AFTER seconds loses its machines and ends FAILED for capacity.
    ``http_port``: serve the same services over HTTP/JSON there too (gcloud, curl), and
    print gcloud's settings for it.
    """
    # lazy: grpc and aiplatform's protos, +1.2 s for `vxtrain emulator --help` (see the module docstring)
    from vxtrain.backends.emulator import parse_fault, start_emulator
    from vxtrain.backends.emulator.quotas import parse_quota, unmatched
    from vxtrain.backends.emulator.server import is_loopback_host, refuse_remote
    from vxtrain.backends.emulator.stockouts import parse_preempt, quota_region_warnings, region_warnings

    faults = [parse_fault(f) for f in fault]  # bad --fault values fail before binding
    limits = [parse_quota(q) for q in quota]  # and bad --quota values
    preemptions = [parse_preempt(p) for p in preempt]  # and bad --preempt values
    warnings = [*filter(None, map(unmatched, limits)), *quota_region_warnings(limits),
                *region_warnings(stockout, pending, preemptions)]
    for why in warnings:
        print(f"vxtrain emulator: warning: {why}", file=sys.stderr, flush=True)
    if not allow_remote:
        refuse_remote(host)
    elif not is_loopback_host(host):
        print(f"vxtrain emulator: WARNING: serving on {host} (--allow-remote): whoever can reach this "
              "port with its token (which crosses the network in clear text) can run any command as this "
              "user on this machine; vxtrain's own clients send the token over loopback only (use ssh -L)",
              file=sys.stderr, flush=True)
    with interrupt_on_signals():
        handle = start_emulator(host, port, faults=faults, simulate_seconds=simulate, workdir=workdir,
                                seed=seed, allow_remote=allow_remote, quotas=limits,
                                gpus=gpus or GpuOptions(), stockout=stockout, pending=pending,
                                stockout_after=stockout_after, preempt=preemptions, http_port=http_port)
        try:
            emulator_started(handle.address, handle.http_url, handle.gcloud_environment())
            handle.wait_for_termination()
        except KeyboardInterrupt:
            print("vxtrain emulator stopped", file=sys.stderr, flush=True)
        finally:
            handle.stop()
    return 0


def register(app: typer.Typer) -> None:
    """Add the ``emulator`` command to ``app``."""

    @c.command(app, "emulator")
    def _emulator(
        host: Annotated[str, typer.Option("--host", help="Address to bind: loopback only, unless --allow-remote.")]
        = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                          help="Port to bind exclusively (0: any free port).")]
        = DEFAULT_PORT,
        fault: Annotated[Optional[list[str]], typer.Option(
            "--fault", help="METHOD:KIND:COUNT, repeatable; e.g. create:unavailable-before-commit:1. "
                            "Also VXTRAIN_EMULATOR_FAULTS (comma-separated).")] = None,
        simulate: Annotated[Optional[float], typer.Option(
            "--simulate", metavar="SECONDS", min=0, max=DURATION_MAX_SECONDS,
            help="Run nothing: walk each job through its states over SECONDS and succeed.")] = None,
        workdir: Annotated[Optional[Path], typer.Option(
            "--workdir", help="Directory jobs' relative commands run in (default: here).")] = None,
        seed: Annotated[Optional[int], typer.Option(
            "--seed", help="Seed of studies' random search (reproducible trials).")] = None,
        allow_remote: Annotated[bool, typer.Option(
            "--allow-remote", help="Allow a --host that is not loopback. Whoever reaches the port "
                                   "can then run any command as you.")] = False,
        quota: Annotated[Optional[list[str]], typer.Option(
            "--quota", metavar="METRIC:REGION=N",
            help="A quota limit its Cloud Quotas API serves and its creates enforce, repeatable; METRIC the "
                 "short name (custom_model_training_nvidia_a100_gpus); METRIC=N: every region.")] = None,
        gpus: c.GpusOpt = None,
        share_gpus: c.ShareGpusOpt = False,
        no_gpus: c.NoGpusOpt = False,
        stockout: Annotated[Optional[list[str]], typer.Option(
            "--stockout", metavar="REGION",
            help="Jobs created in REGION stay PENDING, then end FAILED for capacity (code 8, "
                 "'Resources are insufficient in region'); repeatable.")] = None,
        stockout_after: Annotated[float, typer.Option(
            "--stockout-after", metavar="SECONDS", min=0, max=DURATION_MAX_SECONDS,
            help="How long a --stockout job stays PENDING before it fails.")] = 1.0,
        pending: Annotated[Optional[list[str]], typer.Option(
            "--pending", metavar="REGION", help="Jobs created in REGION stay PENDING until cancelled; repeatable.")]
        = None,
        preempt: Annotated[Optional[list[str]], typer.Option(
            "--preempt", metavar="REGION:AFTER[:COUNT]",
            help="A job in REGION RUNNING for AFTER seconds loses its machines: its replicas are stopped and "
                 "it ends FAILED for capacity (code 8), as a preempted Spot job does; the first COUNT jobs "
                 "created there (default: every one); repeatable.")] = None,
        http_port: Annotated[Optional[int], typer.Option(
            "--http-port", min=0, max=65535,
            help="Serve the same services over HTTP/JSON (REST) on this port too, for gcloud and curl "
                 "(0: any free port); prints gcloud's settings for it.")] = None,
    ) -> None:
        raise typer.Exit(emulator(host, port, fault or (), simulate, workdir, seed, allow_remote, quota or (),
                                  c.gpu_options(gpus, share_gpus, no_gpus), stockout or (), pending or (),
                                  stockout_after, preempt or (), http_port))
