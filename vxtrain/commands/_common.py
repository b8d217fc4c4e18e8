"""Options shared by several subcommands, and output helpers.

Rules of the CLI contract (docs/cli.md, "JSON output"): with ``--output json`` stdout carries one
JSON document and nothing else; logs and progress go to stderr.
"""
from __future__ import annotations

import functools
import inspect
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Annotated, Any, Optional, TypeVar, get_type_hints

import typer
from typer.core import TyperCommand

from vxtrain import settings
from vxtrain.commands import COMMANDS
from vxtrain.diagnostics import Diagnostic
from vxtrain.errors import NotFoundError, UsageError
from vxtrain.model import DURATION_EXAMPLES, duration_seconds, duration_too_long
from vxtrain.options import Options
from vxtrain.render import diagnostics_text

if TYPE_CHECKING:
    from vxtrain.runtime.gpus import GpuOptions

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

#: The exit code of a command stopped by Ctrl-C (128 + SIGINT, as a shell reports it).
INTERRUPTED = 130


class OutputFormat(str, Enum):
    """``--output`` choices."""

    text = "text"
    json = "json"


class ReportFormat(str, Enum):
    """``--output`` choices of validate and plan: also GitHub's annotations and Markdown."""

    text = "text"
    json = "json"
    github = "github"
    markdown = "markdown"


class Target(str, Enum):
    """``--target`` choices."""

    vertex = "vertex"
    local = "local"


OutputOpt = Annotated[OutputFormat, typer.Option("--output", "-o", help="text or json (one JSON document on stdout).")]
ReportOpt = Annotated[ReportFormat, typer.Option(
    "--output", "-o", help="text, json (one JSON document on stdout), github (workflow-command annotations) "
                           "or markdown (GitHub-flavoured tables, for a step summary).")]
OverlayOpt = Annotated[Optional[list[str]], typer.Option("--overlay", "-f", help="YAML file deep-merged over the spec, in order.")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="dotted.key=value, typed like YAML (e.g. workers.replicas=8).")]
VarOpt = Annotated[Optional[list[str]], typer.Option("--var", help="NAME=VALUE for ${NAME} in the spec (wins over the environment).")]
ProjectOpt = Annotated[Optional[str], typer.Option("--project", help="Google Cloud project (else spec, else GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT, gcloud's core/project).")]
RegionOpt = Annotated[Optional[str], typer.Option("--region", help="Vertex AI region (else spec, else CLOUD_ML_REGION, CLOUDSDK_AI_REGION, gcloud's ai/region).")]
StagingBucketOpt = Annotated[Optional[str], typer.Option("--staging-bucket", help="gs://BUCKET or gs://BUCKET/PREFIX for python_package.source packages (else the spec's staging_bucket).")]
ImageRepositoryOpt = Annotated[Optional[str], typer.Option("--image-repository", help="HOST/PATH where images built from build: are pushed (else the spec's image_repository).")]
DisplayNameOpt = Annotated[Optional[str], typer.Option("--display-name", help="Overrides display_name (gcloud configs: default is the file stem).")]
StrictOpt = Annotated[bool, typer.Option("--strict", help="Warnings fail too (exit 1).")]
SpecArg = Annotated[str, typer.Argument(metavar="FILE", help="Spec file (native, gcloud config or legacy).")]
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Full resource name, or a bare id with --project/--region.")]
EndpointOpt = Annotated[Optional[str], typer.Option("--endpoint", help="HOST:PORT of a vxtrain emulator instead of Vertex AI.")]
TargetOpt = Annotated[Target, typer.Option("--target", help="vertex, or local (an in-process emulator running the job here).")]
MaxHourlyCostOpt = Annotated[Optional[float], typer.Option(
    "--max-hourly-cost", metavar="USD", min=0,
    help="Refuse (exit 1, nothing sent) a job whose cost per hour is above USD, or unknown.")]
NoLogsOpt = Annotated[bool, typer.Option("--no-logs", help="Do not stream the job's log lines to stderr while waiting.")]
IdempotencyOpt = Annotated[Optional[str], typer.Option("--idempotency-key", help="Key labelling the job; a re-submit with the same key returns that job.")]
# Local runs hand this host's GPUs to the replicas (vxtrain.runtime.gpus).
GpusOpt = Annotated[Optional[str], typer.Option(
    "--gpus", metavar="LIST",
    help="Local runs: the GPUs to hand out (indices or UUIDs, e.g. 0,1; '' for none) instead of this host's.")]
ShareGpusOpt = Annotated[bool, typer.Option(
    "--share-gpus", help="Local runs: too few GPUs? Hand them out round-robin (NCCL refuses two ranks on one GPU).")]
NoGpusOpt = Annotated[bool, typer.Option(
    "--no-gpus", help="Local runs: every replica on the CPU (CUDA_VISIBLE_DEVICES=\"\"), whatever its pool asks for.")]


