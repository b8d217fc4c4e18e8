"""``vxtrain reconcile``: one pass over every unfinished plan kept in a bucket, each life's
next steps taken (a recovery's next attempt created under its lease, duplicates cancelled,
an ended life written into its plan); ``--loop`` repeats the pass every ``--every`` until
SIGTERM or Ctrl-C (a Cloud Run service or a pod). Exit 0 after a pass, 4 when an API error
outlived its retries (after acting on every plan it could).

The documented deployment is a Cloud Run job that Cloud Scheduler runs every 5 minutes
(docs/submitting.md, "Carrying a job from anywhere").
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from vxtrain import api
from vxtrain.commands import _common as c
from vxtrain.errors import ApiError, UsageError
from vxtrain.render.progress import reporting

if TYPE_CHECKING:
    from vxtrain.submission.reconcile import PassJson

#: The pause between two passes of ``--loop`` when ``--every`` is not given.
EVERY = "60s"


def reconcile(bucket: str | None, *, project: str | None = None, endpoint: str | None = None,
              loop: bool = False, every: str | None = None, output: c.OutputFormat = c.OutputFormat.text) -> int:
    """One pass (``loop``: a pass every ``every`` until stopped); 0, or 4 when a call failed."""
    if not bucket:
        raise UsageError("reconcile needs --bucket gs://BUCKET: the bucket whose plans it carries on "
                         "(the staging bucket the submits kept them in)")
    pause = c.parse_duration_option(every or EVERY, "--every")
    if every is not None and not loop:
        raise UsageError("--every needs --loop: a single pass has no next one")
    with reporting():
        if not loop:
            return _pass(bucket, project, endpoint, output)
        with _stopping() as stop:
            code = 0
            while not stop.is_set():
                code = _pass(bucket, project, endpoint, output)
                stop.wait(pause)
            return code


def _pass(bucket: str, project: str | None, endpoint: str | None, output: c.OutputFormat) -> int:
    doc = api.reconcile(bucket, project=project, endpoint=endpoint)
    if output is c.OutputFormat.json:
        c.emit_json(doc)
    else:
        _print(doc)
    return ApiError.exit_code if doc.get("errors") else 0


def _print(doc: PassJson) -> None:
    for plan in doc["plans"]:
        where = "" if plan["attempt"] is None else f"attempt {plan['attempt']}, rung {plan['rung']}"
        typer.echo("\t".join(str(part) for part in (plan["key"], plan["state"] or "-", where or "-",
                                                   plan["job"] or "-", plan["action"])))
    typer.echo(f"{len(doc['plans'])} plan(s): {len(doc['created'])} job(s) created, {len(doc['cancelled'])} "
               f"cancelled, {len(doc['finished'])} finished", err=True)


@contextmanager
def _stopping() -> Iterator[threading.Event]:
    """An event SIGTERM and SIGINT set: the loop ends after the pass under way."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def register(app: typer.Typer) -> None:
    """Add the ``reconcile`` command."""

    @c.command(app, "reconcile")
    def _cmd(
        bucket: Annotated[Optional[str], typer.Option(
            "--bucket", metavar="gs://BUCKET[/PREFIX]",
            help="The bucket whose plans to carry on (the submits' staging bucket; plans live at its root).")] = None,
        project: c.ProjectOpt = None,
        endpoint: c.EndpointOpt = None,
        loop: Annotated[bool, typer.Option("--loop", help="Repeat the pass every --every until SIGTERM.")] = False,
        every: Annotated[Optional[str], typer.Option(
            "--every", metavar="DURATION", help=f"With --loop: the pause between passes (default {EVERY}).")] = None,
        output: c.OutputOpt = c.OutputFormat.text,
    ) -> None:
        raise typer.Exit(reconcile(bucket, project=project, endpoint=endpoint, loop=loop, every=every, output=output))
