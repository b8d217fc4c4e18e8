"""``vxtrain logs NAME``: a job's log lines, ``[workerpoolK-I] text``, oldest first.

On Vertex AI they come from Cloud Logging (``resource.type="ml_job"``, the job's
id), against an emulator (``--endpoint``) from its LoggingServiceV2.
``--follow`` prints lines as they arrive until the job has ended and its last
lines are in; ``--replica workerpoolK-I`` keeps one replica's, ``--since`` starts
later. The lines are this command's output, so they go to stdout; with
``--output json`` one document (``{"name", "entries": [...]}``), or with
``--follow`` one entry object per line as they arrive.
"""
from __future__ import annotations

import json
import sys
from typing import Annotated, Any, Optional

import typer

from vxtrain.commands import _common as c
from vxtrain.joblogs import check_replica, parse_since
from vxtrain.render.progress import reporting
from vxtrain.submission import Hooks, Session


def logs(name: str, *, project: str | None = None, region: str | None = None, endpoint: str | None = None,
         follow: bool = False, replica: str | None = None, since: str | None = None,
         output: c.OutputFormat = c.OutputFormat.text) -> int:
    """Print the job's log lines; with ``follow``, until the job ends (0 whatever its state)."""
    if replica:
        check_replica(replica)
    start = parse_since(since) if since else None
    # Getting the job first says NOT_FOUND for a wrong name (a log query would say
    # nothing at all) and, for a bare id, finds its kind.
    sink = _print_json_lines if output is c.OutputFormat.json else _print_lines
    with reporting(), Session(endpoint=endpoint, hooks=Hooks(logs=sink if follow else None)) as session:
        full = c.on_job(name, project, region, endpoint, session.get).name
        if not follow:
            entries = session.logs(full, replica=replica, since=start)
            if output is c.OutputFormat.json:
                c.emit_json({"name": full, "entries": [e.to_json() for e in entries]})
            else:
                _print_lines(entries)
            return 0
        session.wait(full, check=False, replica=replica, since=start)
    return 0


def _print_lines(entries: list[Any]) -> None:
    sys.stdout.write("".join(entry.line() + "\n" for entry in entries))
    sys.stdout.flush()


def _print_json_lines(entries: list[Any]) -> None:
    sys.stdout.write("".join(json.dumps(entry.to_json()) + "\n" for entry in entries))
    sys.stdout.flush()


def register(app: typer.Typer) -> None:
    """Add the ``logs`` command."""

    @c.command(app, "logs")
    def _logs(
        name: c.NameArg,
        follow: Annotated[bool, typer.Option("--follow", help="Print lines as they arrive, until the job ends.")] = False,
        replica: Annotated[Optional[str], typer.Option("--replica", help="Only this replica's lines: workerpoolK-I (e.g. workerpool1-0).")] = None,
        since: Annotated[Optional[str], typer.Option("--since", help="Start at a time: a duration back (30s, 10m, 2h, 1d) or RFC 3339.")] = None,
        project: c.ProjectOpt = None, region: c.RegionOpt = None, endpoint: c.EndpointOpt = None,
        output: c.OutputOpt = c.OutputFormat.text,
    ) -> None:
        raise typer.Exit(logs(name, project=project, region=region, endpoint=endpoint, follow=follow,
                              replica=replica, since=since, output=output))
