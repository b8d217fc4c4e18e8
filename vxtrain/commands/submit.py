"""``vxtrain submit FILE``: create the job exactly once; ``--wait`` follows it.

Targets: Vertex AI (default: the regional endpoint, Application Default
Credentials), a running emulator (``--endpoint HOST:PORT``), or ``--target
local``: an in-process emulator that runs the job here with the local runner,
through the same client, so the CustomJob sent is the one Vertex would get.
google.cloud.aiplatform is imported by the backend only when the call is made.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

import typer

from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.errors import JobFailedError


def submit(path: str, options: Options, *, output: c.OutputFormat = c.OutputFormat.text,
           endpoint: str | None = None, target: c.Target = c.Target.vertex,
           idempotency_key: str | None = None, wait: bool = False) -> int:
    """Submit the spec's job; 0 when created (or SUCCEEDED with --wait), 3 when it failed."""
    from vxtrain import api

    local = target is c.Target.local
    if local and not wait:
        _say("--target local runs the job in this process: following it to the end")
    # Locally the job's processes are ours: SIGTERM must stop them, not orphan them.
    with _interruptible(local), _progress(wait or local) as progress:
        try:
            view = api.submit(path, options, target=target.value, endpoint=endpoint,
                              idempotency_key=idempotency_key, wait=wait, progress=progress)
        except JobFailedError as exc:
            print_view(exc.job, output)
            raise
    print_view(view, output)
    return 0


@contextmanager
def _interruptible(enabled: bool) -> Iterator[None]:
    if not enabled:
        yield
        return
    from vxtrain.commands.emulator import interrupt_on_signals

    with interrupt_on_signals():
        yield


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    from vxtrain.submission import stderr_progress

    with stderr_progress() as progress:
        yield progress


def _say(message: str) -> None:
    sys.stderr.write(f"vxtrain: {message}\n")


def print_view(view: dict[str, Any], output: c.OutputFormat) -> None:
    """One job: the JSON document, or a few readable lines (with trials, for a study)."""
    if output is c.OutputFormat.json:
        c.emit_json(view)
        return
    verb = "adopted" if view.get("adopted") else "job"
    lines = [f"{verb}: {view['name']}", f"state: {view['state']}"]
    if view.get("display_name"):
        lines.append(f"display name: {view['display_name']}")
    if view.get("create_time"):
        lines.append(f"created: {view['create_time']}")
    suffix = "  (emulated: this job is not on Vertex AI)" if view.get("emulated") else ""
    lines.append(f"console: {view['console_url']}{suffix}")
    if view.get("error"):
        lines.append(f"error: {view['error'].get('message', view['error'])}")
    if "trials" in view:  # a tuning job: the table of trials and the best one
        from vxtrain.runtime.study import metric_ids_of, summary_lines

        lines += summary_lines(view, metric_ids_of(view["trials"]))
    typer.echo("\n".join(lines))


def register(app: typer.Typer) -> None:
    """Add the ``submit`` command."""

    @app.command("submit")
    @c.spec_options
    def _cmd(
        path: Annotated[str, typer.Argument(help="Spec file (native, gcloud config or legacy).")],
        wait: Annotated[bool, typer.Option("--wait", help="Follow the job to the end (exit 3 if it fails).")] = False,
        endpoint: c.EndpointOpt = None,
        target: c.TargetOpt = c.Target.vertex,
        idempotency_key: c.IdempotencyOpt = None,
        output: c.OutputOpt = c.OutputFormat.text,
        strict: c.StrictOpt = False,
        *,
        options: Options,
    ) -> None:
        """Create the CustomJob (exactly once, even across retries); --wait follows it."""
        raise typer.Exit(submit(path, options, output=output, endpoint=endpoint, target=target,
                                idempotency_key=idempotency_key, wait=wait))
