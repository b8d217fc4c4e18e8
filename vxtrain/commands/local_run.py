"""``vxtrain local-run FILE``: every replica of the job as a process on this host.

Exit codes (README, "Exit codes"): 0 when the chief succeeded, 3 when a replica failed,
130 on Ctrl-C — after every child process is gone.
"""
from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from vxtrain import api
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.errors import LocalRunError, UsageError
from vxtrain.loading.document import spec_folder
from vxtrain.runtime.signals import stop_on_signals

if TYPE_CHECKING:
    from vxtrain.runtime.gpus import GpuOptions

def local_run(path: str, options: Options, trial: str | None = None,
              output: c.OutputFormat = c.OutputFormat.text, seed: int | None = None,
              gpus: GpuOptions | None = None) -> int:
    """Run the spec's replicas locally; 0 on success, 3 on a failed replica, 130 on Ctrl-C.

    A spec with ``study:`` (and no ``trial``) runs the whole study: 0 when it
    succeeded, 3 when it failed (see :func:`run_study_command`). ``gpus``: how this
    host's GPUs are handed out; too few raises GpuShortageError (exit 1) before
    anything starts.
    """
    from vxtrain.runtime import runner as local  # lazy: the CLI imports every command at start-up
    from vxtrain.runtime.gpus import GpuOptions

    gpus = gpus or GpuOptions()
    trial = c.parse_trial(trial)
    result = api.load_job(path, options)
    job_spec = (result.custom_job or {}).get("jobSpec", {})
    stop = threading.Event()
    stream = sys.stderr if output is c.OutputFormat.json else sys.stdout
    if result.hyperparameter_tuning_job is not None and trial is None:
        return run_study_command(result, stop, stream, output, seed, spec_folder(result.file), gpus)
    extra_args = study_trial_args(result.hyperparameter_tuning_job, trial, seed)
    with stop_on_signals(stop):
        run = local.run_job(result.job, job_spec, trial=trial, extra_args=extra_args, stop=stop,
                            out=stream, base_dir=spec_folder(result.file), gpus=gpus)
    if output is c.OutputFormat.json:
        c.emit_json(run.to_json())
    if run.cancelled:
        typer.echo("vxtrain: interrupted; every replica was stopped", err=True)
        return c.INTERRUPTED
    if not run.succeeded and output is c.OutputFormat.text:
        raise LocalRunError(run.message)
    return 0 if run.succeeded else LocalRunError.exit_code


def study_trial_args(hpt: dict[str, Any] | None, trial: str | None, seed: int | None) -> list[str]:
    """The ``--name=value`` arguments of trial ``trial`` of the study (none outside a study).

    Trial N gets the N-th point the study itself would run (grid order, or the
    random draws of ``seed``), as Vertex AI appends a trial's parameters.
    """
    if hpt is None or trial is None:
        return []
    from vxtrain.runtime import study  # lazy: the CLI imports every command at start-up

    config = study.StudyConfig.from_hpt_json(hpt)
    points = study.suggest(config.study_spec, config.max_trials, seed=seed).points
    if int(trial) > len(points):
        raise UsageError(f"--trial {trial}: the study has {len(points)} trial(s), numbered from 1")
    return study.trial_args(points[int(trial) - 1])


def run_study_command(result: Any, stop: threading.Event, stream: Any, output: c.OutputFormat,
                      seed: int | None, base_dir: Path, gpus: GpuOptions) -> int:
    """Every trial of the study with the local runner, then the trial table and the best trial."""
    from vxtrain.render.study import summary_lines  # lazy, as study: the CLI imports every command at start-up
    from vxtrain.runtime import study  # lazy: the CLI imports every command at start-up

    hpt = result.hyperparameter_tuning_job
    config = study.StudyConfig.from_hpt_json(hpt)
    with stop_on_signals(stop):
        run = study.run_study(result.job, hpt["trialJobSpec"], config, seed=seed, stop=stop, out=stream,
                              base_dir=base_dir, gpus=gpus)
    if output is c.OutputFormat.json:
        c.emit_json(run.to_json())
    else:
        metric_ids = [g.id for g in run.goals]
        lines = summary_lines(run.to_json(), metric_ids)  # notes went out when the study started
        lines.append(f"study {'succeeded' if run.succeeded else 'FAILED'}: {run.message}")
        typer.echo("\n".join(lines))
    if run.cancelled:
        typer.echo("vxtrain: interrupted; every replica was stopped", err=True)
        return c.INTERRUPTED
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