class Command(TyperCommand):
    """A command whose usage line names a required argument as click and man pages do,
    ``vxtrain plan [OPTIONS] FILE``, where typer writes ``{FILE}``; optional ones keep
    their brackets (``[AFTER]``)."""

    # ctx: click's Context, for which typer has no public name (typer.Context is a
    # subclass click never makes); only passed on.
    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """The usage line's words after the command's name, required arguments unbraced."""
        return [_unbraced(piece) for piece in super().collect_usage_pieces(ctx)]


def _unbraced(piece: str) -> str:
    return piece[1:-1] if piece.startswith("{") and piece.endswith("}") else piece


def command(app: typer.Typer, name: str) -> Callable[[F], F]:
    """``app.command(name)`` with the command's help line from the command table, its one
    home, and its usage line as :class:`Command` writes it."""
    return app.command(name, cls=Command, help=COMMANDS[name].help)


def parse_pairs(pairs: Sequence[str] | None, flag: str = "--var", form: str = "NAME=VALUE") -> dict[str, str]:
    """``["A=1", "B=x"]`` → ``{"A": "1", "B": "x"}``; a pair without ``=`` is a usage error."""
    out: dict[str, str] = {}
    for pair in pairs or ():
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise UsageError(f"{flag} takes {form}, got {pair!r}")
        out[name] = value
    return out


def make_options(*, overlay: Sequence[str] | None = None, set_: Sequence[str] | None = None,
                 var: Sequence[str] | None = None, project: str | None = None,
                 region: str | None = None, display_name: str | None = None,
                 strict: bool = False, gradient_size: float | None = None,
                 staging_bucket: str | None = None, image_repository: str | None = None) -> Options:
    """Options for the pipeline from the shared flags."""
    return Options(overlays=list(overlay or ()), sets=list(set_ or ()), variables=parse_pairs(var),
                   project=project, region=region, display_name=display_name, strict=strict,
                   gradient_size=gradient_size, staging_bucket=staging_bucket,
                   image_repository=image_repository)


def gpu_options(gpus: str | None, share: bool, no_gpus: bool) -> GpuOptions:
    """``--gpus/--share-gpus/--no-gpus`` as GpuOptions; UsageError for a bad list or a clash."""
    # lazy: +3 ms on every command line (vxtrain.cli imports this module); only --gpus and its kin need it
    from vxtrain.runtime.gpus import options_from_flags

    return options_from_flags(gpus, share, no_gpus)


def parse_trial(text: str | None) -> str | None:
    """``--trial``: a trial id is a whole number from 1 (Vertex AI passes it as a string)."""
    if text is None:
        return None
    # ASCII digits only: str.isdigit() accepts "²", which int() then refuses.
    if re.fullmatch(r"\s*[0-9]+\s*", text) is None or int(text) < 1:
        raise UsageError(f"--trial takes a trial number from 1; got {text!r}")
    return str(int(text))


def parse_duration_option(text: str | None, flag: str) -> float | None:
    """A duration flag (``90s``, ``30m``, ``1.5h``; a bare number is seconds) in seconds."""
    if text is None:
        return None
    seconds = duration_seconds(text)
    if seconds is None:
        raise UsageError(f"{flag} takes a duration such as {DURATION_EXAMPLES} (one number, one unit; "
                         f"a bare number is seconds); got {text!r}")
    if seconds <= 0:
        raise UsageError(f"{flag} takes a positive duration such as {DURATION_EXAMPLES}; got {text!r}")
    why = duration_too_long(seconds)
    if why is not None:
        raise UsageError(f"{flag} {text.strip()[:40]!r} {why}")
    return seconds


def emit_json(document: Any) -> None:
    """Write one JSON document to stdout: JSON a strict parser reads.

    Bare ``NaN``/``Infinity`` are not JSON (RFC 8259, section 6): ``jq`` and every strict
    parser refuse the whole document. A figure that is not finite (the bandwidth of a spec
    whose ``replicas: 1.0e+308`` its diagnostics refuse) is written ``null``; ``allow_nan=False``
    then guarantees that nothing else slips through.
    """
    sys.stdout.write(json.dumps(_finite(document), indent=2, sort_keys=False, allow_nan=False) + "\n")


def _finite(value: Any) -> Any:
    """``value`` with every float that is not finite (inf, -inf, NaN) made ``None``."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def print_diagnostics(diagnostics: Sequence[Diagnostic]) -> None:
    """Compiler-style lines on stderr, colour on a terminal."""
    if diagnostics:
        diagnostics_text(diagnostics)


@contextmanager
def progress(enabled: bool) -> Iterator[Any]:
    """A progress callback for a followed job on stderr, or None when not following."""
    if not enabled:
        yield None
        return
    # lazy: rich's live display and the submission layer, +160 ms after validate; following a job only
    from vxtrain.render.progress import stderr_progress

    with stderr_progress() as reporter:
        yield reporter


def print_failure_tail(reporter: Any, view: Mapping[str, Any]) -> None:
    """On stderr, the last lines of the replica a failed job's error names (when they were followed)."""
    found = reporter.failure_tail(view) if reporter is not None else None
    if found is None:
        return
    replica, lines = found
    reporter.say(f"vxtrain: the last {len(lines)} line(s) of {replica}:")
    for line in lines:
        reporter.say(f"  [{replica}] {line}")


