"""``vxtrain env FILE --replica workerpoolK:I``: the environment that replica gets on Vertex AI.

Host names are in Vertex AI's style (``cmle-training-workerpool1-<job id>-0:2222``);
the job id is a placeholder until the job exists.
"""
from __future__ import annotations

import shlex
from typing import Annotated, Optional

import typer

from vxtrain import api
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.commands._common import parse_trial
from vxtrain.errors import UsageError, VxtrainError
from vxtrain import slots
from vxtrain.model import Job
from vxtrain.runtime import cluster_env
from vxtrain.slots import POOL_INDEX


def parse_replica(text: str) -> tuple[int, int]:
    """``workerpool1:0`` (or ``workerpool1-0``, ``workers:0``) → ``(1, 0)``."""
    found = slots.parse_replica(text, loose=True)
    if found is None:
        raise UsageError(f"--replica takes workerpoolK:I (e.g. workerpool1:0) or ROLE:I with ROLE one of "
                         f"{', '.join(POOL_INDEX)}; got {text!r}")
    return found


def _existing(job: Job) -> str:
    """``workerpool0:0, workerpool1:0..3``: the replicas a message can offer."""
    counts = cluster_env.pool_replicas(job)
    return ", ".join(f"workerpool{k}:0..{n - 1}" if n > 1 else f"workerpool{k}:0"
                     for k, n in counts.items() if n) or "none"


def compute_env(path: str, replica: str, options: Options, trial: str | None = None) -> dict[str, str]:
    """The variables of one replica of the spec at ``path`` (raises for a missing replica)."""
    pool_index, replica_index = parse_replica(replica)
    trial = parse_trial(trial)
    result = api.load_job(path, options)
    job = result.job
    assert job is not None  # load_job returns compiled results only
    if not cluster_env.has_replica(job, pool_index, replica_index):
        raise VxtrainError(f"{path}: the job has no replica workerpool{pool_index}:{replica_index}; "
                           f"its replicas are {_existing(job)}")
    job_spec = (result.custom_job or {}).get("jobSpec", {})
    return cluster_env.replica_env(job, job_spec, pool_index, replica_index, trial=trial)


def env(path: str, replica: str, options: Options, trial: str | None = None,
        output: c.OutputFormat = c.OutputFormat.text) -> int:
    """Print the replica's environment: ``export VAR='...'`` lines, or ``{VAR: value}`` JSON."""
    values = compute_env(path, replica, options, trial)
    if output is c.OutputFormat.json:
        c.emit_json(values)
    else:
        typer.echo(export_lines(values))
    return 0


def export_lines(values: dict[str, str]) -> str:
    """Sourceable shell: one ``export NAME='value'`` per variable."""
    return "\n".join(f"export {name}={shlex.quote(value)}" for name, value in values.items())


def register(app: typer.Typer) -> None:
    """Add the ``env`` command."""

    @c.command(app, "env")
    @c.spec_options
    def _cmd(
        path: c.SpecArg,
        replica: Annotated[str, typer.Option("--replica", "-r", help="workerpoolK:I, e.g. workerpool1:0.")],
        trial: Annotated[Optional[str], typer.Option("--trial", help="Trial id (from 1) of a tuning job.")] = None,
        output: c.OutputOpt = c.OutputFormat.text,
        *,
        options: Options,
    ) -> None:
        raise typer.Exit(env(path, replica, options, trial, output))
