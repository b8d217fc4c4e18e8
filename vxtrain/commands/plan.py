"""``vxtrain plan FILE``: the CustomJob that would be sent, and its bandwidth plan.

No API call and no aiplatform import: this is safe (and fast) in CI.
"""
from __future__ import annotations

import json
from typing import Annotated, Any, Optional

import typer

from vxtrain import api
from vxtrain.api import Options, Result
from vxtrain.commands import _common as c
from vxtrain.errors import UsageError
from vxtrain.model import parse_size
from vxtrain.render import console, diagnostics_text


def plan(path: str, options: Options, output: c.OutputFormat = c.OutputFormat.text) -> int:
    """Print the compiled job, bandwidth and cost plan; exit 1 when the spec is invalid."""
    options.cost = True
    result = api.check_file(path, options)
    if output is c.OutputFormat.json:
        c.emit_json(plan_json(result))
    else:
        _print_text(result)
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
    return doc


def _print_text(result: Result) -> None:
    from vxtrain.planning.bandwidth import render

    diagnostics_text(result.diagnostics)
    if not result.valid:
        return
    out = console()
    from rich.markup import escape

    # The job's own strings are data, not rich markup: `args: ["--filter=[abc]"]` must print as
    # written (markup would drop "[abc]"), and a "[/x]" in them must not raise MarkupError.
    out.rule(f"CustomJob {escape(result.custom_job.get('displayName', '')) if result.custom_job else ''}")
    out.print_json(json.dumps(result.custom_job)) if out.is_terminal else out.print(
        json.dumps(result.custom_job, indent=2), markup=False, highlight=False)
    if result.hyperparameter_tuning_job is not None:
        out.rule("HyperparameterTuningJob (studySpec)")
        study = {k: v for k, v in result.hyperparameter_tuning_job.items() if k != "trialJobSpec"}
        out.print(json.dumps(study, indent=2), markup=False, highlight=False)
        for line in _study_lines(result):
            out.print(line, markup=False, highlight=False)
    if result.packages:
        from vxtrain.packaging.jobs import text_lines

        out.rule("Packages (built and uploaded by submit; plan uploads nothing)")
        for line in text_lines(result.packages):
            out.print(line, markup=False, highlight=False)
    out.rule("Bandwidth plan")
    for item in render(result.plan):
        out.print(item)
    if result.cost is not None:
        from vxtrain.planning import cost

        out.rule("Cost plan")
        for item in cost.render(result.cost, result.plan):
            if isinstance(item, str):  # a price's source URL is text, not rich markup
                out.print(item, markup=False, highlight=False)
            else:
                out.print(item)


def _study_lines(result: Result) -> list[str]:
    """The search space and the study's size: node-trials per machine type (hours are unknown ahead)."""
    from vxtrain.runtime import study

    hpt = result.hyperparameter_tuning_job
    assert hpt is not None  # called for valid study specs only
    trials = int(hpt.get("maxTrialCount") or 0)
    lines = ["Search space", *study.search_space_lines(hpt.get("studySpec", {})), "",
             f"Study cost: up to {trials} trials, {hpt.get('parallelTrialCount') or 1} at a time"]
    for machine, count in study.node_trials(result.job, trials).items():
        lines.append(f"  {machine}: {count} node-trials ({count // max(trials, 1)} node(s) x {trials} trials)")
    return lines


def _gradient(value: Optional[str]) -> float | None:
    if value is None:
        return None
    size = parse_size(value)
    if size is None or size <= 0:
        raise UsageError(f"--gradient-size takes a size such as 1.3GB, 500MiB or 1e9; got {value!r}")
    return size


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command."""

    @app.command("plan")
    @c.spec_options
    def _cmd(
        path: c.SpecArg,
        gradient_size: Annotated[Optional[str], typer.Option(
            "--gradient-size", help="Gradient size per step (e.g. 1.3GB) for the all-reduce estimate.")] = None,
        max_hourly_cost: c.MaxHourlyCostOpt = None,
        output: c.OutputOpt = c.OutputFormat.text,
        strict: c.StrictOpt = False,
        *,
        options: Options,
    ) -> None:
        """Show the exact CustomJob that would be sent, the Reduction Server bandwidth plan and the cost."""
        options.gradient_size = _gradient(gradient_size)
        options.max_hourly_cost = max_hourly_cost
        raise typer.Exit(plan(path, options, output))
