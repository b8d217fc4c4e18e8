"""``vxtrain status|wait|cancel NAME`` and ``vxtrain list``: operations on jobs.

NAME is a full resource name (``projects/P/locations/R/customJobs/ID`` or
``.../hyperparameterTuningJobs/ID``) or a bare id with --project/--region.
``--endpoint HOST:PORT`` talks to an emulator instead of Vertex AI.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Optional

import typer

from vxtrain.commands import _common as c
from vxtrain.errors import JobFailedError, UsageError
from vxtrain.render.progress import reporting
from vxtrain.submission import Hooks, JobView, Session, build_filter
from vxtrain.submission.decide import lost_hint
from vxtrain.submission.views import raise_for_state


def status(name: str, *, project: str | None = None, region: str | None = None,
           endpoint: str | None = None, output: c.OutputFormat = c.OutputFormat.text) -> int:
    """Print the job's state and its cost so far (list prices × run time); 0 (whatever the state:
    use ``wait`` for an exit code)."""
    with reporting(), Session(endpoint=endpoint) as session:
        view = c.on_job(name, project, region, endpoint, lambda full: session.get(full, priced=True))
    c.print_view(view.to_json(), output)
    return 0


def wait(name: str, *, project: str | None = None, region: str | None = None,
         endpoint: str | None = None, output: c.OutputFormat = c.OutputFormat.text,
         timeout: float | None = None, logs: bool = True) -> int:
    """Follow the job to its end, its log lines on stderr (unless not ``logs``):
    0 SUCCEEDED, 3 FAILED/CANCELLED/EXPIRED."""
    with reporting(), c.progress(True) as progress:
        hooks = Hooks(progress, progress.log if logs else None)
        with Session(endpoint=endpoint, hooks=hooks) as session:
            view = c.on_job(name, project, region, endpoint,
                            lambda full: session.wait(full, timeout=timeout, priced=True, check=False))
        try:
            raise_for_state(view)
        except JobFailedError as exc:
            c.print_failure_tail(progress, exc.job)
            c.print_view(exc.job, output)
            hint = lost_hint(view)
            if hint is not None:  # preempted: not a failure of the code; say how recovery carries it on
                raise exc.reworded(f"{exc}; {hint}") from exc
            raise
    c.print_view(view.to_json(), output)
    return 0


def cancel(name: str, *, project: str | None = None, region: str | None = None,
           endpoint: str | None = None, output: c.OutputFormat = c.OutputFormat.text) -> int:
    """Ask for the job to be cancelled and print its state (CANCELLING, later CANCELLED)."""
    with reporting(), Session(endpoint=endpoint) as session:
        view = c.on_job(name, project, region, endpoint, session.cancel)
    c.print_view(view.to_json(), output)
    return 0


def list_(*, project: str | None = None, region: str | None = None, endpoint: str | None = None,
          filter_: str | None = None, labels: Mapping[str, str] | None = None,
          state: str | None = None, tuning: bool = False,
          output: c.OutputFormat = c.OutputFormat.text) -> int:
    """List jobs in the project/region (newest first, as the API returns them)."""
    project, region = c.where(project, region, endpoint)
    if not project or not region:
        raise UsageError("list needs a project and a region: pass --project/--region or export "
                         "GOOGLE_CLOUD_PROJECT/CLOUD_ML_REGION")
    with reporting(), Session(endpoint=endpoint) as session:
        views = session.jobs(project, region, build_filter(filter_, labels, state), tuning=tuning)
    if output is c.OutputFormat.json:
        c.emit_json({"jobs": [v.to_json() for v in views]})
    else:
        _print_table(views)
    return 0


def _print_table(views: Sequence[JobView]) -> None:
    if not views:
        typer.echo("no jobs", err=True)
    for view in views:
        job_id = view.name.rsplit("/", 1)[-1]
        typer.echo(f"{job_id}\t{view.state.value}\t{view.display_name}\t{view.create_time or ''}")


def register(app: typer.Typer) -> None:
    """Add ``status``, ``wait``, ``cancel`` and ``list``."""

    @c.command(app, "status")
    def _status(name: c.NameArg, project: c.ProjectOpt = None, region: c.RegionOpt = None,
                endpoint: c.EndpointOpt = None, output: c.OutputOpt = c.OutputFormat.text) -> None:
        raise typer.Exit(status(name, project=project, region=region, endpoint=endpoint, output=output))

    @c.command(app, "wait")
    def _wait(name: c.NameArg, project: c.ProjectOpt = None, region: c.RegionOpt = None,
              endpoint: c.EndpointOpt = None, output: c.OutputOpt = c.OutputFormat.text,
              timeout: Annotated[Optional[float], typer.Option(
                  "--timeout", help="Give up (exit 4) after this many seconds.")] = None,
              no_logs: c.NoLogsOpt = False) -> None:
        raise typer.Exit(wait(name, project=project, region=region, endpoint=endpoint, output=output,
                              timeout=timeout, logs=not no_logs))

    @c.command(app, "cancel")
    def _cancel(name: c.NameArg, project: c.ProjectOpt = None, region: c.RegionOpt = None,
                endpoint: c.EndpointOpt = None, output: c.OutputOpt = c.OutputFormat.text) -> None:
        raise typer.Exit(cancel(name, project=project, region=region, endpoint=endpoint, output=output))

    @c.command(app, "list")
    def _list(
        project: c.ProjectOpt = None, region: c.RegionOpt = None, endpoint: c.EndpointOpt = None,
        filter_: Annotated[Optional[str], typer.Option("--filter", help="Raw list filter (AIP-160).")] = None,
        label: Annotated[Optional[list[str]], typer.Option("--label", help="KEY=VALUE (repeatable).")] = None,
        state: Annotated[Optional[str], typer.Option("--state", help="e.g. running or JOB_STATE_FAILED.")] = None,
        tuning: Annotated[bool, typer.Option("--tuning", help="List HyperparameterTuningJobs.")] = False,
        output: c.OutputOpt = c.OutputFormat.text,
    ) -> None:
        raise typer.Exit(list_(project=project, region=region, endpoint=endpoint, filter_=filter_,
                               labels=c.parse_pairs(label, "--label", "KEY=VALUE"), state=state, tuning=tuning, output=output))
