"""``vxtrain submit FILE``: create the job exactly once; ``--wait`` follows it.

Targets: Vertex AI (default: the regional endpoint, Application Default
Credentials), a running emulator (``--endpoint HOST:PORT``), or ``--target
local``: an in-process emulator that runs the job here with the local runner,
through the same client, so the CustomJob sent is the one Vertex would get.
google.cloud.aiplatform is imported by the backend only when the call is made.
"""
from __future__ import annotations

from collections.abc import Sequence
from contextlib import nullcontext
from typing import Annotated, Any, Optional

import typer

from vxtrain import api
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.errors import Interrupted, JobFailedError, SpecError, UsageError
from vxtrain.render.packaging import upload_bar
from vxtrain.render.progress import reporting, say
from vxtrain.runtime.gpus import GpuOptions
from vxtrain.runtime.signals import interrupt_on_signals


def submit(path: str, options: Options, *, output: c.OutputFormat = c.OutputFormat.text,
           endpoint: str | None = None, target: c.Target = c.Target.vertex,
           idempotency_key: str | None = None, wait: bool = False, logs: bool = True,
           quota_check: bool = True, gpus: GpuOptions | None = None,
           until_running: bool = False, max_pending: str | None = None, notify: Sequence[str] = ()) -> int:
    """Submit the spec's job; 0 when created (RUNNING with --until-running, SUCCEEDED with
    --wait), 3 when it failed, 5 when it cannot get its machines: every rung of
    ``fallback:`` had no capacity, or (a spec without one) the quota preflight found a
    need above a limit (unless not ``quota_check``), or (``recovery:``) the recoveries were
    spent on lost machines. While it waits, the job's log lines stream to stderr unless not
    ``logs``. ``gpus`` (``--target local`` only): how this host's GPUs are handed out.
    ``notify``: URLs that get the followed job's events (beside the spec's ``notify:``)."""
    local = target is c.Target.local
    pending = c.parse_duration_option(max_pending, "--max-pending")
    if pending is not None and not (wait or until_running or local):
        raise UsageError("--max-pending needs --wait or --until-running: plain submit does not follow the job")
    if local and not wait:
        say("--target local runs the job in this process: following it to the end")
    # Locally the job's processes are ours: a stop signal must stop them, not orphan them.
    # --until-running follows the job too (to RUNNING): its states show as they change.
    with interrupt_on_signals() if local else nullcontext(), reporting(), \
            c.progress(wait or local or until_running) as progress:
        sink = progress.log if progress is not None and logs else None
        if local and sink is None:
            # Given no sink, the in-process emulator prints the replicas' output to
            # stderr itself; --no-logs means none of it.
            sink = _discard
        try:
            view = api.submit(path, options, target=target.value, endpoint=endpoint,
                              idempotency_key=idempotency_key, wait=wait, progress=progress, logs=sink,
                              upload_progress=upload_bar, quota_check=quota_check, gpus=gpus,
                              until_running=until_running, max_pending=pending, notify=notify,
                              warnings=c.print_diagnostics)  # as validate prints them, before anything is sent
        except JobFailedError as exc:
            c.print_failure_tail(progress, exc.job)
            c.print_view(exc.job, output)
            raise
        except Interrupted as stopped:  # Ctrl-C: stdout is still one document, with the resume line
            if output is c.OutputFormat.json:
                c.emit_json(stopped.document)
            raise
        except SpecError as exc:
            # Submission's checks against the Job API's state (a persistent resource the job
            # does not fit) name a compiled field, not a place in the file: say which file.
            if any(d.file is None for d in exc.diagnostics):
                raise SpecError([d.with_file(path) for d in exc.diagnostics]) from exc
            raise
    c.print_view(view, output)
    return 0


#: ``--no-quota-check``: create without setting the job's needs against the quota limits first.
NoQuotaCheckOpt = Annotated[bool, typer.Option(
    "--no-quota-check", help="Skip the quota preflight (the job's needs against the project's limits, exit 5).")]


def _discard(entries: list[Any]) -> None:
    """A log sink that shows nothing (``--target local --no-logs``)."""


def register(app: typer.Typer) -> None:
    """Add the ``submit`` command."""

    @c.command(app, "submit")
    @c.spec_options
    def _cmd(
        path: c.SpecArg,
        wait: Annotated[bool, typer.Option("--wait", help="Follow the job to the end (exit 3 if it fails).")] = False,
        endpoint: c.EndpointOpt = None,
        target: c.TargetOpt = c.Target.vertex,
        idempotency_key: c.IdempotencyOpt = None,
        max_hourly_cost: c.MaxHourlyCostOpt = None,
        output: c.OutputOpt = c.OutputFormat.text,
        strict: c.StrictOpt = False,
        no_logs: c.NoLogsOpt = False,
        no_quota_check: NoQuotaCheckOpt = False,
        gpus: c.GpusOpt = None,
        share_gpus: c.ShareGpusOpt = False,
        no_gpus: c.NoGpusOpt = False,
        until_running: Annotated[bool, typer.Option(
            "--until-running", help="Without --wait: follow the job until it is RUNNING (exit 0, it keeps "
                                    "running), so a stockout before start moves the fallback: ladder on.")] = False,
        max_pending: Annotated[Optional[str], typer.Option(
            "--max-pending", metavar="DURATION",
            help="With --wait or --until-running: a job still QUEUED/PENDING after DURATION (90s, 30m) is "
                 "cancelled and the next fallback: rung tried.")] = None,
        notify: Annotated[Optional[list[str]], typer.Option(
            "--notify", metavar="URL",
            help="POST one JSON object per event (started, recovering, succeeded, failed, cancelled, no-capacity) "
                 "to this http(s) URL while the job is followed; repeatable (a Slack or Google Chat "
                 "incoming webhook takes it as it is).")] = None,
        *,
        options: Options,
    ) -> None:
        options.max_hourly_cost = max_hourly_cost
        chosen = gpus is not None or share_gpus or no_gpus  # on Vertex AI each replica has its own GPUs
        raise typer.Exit(submit(path, options, output=output, endpoint=endpoint, target=target,
                                idempotency_key=idempotency_key, wait=wait, logs=not no_logs,
                                quota_check=not no_quota_check,
                                gpus=c.gpu_options(gpus, share_gpus, no_gpus) if chosen else None,
                                until_running=until_running, max_pending=max_pending, notify=notify or ()))
