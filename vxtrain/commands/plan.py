"""``vxtrain plan FILE``: the CustomJob that would be sent, and its bandwidth plan.

No API call and no aiplatform import: this is safe (and fast) in CI.
"""
from __future__ import annotations

import math
import sys

from typing import Annotated, Any, Optional

import typer

from vxtrain import api, settings
from vxtrain.api import Options, Result
from vxtrain.commands import _common as c
from vxtrain.errors import UsageError
from vxtrain.model import parse_size


def plan(path: str, options: Options, output: c.ReportFormat = c.ReportFormat.text) -> int:
    """Print the compiled job, bandwidth and cost plan; exit 1 when the spec is invalid."""
    options.cost = True
    result = api.check_file(path, options)
    # Which project and region the plan is for, and where each came from (a flag, the spec,
    # the environment, gcloud's configuration): on stderr, so stdout stays the plan alone.
    typer.echo(f"vxtrain: {settings.summary(result.settings)}", err=True)
    if output == c.ReportFormat.json:
        c.emit_json(plan_json(result))
    elif output in (c.ReportFormat.github, c.ReportFormat.markdown):
        # lazy: GitHub's renderings (and the plan's sections they reuse), asked for by --output alone
        from vxtrain.render import github

        text = github.annotation_lines(result.diagnostics) if output == c.ReportFormat.github else github.plan_markdown(result)
        sys.stdout.write(text)
    else:
        # lazy: rich's tables, +44 ms after the checks; `plan --output json` (CI) never pays it
        from vxtrain.render.plan import plan_text

        plan_text(result)
    return 0 if result.valid else 1


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
        output: c.ReportOpt = c.ReportFormat.text,
        strict: c.StrictOpt = False,
        *,
        options: Options,
    ) -> None:
        options.gradient_size = _gradient(gradient_size)
        options.max_hourly_cost = max_hourly_cost
        raise typer.Exit(plan(path, options, output))
