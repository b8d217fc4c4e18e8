"""``vxtrain ui``: the jobs table, one job's page (timeline, cost, live logs, the job as
sent) and a spec's plan report, as a local web page on 127.0.0.1 behind a token.

Where the jobs are: ``--endpoint HOST:PORT`` (an emulator) or Vertex AI; the project
``--project`` (else the environment's), the regions ``--region`` (repeatable; else the
default region), the jobs created since ``--since`` (as ``vxtrain jobs``). The URL it
prints carries the token once; the page runs until Ctrl-C. The server is vxtrain.ui,
imported when the command runs (it loads the submission code and the report).
"""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated, Optional

import typer

from vxtrain.commands import _common as c
from vxtrain.errors import UsageError
from vxtrain.render.progress import reporting


def ui(*, port: int = 0, endpoint: str | None = None, project: str | None = None, regions: Sequence[str] = (),
       since: str = "7d") -> int:
    """Serve the ui until Ctrl-C, SIGTERM or SIGHUP; 0."""
    # lazy: the server, the ledger and the report are this command's alone (`vxtrain ui --help` skips them)
    from vxtrain.runtime.signals import interrupt_on_signals
    from vxtrain.submission import Session
    from vxtrain.submission.ledger import Query
    from vxtrain.ui.server import start
    from vxtrain.ui.source import Source

    default_project, default_region = c.where(project, None, endpoint)
    regions = tuple(regions) or ((default_region,) if default_region else ())
    if not default_project or not regions:
        raise UsageError("the ui needs a project and a region: pass --project and --region, --endpoint HOST:PORT "
                         "(an emulator), or export GOOGLE_CLOUD_PROJECT and CLOUD_ML_REGION")
    query = Query(default_project, regions, since=c.since_time(since))
    with interrupt_on_signals(), reporting(), Session(endpoint=endpoint) as session:
        with start(Source.of(session, query), port=port) as served:
            where = f"the jobs of {query.project} in {', '.join(query.regions)}"
            print(served.url, flush=True)
            print(f"vxtrain ui: {where}{' on the emulator at ' + endpoint if endpoint else ''}, on 127.0.0.1:"
                  f"{served.port} for whoever opens the URL above (its token lets a browser in; keep it to "
                  "yourself). Ctrl-C stops it.", file=sys.stderr, flush=True)
            try:
                served.thread.join()
            except KeyboardInterrupt:
                print("vxtrain ui stopped", file=sys.stderr, flush=True)
    return 0


def register(app: typer.Typer) -> None:
    """Add the ``ui`` command."""

    @c.command(app, "ui")
    def _ui(
        port: Annotated[int, typer.Option("--port", min=0, max=65535,
                                          help="Port of 127.0.0.1 to serve on (0: any free port).")] = 0,
        endpoint: c.EndpointOpt = None, project: c.ProjectOpt = None,
        region: Annotated[Optional[list[str]], typer.Option(
            "--region", help="A region whose jobs to show (repeatable; else the default region).")] = None,
        since: Annotated[str, typer.Option(
            "--since", help="Jobs created since: a duration back (30m, 12h, 7d), an RFC 3339 time, or all.")] = "7d",
    ) -> None:
        raise typer.Exit(ui(port=port, endpoint=endpoint, project=project, regions=region or (), since=since))
