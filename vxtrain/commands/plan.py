"""``vxtrain plan FILE``: the CustomJob that would be sent, and its bandwidth plan.

No API call and no aiplatform import: this is safe (and fast) in CI. Two options
reach further, only when given: ``--html OUT`` writes the plan report (its module,
vxtrain.render.report, is imported then), and ``--check-quota`` reads the project's
quota limits as ``vxtrain quota`` does (Google's clients, or the emulator at
``--endpoint``).
"""
from __future__ import annotations

import math
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from vxtrain import api, settings
from vxtrain.api import Options, Result
from vxtrain.commands import _common as c
from vxtrain.errors import NoCapacity, UsageError, VxtrainError
from vxtrain.model import parse_size

if TYPE_CHECKING:
    from vxtrain.submission.quota import QuotaReport

def plan(path: str, options: Options, output: c.ReportFormat = c.ReportFormat.text, *,
         html: str | None = None, check_quota: bool = False, endpoint: str | None = None) -> int:
    """Print the compiled job, bandwidth and cost plan (and write its HTML report to ``html``);
    exit 1 when the spec is invalid, 5 when ``check_quota`` finds a need above a limit."""
    if endpoint is not None and not check_quota:
        raise UsageError("--endpoint is where --check-quota reads the limits; plan calls no API without "
                         "--check-quota: add it, or drop --endpoint")
    target = _html_target(html) if html is not None else None  # a bad path fails before the work
    options.cost = True
    result = api.check_file(path, options)
    # Which project and region the plan is for, and where each came from (a flag, the spec,
    # the environment, gcloud's configuration): on stderr, so stdout stays the plan alone.
    typer.echo(f"vxtrain: {settings.summary(result.settings)}", err=True)
    quota = _quota(path, options, endpoint) if check_quota and result.valid else None
    if target is not None:
        # lazy: only --html pays for the report's module (and rich's tables in render.cost)
        from vxtrain.render.report import plan_report

        _write(target, plan_report(result, quota))
    if output == c.ReportFormat.json:
        doc = plan_json(result)
        if quota is not None:
            doc["quota"] = quota.to_json()
        c.emit_json(doc)
    elif output in (c.ReportFormat.github, c.ReportFormat.markdown):
        # lazy: GitHub's renderings (and the plan's sections they reuse), asked for by --output alone
        from vxtrain.render import github

        text = github.annotation_lines(result.diagnostics) if output == c.ReportFormat.github else github.plan_markdown(result)
        sys.stdout.write(text)
    else:
        # lazy: rich's tables, +44 ms after the checks; `plan --output json` (CI) never pays it
        from vxtrain.render.plan import plan_text

        plan_text(result)
        if quota is not None:
            from vxtrain.render.quota import quota_text  # lazy: as plan_text (and submission's quota types)

            quota_text(quota)
    if target is not None:
        typer.echo(f"wrote the plan report to {target}", err=True)
    if not result.valid:
        return 1
    return NoCapacity.exit_code if quota is not None and not quota.fits else 0


def _quota(path: str, options: Options, endpoint: str | None) -> QuotaReport:
    """The needs against the limits, as ``vxtrain quota`` reads them (a refused read is said on
    stderr and leaves the limits unknown)."""
    from vxtrain.render.progress import reporting  # lazy: as the quota read itself

    with reporting():
        return api.quota(path, options, endpoint=endpoint)


def _html_target(html: str) -> Path:
    """Where ``--html`` writes: a file (created or replaced), never a folder."""
    target = Path(html)
    if html in ("", "-") or target.is_dir():
        raise UsageError(f"--html takes the path of the file to write, e.g. plan.html; got {html!r}"
                         + (" (a folder)" if target.is_dir() else ""))
    return target