def where(project: str | None, region: str | None, endpoint: str | None,
          environ: Mapping[str, str] | None = None) -> tuple[str | None, str | None]:
    """Project and region of a job command: flag, else the environment, else gcloud's
    settings (vxtrain.settings), else (for an emulator) the local defaults."""
    # lazy: vxtrain.submission costs +40 ms after validate, which never loads it; job commands only
    from vxtrain.submission import LOCAL_PROJECT, LOCAL_REGION

    env = os.environ if environ is None else environ
    found = settings.resolve_both({"project": project, "region": region}, {}, env)
    found_project, found_region = found["project"], found["region"]
    project = found_project.value if found_project is not None else None
    region = found_region.value if found_region is not None else None
    if endpoint:
        return project or LOCAL_PROJECT, region or LOCAL_REGION
    return project, region


def on_job(name: str, project: str | None, region: str | None, endpoint: str | None,
           operation: Callable[[str], T]) -> T:
    """``operation`` on the job ``name``. A bare id does not say its kind: it is a
    CustomJob's, else (NOT_FOUND) a HyperparameterTuningJob's."""
    from vxtrain.submission import resolve_name  # lazy: as in where()
    from vxtrain.vocab.kinds import TUNING

    project, region = where(project, region, endpoint)
    full = resolve_name(name, project=project, region=region)
    try:
        return operation(full)
    except NotFoundError as missing:
        if full == name:  # a full name says its kind
            raise
        try:
            return operation(resolve_name(name, project=project, region=region, kind=TUNING))
        except NotFoundError:
            raise missing from None


def print_view(view: Mapping[str, Any], output: OutputFormat) -> None:
    """One job: the JSON document (a JobViewJson, or the one a JobFailedError carries), or a
    few readable lines (with trials, for a study)."""
    if output is OutputFormat.json:
        emit_json(view)
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
    if len(view.get("attempts") or ()) > 1:  # a fallback: ladder that went past rung 0, or recoveries
        recovered = any(a.get("attempt") for a in view["attempts"])
        lines += [(f"attempt {a['attempt']}, " if recovered else "") + f"rung {a['rung']} ({a['region']}): "
                  f"{a['outcome']}" + (f" — {a['name']}" if a["name"] else "") for a in view["attempts"]]
    if "cost" in view or view.get("recoveries"):  # submit --wait, status, wait: what the run cost
        # lazy: render.recovery brings planning.cost (~12 ms, -X importtime); priced views only
        from vxtrain.render.recovery import recovery_lines

        lines += recovery_lines(view)
    if "trials" in view:  # a tuning job: the table of trials and the best one
        # lazy: +2 ms on every command line (vxtrain.cli imports this module); a tuning job's view only
        from vxtrain.render.study import metric_ids_of, summary_lines

        lines += summary_lines(view, metric_ids_of(view["trials"]))
    typer.echo("\n".join(lines))


#: The options every spec-reading command shares: (parameter name, annotation).
_SPEC_PARAMS: tuple[tuple[str, Any], ...] = (
    ("overlay", OverlayOpt), ("set_", SetOpt), ("var", VarOpt), ("project", ProjectOpt),
    ("region", RegionOpt), ("display_name", DisplayNameOpt), ("staging_bucket", StagingBucketOpt),
    ("image_repository", ImageRepositoryOpt),
)


def spec_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Give a typer command the shared spec options, folded into ``options: Options``.

    ``fn`` declares a keyword ``options: Options`` parameter (and, when it takes
    ``--strict``, a ``strict`` one of its own); the wrapper shows typer the
    options instead and builds the Options from them — one definition of the
    shared flags instead of a copy per command.
    """
    hints = get_type_hints(fn, include_extras=True)
    own = [p.replace(annotation=hints.get(p.name, p.annotation))
           for p in inspect.signature(fn).parameters.values() if p.name != "options"]
    shared = [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ann)
              for name, ann in _SPEC_PARAMS]

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        picked = {name: kwargs.pop(name, None) for name, _ in _SPEC_PARAMS}
        options = make_options(overlay=picked["overlay"], set_=picked["set_"], var=picked["var"],
                               project=picked["project"], region=picked["region"],
                               display_name=picked["display_name"], staging_bucket=picked["staging_bucket"],
                               image_repository=picked["image_repository"], strict=bool(kwargs.get("strict", False)))
        return fn(*args, options=options, **kwargs)

    params = own + shared
    wrapper.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in params}
    return wrapper


#: ``--since`` (jobs, cost, ui) that reaches back to the first job.
SINCE_ALL = "all"


def since_time(text: str) -> datetime | None:
    """``--since`` of jobs, cost and ui: a duration back from now (``7d``), an RFC 3339 time,
    or ``all`` (None)."""
    # lazy: joblogs is the log commands' (validate's start-up never needs it)
    from vxtrain.joblogs import parse_since
    from vxtrain.vocab.timestamps import parse_time

    return None if text.strip().lower() == SINCE_ALL else parse_time(parse_since(text))
