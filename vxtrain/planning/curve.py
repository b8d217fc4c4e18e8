"""The bandwidth curve: all-reduce time against the number of Reduction Server replicas.

Every figure comes from :mod:`vxtrain.planning.bandwidth`'s model (the same functions
the plan's all-reduce estimate uses), evaluated once per replica count:

- the ring all-reduce, 2(N−1)/N · S / B_node, which needs no Reduction Server;
- a Reduction Server of r replicas, max(S / B_node, N · S / (r · B_replica));
- the network's cap: once the replicas move as much as the N training nodes send
  (r · B_replica ≥ N · B_node), the nodes' own egress sets the pace, S / B_node,
  and more replicas cost money without saving time.

Without a gradient size the times are given relative to the ring's (ring = 1): each
time is S divided by a bandwidth, so the curve's shape does not depend on S
(docs/decisions.md, "The plan report's curve without --gradient-size").

Pure arithmetic: the report (vxtrain.render.report) draws it, never recomputing it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from vxtrain import catalog
from vxtrain.catalog.networking import TCP
from vxtrain.model import DEFAULT_RS_MACHINE
from vxtrain.planning.bandwidth import (Plan, bytes_per_second, estimate_allreduce, replicas_needed,
                                        server_seconds)
from vxtrain.slots import TRAINING_ROLES

#: At most this many points: a big job's cap (thousands of replicas) is sampled, not enumerated.
MAX_POINTS = 80
#: The size the curve is computed for when none is given; only its ratios are shown then.
UNIT_BYTES = 1.0


@dataclass(frozen=True)
class CurvePoint:
    """All-reduce with ``replicas`` Reduction Server replicas."""

    replicas: int
    #: Seconds for the given gradient size; None when none was given (see ``of_ring``).
    seconds: float | None
    #: The time as a share of the ring all-reduce's (1.0: as fast as a ring).
    of_ring: float
    #: Pool 2 moves at least what the training nodes send: more replicas save nothing.
    keeps_up: bool


@dataclass(frozen=True)
class Curve:
    """The curve of one job, with its ring time, its cap and the plan's chosen point."""

    gradient_bytes: float | None
    training_nodes: int
    node_gbps: float
    machine_type: str
    gbps_per_replica: float
    #: Whether the job has a Reduction Server pool (else the curve is for one it could add).
    planned: bool
    ring_seconds: float | None
    #: The network's cap: the all-reduce time no number of replicas goes below (S / B_node).
    floor_seconds: float | None
    floor_of_ring: float
    #: The fewest replicas that reach the floor.
    cap_replicas: int
    #: The plan's replica count (None without a Reduction Server pool).
    chosen: CurvePoint | None
    points: tuple[CurvePoint, ...]


@dataclass(frozen=True)
class NoCurve:
    """Why a job has no curve (one training node, unknown bandwidth, parameter servers)."""

    reason: str


def curve(plan: Plan, gradient_bytes: float | None = None) -> Curve | NoCurve:
    """The all-reduce time for 1 … a few past the cap Reduction Server replicas.

    The replicas are those of the job's ``reduction_server`` pool (its machine type and
    count, as planned), or of the default machine type a pool would get when the job
    has none, so the curve says whether adding one would pay."""
    training = [row for row in plan.pools if row.role in TRAINING_ROLES]
    if any(row.role == "parameter_servers" for row in plan.pools):
        return NoCurve("pool 2 runs parameter servers: the job does not all-reduce through a Reduction Server")
    size = gradient_bytes if gradient_bytes is not None else UNIT_BYTES
    estimate = estimate_allreduce(size, training, plan)
    if estimate.node_gbps is None or estimate.ring_seconds is None:
        return NoCurve("the network bandwidth of a training pool is not in the catalog")
    if estimate.training_nodes < 2:
        return NoCurve("one training node: there is nothing to all-reduce across nodes")
    machine, gbps, chosen = _server(plan)
    direct = sorted({row.gpu_network for row in training if row.gpu_network not in (None, TCP)})
    if chosen is None and direct:
        # The model is each node's egress to CPU reducers over the VPC; GPUDirect's figure is the
        # GPUs' own network, which such reducers are not on: a what-if curve would mislead.
        return NoCurve(f"the training nodes' GPUs talk over {', '.join(str(d) for d in direct)}, and the job has no "
                       "Reduction Server: its model (each node's egress to CPU reducers) does not describe that network")
    if gbps is None:
        return NoCurve(f"the network bandwidth of the Reduction Server's machine ({machine}) is not in the catalog")
    nodes, node_bytes, ring = estimate.training_nodes, bytes_per_second(estimate.node_gbps), estimate.ring_seconds
    cap = replicas_needed(nodes * estimate.node_gbps, gbps)

    def point(replicas: int) -> CurvePoint:
        seconds, keeps_up = server_seconds(size, nodes, node_bytes, bytes_per_second(replicas * gbps))
        return CurvePoint(replicas, seconds if gradient_bytes is not None else None, seconds / ring, keeps_up)

    counts = _counts(cap, chosen)
    return Curve(gradient_bytes=gradient_bytes, training_nodes=nodes, node_gbps=estimate.node_gbps,
                 machine_type=machine, gbps_per_replica=gbps, planned=chosen is not None,
                 ring_seconds=ring if gradient_bytes is not None else None,
                 floor_seconds=size / node_bytes if gradient_bytes is not None else None,
                 floor_of_ring=size / node_bytes / ring, cap_replicas=cap,
                 chosen=point(chosen) if chosen else None, points=tuple(point(r) for r in counts))


def _server(plan: Plan) -> tuple[str, float | None, int | None]:
    """The Reduction Server's machine type, its per-replica Gbps and the plan's replica count."""
    rs = plan.reduction_server
    if rs is not None and rs.machine_type is not None:
        return rs.machine_type, rs.gbps_per_replica, rs.replicas
    # No pool 2: the machine vxtrain gives a reduction_server pool that names none.
    return DEFAULT_RS_MACHINE, catalog.node_egress(DEFAULT_RS_MACHINE, None, 0).gbps, None


def _counts(cap: int, chosen: int | None) -> list[int]:
    """1 … a quarter past the larger of the cap and the chosen count (at least 2 past it);
    every count while they fit in MAX_POINTS, else an even sample that keeps both."""
    top = max(cap, chosen or 0)
    last = top + max(2, math.ceil(top / 4))
    step = max(1, math.ceil(last / MAX_POINTS))
    counts = set(range(1, last + 1, step)) | {cap, last} | ({chosen} if chosen else set())
    return sorted(counts)
