"""``vxtrain plan`` for people: the diagnostics, the CustomJob, the study, the
packages, the bandwidth plan and the cost plan, one ruled section each.

Only a plan printed as text loads this module (and, with it, rich's tables and
the planners' text).
"""
from __future__ import annotations

import json

from rich.markup import escape

from vxtrain.api import Result
from vxtrain.model import Pool
from vxtrain.render import bandwidth, console, cost, diagnostics_text, recovery
from vxtrain.render.packaging import image_lines, package_lines
from vxtrain.render.study import search_space_lines
from vxtrain.runtime.study import node_trials
from vxtrain.vocab.kinds import TUNING


def plan_text(result: Result) -> None:
    """Print the plan of ``result`` on stdout (its diagnostics on stderr); only the
    diagnostics when the spec is invalid."""
    diagnostics_text(result.diagnostics)
    if not result.valid:
        return
    assert result.job is not None and result.plan is not None  # a valid result went through every stage
    out = console()
    # The job's own strings are data, not rich markup: `args: ["--filter=[abc]"]` must print as
    # written (markup would drop "[abc]"), and a "[/x]" in them must not raise MarkupError.
    out.rule(f"CustomJob {escape(result.custom_job.get('displayName', '')) if result.custom_job else ''}")
    # allow_nan=False: what is printed is JSON a strict parser reads (no bare NaN/Infinity)
    out.print_json(json.dumps(result.custom_job, allow_nan=False)) if out.is_terminal else out.print(
        json.dumps(result.custom_job, indent=2, allow_nan=False), markup=False, highlight=False)
    if result.hyperparameter_tuning_job is not None:
        out.rule("HyperparameterTuningJob (studySpec)")
        study = {k: v for k, v in result.hyperparameter_tuning_job.items() if k != TUNING.spec_key}
        out.print(json.dumps(study, indent=2, allow_nan=False), markup=False, highlight=False)
        for line in study_lines(result):
            out.print(line, markup=False, highlight=False)
    if result.packages:
        out.rule("Packages (built and uploaded by submit; plan uploads nothing)")
        for line in package_lines(result.packages):
            out.print(line, markup=False, highlight=False)
    if result.images:
        out.rule("Images (built and pushed by submit; plan pushes nothing)")
        for line in image_lines(result.images):
            out.print(line, markup=False, highlight=False)
    out.rule("Bandwidth plan")
    for item in bandwidth.items(result.plan):
        out.print(item)
    if result.cost is not None:
        out.rule("Cost plan")
        for item in cost.items(result.cost, result.plan):
            if isinstance(item, str):  # a price's source URL is text, not rich markup
                out.print(item, markup=False, highlight=False)
            else:
                out.print(item)
    if result.fallback:
        out.rule("Fallback ladder (tried in order when the job cannot get its machines)")
        for line in ladder_lines(result):
            out.print(line, markup=False, highlight=False)
    if result.job.recovery is not None:
        out.print(recovery.plan_line(result.job.recovery), markup=False, highlight=False)


def study_lines(result: Result) -> list[str]:
    """The search space and the study's size: node-trials per machine type (hours are unknown ahead)."""
    hpt = result.hyperparameter_tuning_job
    assert hpt is not None and result.job is not None  # called for valid study specs only
    trials = int(hpt.get("maxTrialCount") or 0)
    lines = ["Search space", *search_space_lines(hpt.get("studySpec", {})), "",
             f"Study cost: up to {trials} trials, {hpt.get('parallelTrialCount') or 1} at a time"]
    for machine, count in node_trials(result.job, trials).items():
        lines.append(f"  {machine}: {count} node-trials ({count // max(trials, 1)} node(s) x {trials} trials)")
    return lines


def ladder_lines(result: Result) -> list[str]:
    """One line per rung of ``fallback:`` (rung 0 is the spec): region, machines, cost per hour."""
    rungs = [result, *result.fallback]
    return [f"rung {number}{' (the spec)' if number == 0 else ''}: {_rung_line(rung)}"
            for number, rung in enumerate(rungs)]


def _rung_line(rung: Result) -> str:
    """``REGION · chief 1 x a2-highgpu-8g + 8 x NVIDIA_A100_80GB, ... · $X/h (STRATEGY)``."""
    job = rung.job
    assert job is not None  # the rungs of a valid result are valid
    pools = ", ".join(_pool_text(pool) for pool in job.ordered_pools())
    per_hour = rung.cost.per_hour if rung.cost is not None else None
    price = f"${per_hour:,.2f}/h" if per_hour is not None else "cost unknown"
    strategy = job.scheduling.strategy if job.scheduling is not None and job.scheduling.strategy else "STANDARD"
    return f"{job.region or '(no region)'} · {pools} · {price} · {strategy}"


def _pool_text(pool: Pool) -> str:
    """``workers 2 x a2-highgpu-8g + 8 x NVIDIA_TESLA_A100`` (replicas x machine, accelerators per node)."""
    text = f"{pool.role} {pool.replicas or 1} x {pool.machine_type}"
    if pool.accelerator is not None:
        text += f" + {pool.accelerator.count or 1} x {pool.accelerator.type}"
    return text
