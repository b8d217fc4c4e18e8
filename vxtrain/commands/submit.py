"""``vxtrain submit FILE``: create the job exactly once; ``--wait`` follows it.

Targets: Vertex AI (default: the regional endpoint, Application Default
Credentials), a running emulator (``--endpoint HOST:PORT``), or ``--target
local``: an in-process emulator that runs the job here with the local runner,
through the same client, so the CustomJob sent is the one Vertex would get.
google.cloud.aiplatform is imported by the backend only when the call is made.
"""
from __future__ import annotations

import re
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer

from vxtrain.api import Options, Result
from vxtrain.commands import _common as c
from vxtrain.errors import InvalidArgumentError, JobFailedError, UsageError
from vxtrain.spec.model import POOL_INDEX


def submit(path: str, options: Options, *, output: c.OutputFormat = c.OutputFormat.text,
           endpoint: str | None = None, target: c.Target = c.Target.vertex,
           idempotency_key: str | None = None, wait: bool = False) -> int:
    """Submit the spec's job; 0 when created (or SUCCEEDED with --wait), 3 when it failed."""
    from vxtrain import api

    if target is c.Target.local and endpoint:
        raise UsageError("--target local starts its own emulator; drop --endpoint (or --target local)")
    result = api.load_job(path, options)
    job = result.hyperparameter_tuning_job or result.custom_job
    if job is None:  # load_job raises for an invalid spec; this is a broken pipeline
        raise UsageError(f"{path}: nothing to submit (the spec compiled to no job)")
    project, region = where(result, local=target is c.Target.local or endpoint is not None)
    try:
        if target is c.Target.local:
            if not wait:
                _say("--target local runs the job in this process: following it to the end")
            return _submit_local(result, job, project, region, output, idempotency_key)
        return _submit(job, project, region, output, endpoint=endpoint, key=idempotency_key, wait=wait)
    except InvalidArgumentError as exc:
        raise InvalidArgumentError(f"{exc}{spec_location(result, str(exc))}") from exc


def where(result: Result, *, local: bool) -> tuple[str, str]:
    """Project and region (flag > spec > env, applied by the pipeline); defaults locally."""
    from vxtrain.submit import LOCAL_PROJECT, LOCAL_REGION

    project = getattr(result.job, "project", None)
    region = getattr(result.job, "region", None)
    if local:
        return project or LOCAL_PROJECT, region or LOCAL_REGION
    missing = [what for what, value in (("project", project), ("region", region)) if not value]
    if missing:
        raise UsageError(
            f"no {' and no '.join(missing)} to submit to: pass --project/--region, set project:/region: "
            f"in the spec, or export GOOGLE_CLOUD_PROJECT/CLOUD_ML_REGION (or use --target local)")
    return str(project), str(region)


_POOL_IN_MESSAGE = re.compile(r"(?:worker_pool_specs|workerPoolSpecs)\[(\d+)\]")


def spec_location(result: Result, message: str) -> str:
    """`` (at FILE:LINE:COL, key ROLE)`` for the pool a server message names, else ``""``."""
    found = _POOL_IN_MESSAGE.search(message)
    native = result.native
    if not found or native is None:
        return ""
    index = int(found.group(1))
    roles = [r for r, i in POOL_INDEX.items() if i == index and r in native.data]
    if not roles:
        return ""
    at = native.where((roles[0],))
    return f" (at {at['file']}:{at['line']}:{at['column']}, key {at['path']})"


def _submit(job: dict[str, Any], project: str, region: str, output: c.OutputFormat, *,
            endpoint: str | None, key: str | None, wait: bool, backend: Any = None) -> int:
    # from-imports: vxtrain/__init__ may export a function named ``submit``.
    from vxtrain.submit import submit as submit_job

    with _progress(wait) as progress:
        try:
            view = submit_job(job, project=project, region=region, backend=backend, endpoint=endpoint,
                              idempotency_key=key, wait=wait, progress=progress)
        except JobFailedError as exc:
            print_view(exc.job, output)
            raise
    print_view(view, output)
    return 0


def _submit_local(result: Result, job: dict[str, Any], project: str, region: str,
                  output: c.OutputFormat, key: str | None) -> int:
    """An in-process emulator running the job with the local runner, followed to the end."""
    from vxtrain.backends.emulator import start_emulator
    from vxtrain.backends.vertex import connect
    from vxtrain.submit import LABEL_KEY, label_value

    key = key or uuid.uuid4().hex
    with start_emulator(workdir=Path(result.file).resolve().parent) as handle:
        local = getattr(result.job, "local", None)
        if local is not None:  # the CustomJob has no local: block; tell the emulator directly
            handle.emulator.register_local({LABEL_KEY: label_value(key)}, local)
        with connect(endpoint=handle.address) as backend:
            return _submit(job, project, region, output, endpoint=None, key=key, wait=True,
                           backend=backend)


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    from vxtrain.submit import stderr_progress

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
        from vxtrain.study import metric_ids_of, summary_lines

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