def _write(target: Path, text: str) -> None:
    """Write ``text`` whole or not at all: a reader (a browser, a CI artifact upload) never sees half a
    report; a file that was there is replaced."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(temp, 0o666 & ~_umask())  # mkstemp's 0600 is for secrets; a report is read as any file
            os.replace(temp, target)
        except BaseException:
            os.unlink(temp)
            raise
    except OSError as exc:  # a parent that is a file, no permission, a name part past 255 bytes
        raise VxtrainError(f"cannot write {target} ({exc.strerror or exc}): give --html a path you can write") from exc


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def plan_json(result: Result) -> dict[str, Any]:
    """The Contract's plan shape (``custom_job`` null when the spec is invalid)."""
    valid = result.valid
    doc: dict[str, Any] = {
        "custom_job": result.custom_job if valid else None,
        "bandwidth": result.plan.to_json() if result.plan is not None else None,
        # Shown even when --max-hourly-cost refused the job: the figure is the reason.
        "cost": result.cost.to_json() if result.cost is not None else None,
        "diagnostics": [d.to_json() for d in result.diagnostics],
    }
    if result.job is not None and result.job.study is not None:
        doc["hyperparameter_tuning_job"] = result.hyperparameter_tuning_job if valid else None
    if valid and result.packages:  # python_package.source: what submit would build and upload
        doc["packages"] = [p.to_json() for p in result.packages]
    if result.fallback:
        doc["fallback"] = [_rung_json(number, rung, valid) for number, rung in enumerate(result.fallback, 1)]
    if valid and result.images:  # build: what submit would build and push
        doc["images"] = [i.to_json() for i in result.images]
    if result.job is not None and result.job.recovery is not None:  # what submit --wait does on lost machines
        doc["recovery"] = result.job.recovery.to_json()
    return doc


def _rung_json(number: int, rung: Result, valid: bool) -> dict[str, Any]:
    """One rung of ``fallback:`` as the plan shows it (rung 0 is the document itself)."""
    out: dict[str, Any] = {
        "rung": number,
        "region": rung.job.region if rung.job is not None else None,
        "custom_job": rung.custom_job if valid else None,
        "cost": rung.cost.to_json() if rung.cost is not None else None,
    }
    if rung.job is not None and rung.job.study is not None:
        out["hyperparameter_tuning_job"] = rung.hyperparameter_tuning_job if valid else None
    return out


def _gradient(value: Optional[str]) -> float | None:
    if value is None:
        return None
    size = parse_size(value)
    if size is None or not 0 < size < math.inf:  # also NaN: `plan -o json` would write it bare (not JSON)
        raise UsageError(f"--gradient-size takes a positive, finite size such as 1.3GB, 500MiB or 1e9; got {value!r}")
    return size


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command."""

    @c.command(app, "plan")
    @c.spec_options
    def _cmd(
        path: c.SpecArg,
        gradient_size: Annotated[Optional[str], typer.Option(
            "--gradient-size", help="Gradient size per step (e.g. 1.3GB) for the all-reduce estimate.")] = None,
        max_hourly_cost: c.MaxHourlyCostOpt = None,
        html: Annotated[Optional[str], typer.Option(
            "--html", metavar="OUT",
            help="Also write the plan report to OUT: one HTML file (pools, bandwidth curve, cost, quota).")] = None,
        check_quota: Annotated[bool, typer.Option(
            "--check-quota", help="Read the project's quota limits (as `vxtrain quota`): exit 5 when a need is above one.")] = False,
        endpoint: Annotated[Optional[str], typer.Option(
            "--endpoint", help="With --check-quota: HOST:PORT of a vxtrain emulator to read the limits from.")] = None,
        output: c.ReportOpt = c.ReportFormat.text,
        strict: c.StrictOpt = False,
        *,
        options: Options,
    ) -> None:
        options.gradient_size = _gradient(gradient_size)
        options.max_hourly_cost = max_hourly_cost
        raise typer.Exit(plan(path, options, output, html=html, check_quota=check_quota, endpoint=endpoint))
