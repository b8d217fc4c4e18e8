"""A followed job's recoveries and cost for people: the lines ``submit``, ``status`` and
``wait`` add to a job's text (plain text, no rich: the lines also go to log files); and
what ``plan`` shows of a spec's ``recovery:`` block.

The figures are data (vxtrain.submission.views.cost_json, vxtrain.submission.carry);
money is worded as the cost plan words it (vxtrain.planning.cost.usd).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vxtrain.model import Recovery
from vxtrain.planning.cost import usd


def cost_line(cost: Mapping[str, Any]) -> str:
    """``cost: about $X (list prices × run time)``, or why there is no figure."""
    entries = cost.get("attempts") or []
    ran = _duration(sum(float(a.get("hours") or 0) for a in entries))
    basis = cost.get("basis", "list prices × run time")
    if cost.get("estimated") is None:
        return f"cost: unknown (no list price for this job's machines; {ran} run)"
    return f"cost: about {usd(cost['estimated'])} ({basis}; {ran} run)"


def _duration(hours: float) -> str:
    """``2.50 h``; under an hour in minutes (``0.3 min``)."""
    return f"{hours:.2f} h" if hours >= 1 else f"{hours * 60:.1f} min"


def recovery_lines(view: Mapping[str, Any]) -> list[str]:
    """``recoveries: N`` (when the submit recovered the job) and the cost line (when priced)."""
    lines = []
    if view.get("recoveries"):
        lines.append(f"recoveries: {view['recoveries']} (a new job each time the last one ended recoverably)")
    if isinstance(view.get("cost"), Mapping):
        lines.append(cost_line(view["cost"]))
    return lines


#: Where each recovery strategy (vxtrain.submission.decide.STRATEGIES) starts the next attempt.
_WHERE = {"same": "the rung that ran", "next": "the next fallback rung"}


def plan_line(recovery: Recovery) -> str:
    """plan's line for ``recovery:``: what submit --wait does when the job loses its machines."""
    ends = ["preempted or stocked out", "an internal error"]
    if recovery.on_exit_codes:
        ends.append("a replica exiting " + ", ".join(str(c) for c in recovery.on_exit_codes))
    where = _WHERE[recovery.strategy]
    line = (f"recovery: up to {recovery.max_recoveries} new job(s) under submit --wait when the job ends after "
            f"it started ({'; '.join(ends)}), each on {where}, resuming from base_output_dir")
    if recovery.spot_to_standard_after is not None:
        line += f"; STANDARD VMs after {recovery.spot_to_standard_after} Spot preemption(s)"
    # the cost plan prices one job: each new one is billed for its own run time besides
    jobs = recovery.max_recoveries + 1
    return line + f"; the cost above is per job, and up to {jobs} jobs may run in turn"
