"""The bandwidth plan for people: the table of pools, the Reduction Server coverage
line and the all-reduce estimate (``vxtrain plan``).

:mod:`vxtrain.planning.bandwidth` computes the plan; this lays it out with rich
(imported with this module, which only a plan printed as text loads).
"""
from __future__ import annotations

from typing import Any

from rich.console import JustifyMethod
from rich.table import Table

from vxtrain.planning.bandwidth import AllReduce, Plan, PoolBandwidth, gbps

_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("pool", "right"), ("role", "left"), ("replicas", "right"), ("machine", "left"),
    ("GPUs", "left"), ("GPU network", "left"), ("Gbps/node", "right"), ("total", "right"), ("confidence", "left"))


def items(plan: Plan) -> list[Any]:
    """Rich renderables for ``vxtrain plan``, to print in turn: a table of pools,
    the Reduction Server coverage line and, when asked for, the all-reduce estimate."""
    table = Table(title="Network bandwidth (egress per node)", title_justify="left")
    for name, justify in _COLUMNS:
        table.add_column(name, justify=justify)
    for row in plan.pools:
        table.add_row(*_cells(row))
    lines: list[Any] = [table, _training_line(plan)]
    if plan.reduction_server is not None:
        lines.append(coverage_line(plan))
    if plan.allreduce is not None:
        lines.append(allreduce_line(plan.allreduce))
    return lines


def _cells(row: PoolBandwidth) -> list[str]:
    gpus = "-"
    if row.accelerator_type:
        short = row.accelerator_type.removeprefix("NVIDIA_").removeprefix("TESLA_")
        gpus = f"{row.accelerator_count} × {short}"
    replicas = "?" if row.replicas is None else str(row.replicas)
    return [str(row.index), row.role, replicas, row.machine_type or "?", gpus, row.gpu_network or "-",
            gbps(row.gbps_per_node), gbps(row.total_gbps), row.confidence]


def _training_line(plan: Plan) -> str:
    suffix = "" if plan.training_known else " (known part; some bandwidth is unknown)"
    return f"Training pools (chief + workers): {gbps(plan.training_gbps)} Gbps{suffix}"


def coverage_line(plan: Plan) -> str:
    """``Reduction Server: 16 × n1-highcpu-16 = 512 Gbps ≥ 500 Gbps training``."""
    rs = plan.reduction_server
    assert rs is not None
    head = f"Reduction Server: {rs.replicas if rs.replicas is not None else '?'} × {rs.machine_type}"
    if rs.replicas is None or rs.gbps_per_replica is None or not plan.training_known:
        return f"{head}: bandwidth unknown, coverage not checked"
    total = rs.replicas * rs.gbps_per_replica
    ok = total >= plan.training_gbps
    tail = "" if ok else f" (short: {rs.replicas_needed} replicas would suffice)"
    return (f"{head} = {gbps(total)} Gbps {'≥' if ok else '<'} "
            f"{gbps(plan.training_gbps)} Gbps training{tail}")


def allreduce_line(ar: AllReduce) -> str:
    """One line comparing the ring and Reduction Server all-reduce times."""
    head = f"All-reduce of {_bytes(ar.gradient_bytes)} over {ar.training_nodes} nodes"
    if ar.ring_seconds is None:
        return f"{head}: not estimated (node bandwidth unknown)"
    text = f"{head} at {gbps(ar.node_gbps)} Gbps: ring ≈ {_seconds(ar.ring_seconds)}"
    if ar.reduction_server_seconds is not None:
        text += f", Reduction Server ≈ {_seconds(ar.reduction_server_seconds)}"
        if ar.reduction_server_keeps_up is False:
            text += " (pool 2 too small, it sets the pace)"
    return text


def _seconds(value: float) -> str:
    return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"


def _bytes(value: float) -> str:
    for unit, factor in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if value >= factor:
            return f"{value / factor:g} {unit}"
    return f"{value:g} B"
