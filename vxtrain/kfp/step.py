"""What ``submit_op`` does inside its pipeline step: ``vxtrain submit FILE -o json``.

The step is vxtrain itself: it runs the command line (every check of the spec, the
quota preflight, the ``fallback:`` ladder, ``recovery:``, the job's log lines, and
exactly-once creation by key), then reads the JSON document submit prints and hands
its figures to the pipeline as the component's outputs. The command runs as a child
process with the step's environment, so its stderr (the job's states and log lines)
is the step's log, as the pipeline's console shows it.

This module imports nothing of kfp's: the component (``vxtrain.kfp.component``) calls
:func:`run` from the function body KFP ships to the step.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

from vxtrain.errors import NotFoundError, UsageError, VxtrainError

#: KFP's placeholder syntax (``{{$.pipeline_job_uuid}}``): a key still holding it was not
#: resolved by the pipeline's backend (a component loaded without vxtrain's default, or
#: a backend that leaves defaults unresolved, kubeflow/pipelines#9572). Every run would
#: share that one literal key and adopt the first run's job, so the step refuses it.
PLACEHOLDER_MARK = "{{$"


class Outputs(NamedTuple):
    """The component's outputs, from submit's JSON document."""

    job: str  #: the job's resource name (the last attempt's, with ``recovery:``)
    state: str  #: its state, e.g. JOB_STATE_SUCCEEDED (QUEUED or the like without wait)
    cost_usd: float  #: the estimated cost of every attempt (list prices × run time); 0 without wait
    attempts: str  #: submit's ``attempts`` as JSON: each rung and attempt, its job and outcome


class StepFailed(SystemExit):
    """vxtrain submit (or reading the spec) failed: the step ends with vxtrain's exit code.

    A SystemExit, so KFP's executor ends the step with that code and no traceback: the
    reason is already in the step's log, in vxtrain's words."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(code)
        self.message = message


def run(spec: str, variables: Mapping[str, Any], key: str, wait: bool, endpoint: str = "",
        project: str = "", region: str = "") -> Outputs:
    """Submit ``spec`` (a path in the image, a ``gs://`` URI, or the spec's YAML text) with
    ``variables`` for its ``${NAME}``s, under ``key``; the outputs, or StepFailed."""
    if PLACEHOLDER_MARK in key:
        return _fail(UsageError(
            f"the idempotency key {key!r} is a KFP placeholder the pipeline did not resolve: every run "
            "would share it and adopt the first run's job; pass key= explicitly (e.g. "
            "f'{dsl.PIPELINE_JOB_ID_PLACEHOLDER}-{dsl.PIPELINE_TASK_NAME_PLACEHOLDER}')"))
    try:
        with spec_file(spec) as path:
            argv = submit_argv(path, variables, key=key, wait=wait, endpoint=endpoint, project=project,
                               region=region)
            # stdout is submit's JSON document; stderr (states, log lines) goes to the step's log
            done = subprocess.run(argv, stdout=subprocess.PIPE, text=True, check=False)
    except VxtrainError as exc:
        return _fail(exc)
    return outputs(done.returncode, done.stdout)


def submit_argv(path: str, variables: Mapping[str, Any], *, key: str, wait: bool, endpoint: str,
                project: str, region: str) -> list[str]:
    """The ``vxtrain submit`` command line (this interpreter's vxtrain) for the step's inputs."""
    argv = [sys.executable, "-m", "vxtrain", "submit", path, "--output", "json"]
    if key:
        argv += ["--idempotency-key", key]
    if wait:
        argv.append("--wait")
    for flag, value in (("--endpoint", endpoint), ("--project", project), ("--region", region)):
        if value:
            argv += [flag, value]
    for name, value in variables.items():
        # KFP hands a dict input over as JSON: numbers and booleans as themselves. A
        # variable is text in the spec, written as YAML would read it back.
        text = value if isinstance(value, str) else json.dumps(value)
        argv += ["--var", f"{name}={text}"]
    return argv


