"""``vxtrain local-run FILE``: every replica of the job as a process on this host.

Exit codes (docs/cli.md, "Exit codes"): 0 when the chief succeeded, 3 when a replica failed,
130 on Ctrl-C — after every child process is gone.
"""
from __future__ import annotations

import sys
import threading
from typing import Annotated, Optional

import typer

from vxtrain import api
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.errors import LocalRunError
from vxtrain.render.study import summary_lines
from vxtrain.runtime.gpus import GpuOptions
from vxtrain.runtime.signals import stop_on_signals
from vxtrain.runtime.study import StudyResult

def local_run(path: str, options: Options, trial: str | None = None,
              output: c.OutputFormat = c.OutputFormat.text, seed: int | None = None,
              gpus: GpuOptions | None = None) -> int:
    """Run the spec's replicas locally (vxtrain.api.local_run); 0 on success, 3 on a failed
    replica, 130 on Ctrl-C.

    A spec with ``study:`` (and no ``trial``) runs the whole study: 0 when it succeeded,
    3 when it failed, after the trial table and the best trial. ``gpus``: how this host's
    GPUs are handed out; too few raises GpuShortageError (exit 1) before anything starts.
    """
    trial = c.parse_trial(trial)
    stop = threading.Event()
    stream = sys.stderr if output is c.OutputFormat.json else sys.stdout
    with stop_on_signals(stop):
        run = api.local_run(path, options, trial=trial, seed=seed, stop=stop, out=stream, gpus=gpus)
    if output is c.OutputFormat.json:
        c.emit_json(run.to_json())
    elif isinstance(run, StudyResult):
        metric_ids = [g.id for g in run.goals]
        lines = summary_lines(run.to_json(), metric_ids)  # notes went out when the study started
        lines.append(f"study {'succeeded' if run.succeeded else 'FAILED'}: {run.message}")
        typer.echo("\n".join(lines))
    if run.cancelled:
        typer.echo("vxtrain: interrupted; every replica was stopped", err=True)
        return c.INTERRUPTED
    if not run.succeeded and output is c.OutputFormat.text and not isinstance(run, StudyResult):
        raise LocalRunError(run.message)
    return 0 if run.succeeded else LocalRunError.exit_code


def register(app: typer.Typer) -> None:
    """Add the ``local-run`` command."""

    @c.command(app, "local-run")
    @c.spec_options
    def _cmd(
        path: c.SpecArg,
        trial: Annotated[Optional[str], typer.Option("--trial", help="Run as trial N (from 1) of a tuning job.")] = None,
        seed: Annotated[Optional[int], typer.Option("--seed", help="Seed of a study's random search (reproducible trials).")] = None,
        output: c.OutputOpt = c.OutputFormat.text,
        gpus: c.GpusOpt = None,
        share_gpus: c.ShareGpusOpt = False,
        no_gpus: c.NoGpusOpt = False,
        *,
        options: Options,
    ) -> None:
        raise typer.Exit(local_run(path, options, trial, output, seed, c.gpu_options(gpus, share_gpus, no_gpus)))
