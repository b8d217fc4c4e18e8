"""The cost plan for people: the table of pools, the job's totals, the Reduction
Server trade-off and the prices' sources (``vxtrain plan``).

:mod:`vxtrain.planning.cost` prices the job; this lays it out with rich
(imported with this module, which only a plan printed as text loads).
"""
from __future__ import annotations

from typing import Any

from rich.console import JustifyMethod
from rich.table import Table

from vxtrain.planning.bandwidth import Plan
from vxtrain.planning.cost import (FLEX_START, PERSISTENT_RESOURCE_BILLING, SECONDS_PER_HOUR, SPOT, TIER, Cost,
                                   PoolCost, Unknown, usd)

_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("pool", "right"), ("role", "left"), ("replicas", "right"), ("per node", "left"),
    ("USD/node-h", "right"), ("USD/h", "right"), ("confidence", "left"))


def items(cost: Cost, bandwidth: Plan | None = None) -> list[Any]:
    """Rich renderables for ``vxtrain plan``: the table of pools, the totals and,
    with a Reduction Server and an all-reduce estimate, the trade-off line.

    The strings among them are plain text (a price's source URL is not rich markup)."""
    title = f"Cost (Vertex AI {cost.pricing.replace('_', '-')} list prices, {cost.region or 'no region'})"
    if cost.billed_via is not None:
        title = f"Cost (billed via persistent resource {cost.billed_via}, not per job)"
    table = Table(title=title, title_justify="left")
    for name, justify in _COLUMNS:
        table.add_column(name, justify=justify)
    for p in cost.pools:
        table.add_row(str(p.index), p.role, _replicas_text(p), _node_text(p), usd(p.per_node_hour),
                      usd(p.per_hour), p.confidence)
    lines: list[Any] = [table, *total_lines(cost)]
    trade = tradeoff_line(cost, bandwidth)
    if trade:
        lines.append(trade)
    return [*lines, *source_lines(cost)]


def source_lines(cost: Cost) -> list[str]:
    """What the figures include, and the source and date of every price used."""
    if cost.billed_via is not None:
        return ["Jobs on a persistent resource are not charged separately; the resource is billed for the "
                f"whole time it is running. documented: {PERSISTENT_RESOURCE_BILLING}"]
    seen = dict.fromkeys((line.source, line.as_of, line.confidence) for p in cost.pools
                         for line in p.lines if line.unit_usd_per_hour is not None)
    what = {SPOT: "Spot list prices (a snapshot: Compute Engine changes them up to once a month)",
            FLEX_START: "Dynamic Workload Scheduler (FLEX_START) list prices"}.get(
        cost.pricing, "On-demand list prices (no committed-use discounts)")
    return [f"{what}; boot disk, network and storage not included.",
            *(f"  {confidence}, as of {as_of}: {source}" for source, as_of, confidence in seen)]


def _replicas_text(p: PoolCost) -> str:
    """Replicas, and the hosts of each when a replica is a multi-host TPU slice."""
    replicas = "?" if p.replicas is None else str(p.replicas)
    return replicas if p.hosts == 1 else f"{replicas} × {p.hosts} hosts"


def _node_text(p: PoolCost) -> str:
    if p.billed_via is not None:
        return p.machine_type or "?"
    return " + ".join(line.name if line.count == 1 else f"{line.count} × {line.name}" for line in p.lines) or "?"


def total_lines(cost: Cost) -> list[str]:
    """The job's per-hour and maximum cost, what the timeout was, and what is unknown."""
    hours = cost.timeout_seconds / SECONDS_PER_HOUR
    timeout = f"{hours:g} h" + (", Vertex AI's default timeout" if cost.timeout_default else " timeout")
    if cost.billed_via is not None:
        return [f"Job: $0 per job: it runs on persistent resource {cost.billed_via}, which is billed "
                "for as long as it is running, whether or not jobs run on it [documented]"]
    if cost.per_hour is None:
        head = "Job: cost unknown (" + "; ".join(sorted({_short(u) for u in cost.unknown})) + ")"
        return [head] if cost.unknown else ["Job: cost unknown"]
    if cost.study:
        return [f"Study: {usd(cost.per_trial_hour)}/h per trial, {usd(cost.per_hour)}/h with "
                f"{_trials(cost.parallel_trials or 1)} at a time; at most {usd(cost.max_total)} "
                f"({_trials(cost.max_trials or 0)} × {timeout}) [{cost.confidence}]"]
    return [f"Job: {usd(cost.per_hour)}/h; at most {usd(cost.max_total)} up to {timeout} [{cost.confidence}]"]


def _trials(n: int) -> str:
    return f"{n} trial" if n == 1 else f"{n} trials"


def _short(u: Unknown) -> str:
    if u.kind == "region":
        return "no region"
    return f"no {TIER[u.pricing]}price for {u.name} in {u.region}"


def tradeoff_line(cost: Cost, bandwidth: Plan | None) -> str | None:
    """The Reduction Server pool's cost per hour beside the all-reduce time it saves versus ring."""
    ar = bandwidth.allreduce if bandwidth is not None else None
    rs = next((p for p in cost.pools if p.role == "reduction_server"), None)
    if ar is None or rs is None or bandwidth is None or bandwidth.reduction_server is None:
        return None
    head = f"Reduction Server: {usd(rs.per_hour)}/h"
    if ar.ring_seconds is None or ar.reduction_server_seconds is None:
        return f"{head}; all-reduce saving not estimated (bandwidth unknown)"
    saved = ar.ring_seconds - ar.reduction_server_seconds
    share = f" ({rs.per_hour / cost.per_hour:.0%} of the job's cost)" if rs.per_hour and cost.per_hour else ""
    return (f"{head}{share} for all-reduce ≈ {_ms(ar.reduction_server_seconds)} instead of "
            f"{_ms(ar.ring_seconds)} on a ring: {_ms(saved)} {'saved' if saved >= 0 else 'lost'} per step")


def _ms(seconds: float) -> str:
    seconds = abs(seconds)
    return f"{seconds * 1000:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