def outputs(code: int, stdout: str) -> Outputs:
    """The outputs of a submit that exited 0 with ``stdout``; StepFailed for any other exit."""
    try:
        document = json.loads(stdout) if stdout.strip() else {}
    except json.JSONDecodeError:
        document = {}
    if code != 0:
        # Exit 3 (the job failed) prints the job's view; the others an {"error": ...} document.
        error = document.get("error") or {}
        reason = error.get("message") if isinstance(error, dict) else None
        if document.get("name"):
            reason = f"{document['name']} ended {document.get('state')}" + (f": {reason}" if reason else "")
        raise StepFailed(code, f"vxtrain submit exited {code}" + (f": {reason}" if reason else ""))
    cost = document.get("cost") or {}
    estimated = cost.get("estimated") if isinstance(cost, dict) else None
    return Outputs(job=str(document.get("name", "")), state=str(document.get("state", "")),
                   cost_usd=float(estimated or 0.0), attempts=json.dumps(document.get("attempts") or []))


def _fail(exc: VxtrainError) -> Outputs:
    """Say ``exc`` as vxtrain says errors, and end the step with its exit code."""
    print(f"vxtrain: error: {exc}", file=sys.stderr, flush=True)
    raise StepFailed(exc.exit_code, str(exc))


def is_text(spec: str) -> bool:
    """Whether the ``spec`` input is the spec itself rather than where it is: YAML of more
    than one line, or a one-line flow mapping (``{display_name: x, ...}``)."""
    return "\n" in spec.strip() or spec.lstrip().startswith("{")


@contextmanager
def spec_file(spec: str) -> Iterator[str]:
    """A file holding the spec for the length of the block: the path itself, the ``gs://``
    object downloaded, or the text written out.

    Text goes to the step's working directory (a temporary folder when that is read-only),
    so the spec's relative paths (``build.source``, ``python_package.source``) are read from
    there, as they would be beside a spec file; a ``gs://`` spec is read from a temporary
    folder, so it must not need files beside it."""
    if spec.startswith("gs://"):
        with tempfile.TemporaryDirectory(prefix="vxtrain-spec-") as folder:
            yield str(_download(spec, Path(folder)))
        return
    if not is_text(spec):
        if not Path(spec).is_file():
            raise NotFoundError(f"no spec file {spec!r} in the step's image (working directory {os.getcwd()}); "
                                "give a path in the image, a gs:// URI or the spec's YAML text")
        yield spec
        return
    path = _write_text(spec)
    try:
        yield path
    finally:
        os.unlink(path)


def _write_text(spec: str) -> str:
    """The spec's text in a new file of the working directory (else the temporary folder)."""
    for folder in (Path.cwd(), Path(tempfile.gettempdir())):
        try:
            fd, path = tempfile.mkstemp(dir=folder, prefix=".vxtrain-spec-", suffix=".yaml")
        except PermissionError:
            continue  # a read-only working directory: the temporary folder instead
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(spec)
        return path
    raise UsageError("no writable folder for the spec's text (the working directory and the temporary folder)")


def _download(uri: str, folder: Path) -> Path:
    """The object at ``uri``, downloaded into ``folder`` under its own name (exit 4 on storage errors)."""
    # lazy: google-cloud-storage (+250 ms) only for a gs:// spec
    from google.api_core import exceptions as gexc
    from vxtrain.packaging.upload import mapped_error, split_gs_uri, storage_client

    try:
        bucket, name = split_gs_uri(uri)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if not name or name.endswith("/"):
        raise UsageError(f"{uri} names a folder, not a spec file")
    client = storage_client(purpose=f"read the spec {uri}")
    try:
        data = client.bucket(bucket).blob(name).download_as_bytes()
    except gexc.NotFound:
        raise NotFoundError(f"no spec at {uri}: the object (or its bucket) does not exist") from None
    except gexc.GoogleAPICallError as exc:
        raise mapped_error(exc, bucket, uri, "downloading") from exc
    finally:
        client.close()
    path = folder / Path(name).name
    path.write_bytes(data)
    return path
