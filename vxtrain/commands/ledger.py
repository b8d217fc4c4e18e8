"""``vxtrain jobs`` and ``vxtrain cost``: the jobs vxtrain made, read back from the Job API
(every job carries its key, rung and attempt as labels), with their queue waits, run times
and estimated costs.

Where: ``--region`` (repeatable), else the regions of ``--spec FILE``'s rungs, else the
project's default region; the project: ``--project``, else the spec's, else the default.
``--endpoint HOST:PORT`` reads an emulator's jobs. The ledger is vxtrain.submission.ledger
(``vxtrain.jobs``, ``vxtrain.cost``); the tables are vxtrain.render.ledger.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import Enum
from typing import Annotated, Optional

import typer

from vxtrain import api
from vxtrain.commands import _common as c
from vxtrain.errors import UsageError
from vxtrain.render.ledger import cost_text, jobs_text, stats_text
from vxtrain.render.progress import reporting
from vxtrain.submission.ledger import BY, Query
from vxtrain.submission.names import normalize_state
from vxtrain.vocab.kinds import JobState


class CostOutput(str, Enum):
    """``vxtrain cost --output`` choices."""

    text = "text"
    json = "json"
    csv = "csv"


def jobs(query: Query, *, endpoint: str | None = None, output: c.OutputFormat = c.OutputFormat.text,
         stats: bool = False) -> int:
    """Print the ledger (``stats``: the queue wait's percentiles instead); 0."""
    with reporting():
        ledger = api.jobs(query, endpoint=endpoint)
    if stats and output is c.OutputFormat.json:
        c.emit_json({"stats": [stat.to_json() for stat in ledger.stats()],
                     **{k: v for k, v in ledger.to_json().items() if k != "keys"}})
    elif stats:
        stats_text(ledger.stats())
    elif output is c.OutputFormat.json:
        c.emit_json(ledger.to_json())
    else:
        jobs_text(ledger)
    return 0


def cost(query: Query, by: str, *, endpoint: str | None = None, output: CostOutput = CostOutput.text) -> int:
    """Print the estimated spend grouped ``by``; 0."""
    with reporting():
        report = api.cost(query, by, endpoint=endpoint)
    if output is CostOutput.json:
        c.emit_json(report.to_json())
    elif output is CostOutput.csv:
        report.write_csv(sys.stdout)
    else:
        cost_text(report)
    return 0


def query_of(*, project: str | None, regions: Sequence[str], spec: str | None, variables: Sequence[str] | None,
             endpoint: str | None, key: str | None = None, labels: Sequence[str] | None = None,
             since: str = c.SINCE_ALL, states: Sequence[str] = ()) -> Query:
    """The query the flags say: where (``--region``, else the spec's rungs' regions, else the
    default region), which jobs (``--key``, ``--label``, ``--since``, ``--state``)."""
    if spec is not None:
        found = api.spec_regions(spec, c.make_options(var=variables, project=project), endpoint=endpoint)
        project, regions = project or found[0], tuple(regions) or found[1]
    default_project, default_region = c.where(project, None, endpoint)
    project = project or default_project
    regions = tuple(regions) or ((default_region,) if default_region else ())
    if not project or not regions:
        raise UsageError("jobs and cost need a project and a region: pass --project and --region (or --spec FILE), "
                         "or export GOOGLE_CLOUD_PROJECT and CLOUD_ML_REGION")
    return Query(project, regions, key, c.parse_pairs(labels, "--label", "KEY=VALUE"), c.since_time(since),
                 frozenset(state_of(s) for s in states))


def state_of(text: str) -> JobState:
    """``--state``: ``running``, ``RUNNING`` or ``JOB_STATE_RUNNING``."""
    state = JobState.of(normalize_state(text))
    if state is JobState.UNSPECIFIED:
        names = ", ".join(s.value.removeprefix("JOB_STATE_").lower() for s in JobState if s is not JobState.UNSPECIFIED)
        raise UsageError(f"--state takes a job state ({names}); got {text!r}")
    return state


KeyOpt = Annotated[Optional[str], typer.Option("--key", help="Only the jobs of this --idempotency-key.")]
LabelOpt = Annotated[Optional[list[str]], typer.Option("--label", help="KEY=VALUE: only jobs with this label (repeatable).")]
RegionsOpt = Annotated[Optional[list[str]], typer.Option(
    "--region", help="A region to list (repeatable; else the --spec's rungs' regions, else the default region).")]
SpecOpt = Annotated[Optional[str], typer.Option("--spec", metavar="FILE", help="List the regions of this spec's rungs.")]
VarsOpt = Annotated[Optional[list[str]], typer.Option("--var", help="NAME=VALUE for ${NAME} in the --spec.")]


def _since() -> object:
    return typer.Option("--since", help=f"Jobs created since: a duration back (30m, 12h, 7d), an RFC 3339 time, "
                                        f"or {c.SINCE_ALL}.")


def register(app: typer.Typer) -> None:
    """Add ``jobs`` and ``cost``."""

    @c.command(app, "jobs")
    def _jobs(
        key: KeyOpt = None, label: LabelOpt = None,
        since: Annotated[str, _since()] = "7d",
        state: Annotated[Optional[list[str]], typer.Option(
            "--state", help="Only jobs in this state (repeatable): running, succeeded, failed, ...")] = None,
        region: RegionsOpt = None, spec: SpecOpt = None, var: VarsOpt = None, project: c.ProjectOpt = None,
        endpoint: c.EndpointOpt = None, output: c.OutputOpt = c.OutputFormat.text,
        stats: Annotated[bool, typer.Option(
            "--stats", help="The queue wait (create → start): p50 and p90 per machine and region.")] = False,
    ) -> None:
        query = query_of(project=project, regions=region or (), spec=spec, variables=var, endpoint=endpoint, key=key,
                         labels=label, since=since, states=state or ())
        raise typer.Exit(jobs(query, endpoint=endpoint, output=output, stats=stats))

    @c.command(app, "cost")
    def _cost(
        since: Annotated[str, _since()] = "30d",
        by: Annotated[str, typer.Option(
            "--by", help=f"Group by {', '.join(BY)} or label:NAME (default key).")] = "key",
        key: KeyOpt = None, label: LabelOpt = None, region: RegionsOpt = None, spec: SpecOpt = None,
        var: VarsOpt = None, project: c.ProjectOpt = None, endpoint: c.EndpointOpt = None,
        output: Annotated[CostOutput, typer.Option("--output", "-o", help="text, json or csv.")] = CostOutput.text,
    ) -> None:
        query = query_of(project=project, regions=region or (), spec=spec, variables=var, endpoint=endpoint, key=key,
                         labels=label, since=since)
        raise typer.Exit(cost(query, by, endpoint=endpoint, output=output))
