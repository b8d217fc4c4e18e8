"""Bandwidth plan: per-pool egress, Reduction Server sizing, all-reduce estimate.

Vertex AI's rule for Reduction Server: the total bandwidth of pool 2 must be
at least that of the training pools (0 + 1), and Google sizes it that way
(5 × n1-highmem-96 with 8 × V100 = 500 Gbps → 16 × n1-highcpu-16 = 512 Gbps):
https://cloud.google.com/vertex-ai/docs/training/distributed-training#reduction-server
Per-node egress comes from the catalog with a ``confidence`` and ``source``;
an unknown bandwidth is shown as such, never guessed and never a crash.

Units: Gbps is 1e9 *bits* per second; gradient sizes are bytes.
"""
from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from vxtrain import catalog
from vxtrain import diagnostics as dx
from vxtrain.catalog import networking
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import NativeSpec, format_path
from vxtrain.model import Job, Pool
from vxtrain.slots import TRAINING_ROLES

BITS_PER_BYTE = 8
UNKNOWN = "unknown"


# --- plan's JSON (docs/cli.md, "plan -o json": the Contract's ``bandwidth``) ----------------

# Annotations only: a TypedDict class costs ~15 µs a field to create (measured), and validate and plan import
# this module.
if TYPE_CHECKING:
    class PoolBandwidthJson(TypedDict):
        """One row of ``bandwidth.pools``."""

        index: int
        role: str
        replicas: int | None
        machine_type: str | None
        accelerator_type: str | None
        accelerator_count: int
        gbps_per_node: float | None
        total_gbps: float | None
        confidence: str
        source: str
        gpu_network: str | None
        gpu_network_source: str | None


    class ReductionServerJson(TypedDict):
        """``bandwidth.reduction_server``."""

        machine_type: str | None
        replicas: int | None
        gbps_per_replica: float | None
        auto: bool
        replicas_needed: int | None


    class AllReduceJson(TypedDict):
        """``bandwidth.allreduce`` (with ``--gradient-size``)."""

        gradient_bytes: float
        training_nodes: int
        node_gbps: float | None
        ring_seconds: float | None
        reduction_server_seconds: float | None
        reduction_server_keeps_up: bool | None
        speedup: float | None


    class BandwidthJson(TypedDict):
        """The Contract's ``bandwidth`` object."""

        training_gbps: float
        server_gbps: float
        reduction_server: ReductionServerJson | None
        pools: list[PoolBandwidthJson]
        allreduce: NotRequired[AllReduceJson]


@dataclass(frozen=True)
class PoolBandwidth:
    """Egress of one pool: per node (catalog) and in total."""

    index: int
    role: str
    replicas: int | None
    machine_type: str | None
    accelerator_type: str | None
    accelerator_count: int
    gbps_per_node: float | None
    confidence: str
    source: str
    #: How the pool's GPUs talk to other nodes' (catalog.networking): gpudirect-rdma,
    #: gpudirect-tcpxo or tcp; None for a pool without GPUs (or without a machine type).
    gpu_network: str | None = None
    gpu_network_source: str | None = None

    @property
    def total_gbps(self) -> float | None:
        """replicas × per-node egress (None when either is unknown)."""
        if self.gbps_per_node is None or self.replicas is None:
            return None
        return self.replicas * self.gbps_per_node

    def to_json(self) -> PoolBandwidthJson:
        """One row of the Contract's ``bandwidth.pools``."""
        return {
            "index": self.index, "role": self.role, "replicas": self.replicas,
            "machine_type": self.machine_type, "accelerator_type": self.accelerator_type,
            "accelerator_count": self.accelerator_count, "gbps_per_node": self.gbps_per_node,
            "total_gbps": self.total_gbps, "confidence": self.confidence, "source": self.source,
            "gpu_network": self.gpu_network, "gpu_network_source": self.gpu_network_source,
        }


@dataclass(frozen=True)
class ReductionServerPlan:
    """Pool 2 as a Reduction Server: its size and whether it keeps up."""

    machine_type: str | None
    replicas: int | None  # resolved (auto filled in) when known
    gbps_per_replica: float | None
    auto: bool
    replicas_needed: int | None  # the smallest count that matches the training pools

    def to_json(self) -> ReductionServerJson:
        """The Contract's ``bandwidth.reduction_server`` (plus ``auto``, ``replicas_needed``)."""
        return {"machine_type": self.machine_type, "replicas": self.replicas,
                "gbps_per_replica": self.gbps_per_replica, "auto": self.auto,
                "replicas_needed": self.replicas_needed}


@dataclass(frozen=True)
class AllReduce:
    """Time of one all-reduce of ``gradient_bytes`` across the training nodes."""

    gradient_bytes: float
    training_nodes: int
    node_gbps: float | None  # the slowest training node sets the pace
    ring_seconds: float | None
    reduction_server_seconds: float | None
    reduction_server_keeps_up: bool | None

    def to_json(self) -> AllReduceJson:
        """``bandwidth.allreduce``."""
        speedup = None
        if self.ring_seconds and self.reduction_server_seconds:
            speedup = self.ring_seconds / self.reduction_server_seconds
        return {"gradient_bytes": self.gradient_bytes, "training_nodes": self.training_nodes,
                "node_gbps": self.node_gbps, "ring_seconds": self.ring_seconds,
                "reduction_server_seconds": self.reduction_server_seconds,
                "reduction_server_keeps_up": self.reduction_server_keeps_up,
                "speedup": speedup}


@dataclass
class Plan:
    """The bandwidth plan of a job, and the diagnostics found while making it."""

    pools: list[PoolBandwidth]
    training_gbps: float  # known part of pools 0 + 1
    training_known: bool  # every training pool's bandwidth is known
    server_gbps: float  # pool 2 (Reduction Server or parameter servers), known part
    reduction_server: ReductionServerPlan | None = None
    allreduce: AllReduce | None = None
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The Contract's ``bandwidth`` object."""
        out: BandwidthJson = {
            "training_gbps": self.training_gbps,
            "server_gbps": self.server_gbps,
            "reduction_server": self.reduction_server.to_json() if self.reduction_server else None,
            "pools": [p.to_json() for p in self.pools],
        }
        if self.allreduce is not None:
            out["allreduce"] = self.allreduce.to_json()
        return dict(out)  # a plain dict: commands/diff.py holds it so (it is a BandwidthJson)


# --- planning ------------------------------------------------------------------

def plan(job: Job, native: NativeSpec | None = None, *,
         gradient_bytes: float | None = None) -> Plan:
    """Bandwidth of every pool, Reduction Server sizing and (with ``gradient_bytes``)
    the all-reduce estimate; warnings/errors about sizing in ``diagnostics``."""
    rows = [pool_bandwidth(p) for p in job.ordered_pools()]
    training = [r for r in rows if r.role in TRAINING_ROLES]
    known = all(r.total_gbps is not None for r in training)
    result = Plan(pools=rows, training_gbps=_known_sum(training), training_known=known,
                  server_gbps=_known_sum([r for r in rows if r.index == 2]))
    rs_pool = job.pool("reduction_server")
    if rs_pool is not None:
        _plan_reduction_server(result, rs_pool, native)
    if gradient_bytes is not None:
        result.allreduce = estimate_allreduce(gradient_bytes, training, result)
    return result


def pool_bandwidth(pool: Pool) -> PoolBandwidth:
    """The catalog's egress for one pool's nodes (GPU-aware)."""
    acc_type = pool.accelerator.type if pool.accelerator else None
    gbps, confidence, source = None, UNKNOWN, "no machine type"
    if pool.machine_type is not None:
        egress = catalog.node_egress(pool.machine_type, acc_type, pool.gpu_count)
        gbps, confidence, source = egress.gbps, egress.confidence, egress.source
        if gbps is None:
            confidence = UNKNOWN
    network = _gpu_network(pool)
    return PoolBandwidth(index=pool.index, role=pool.role, replicas=pool.replicas,
                         machine_type=pool.machine_type, accelerator_type=acc_type,
                         accelerator_count=pool.gpu_count, gbps_per_node=gbps,
                         confidence=confidence, source=source,
                         gpu_network=network.network if network else None,
                         gpu_network_source=network.source if network else None)


def _gpu_network(pool: Pool) -> networking.GpuNetwork | None:
    """The GPU network of a pool with GPUs (its own or its machine's built-in ones), else None."""
    if pool.machine_type is None:
        return None
    has_gpus = (pool.accelerator is not None and (pool.accelerator.type or "").startswith("NVIDIA_")) \
        or catalog.builtin_accelerator(pool.machine_type) is not None
    return networking.gpu_network(pool.machine_type) if has_gpus else None


def _known_sum(rows: list[PoolBandwidth]) -> float:
    return float(sum(r.total_gbps for r in rows if r.total_gbps is not None))


def replicas_needed(training_gbps: float, gbps_per_replica: float) -> int:
    """ceil(training / per-replica), at least 1: the smallest pool 2 that keeps up."""
    return max(1, math.ceil(training_gbps / gbps_per_replica - 1e-9))


def is_auto(pool: Pool) -> bool:
    """``replicas: auto``, or no count at all: both are sized by bandwidth."""
    return pool.auto_replicas or pool.replicas is None


def _plan_reduction_server(result: Plan, pool: Pool, native: NativeSpec | None) -> None:
    rs = result.reduction_server = _size_reduction_server(pool, result)
    result.server_gbps = _server_gbps(rs)
    result.pools = [replace(r, replicas=rs.replicas) if r.role == "reduction_server" else r
                    for r in result.pools]
    result.diagnostics += _rs_diagnostics(rs, result, native)


def _size_reduction_server(pool: Pool, result: Plan) -> ReductionServerPlan:
    row = next(r for r in result.pools if r.role == "reduction_server")
    needed = None
    if result.training_known and row.gbps_per_node:
        needed = replicas_needed(result.training_gbps, row.gbps_per_node)
    auto = is_auto(pool)
    return ReductionServerPlan(machine_type=pool.machine_type,
                               replicas=needed if auto else pool.replicas,
                               gbps_per_replica=row.gbps_per_node, auto=auto,
                               replicas_needed=needed)


def _server_gbps(rs: ReductionServerPlan) -> float:
    if rs.replicas is None or rs.gbps_per_replica is None:
        return 0.0
    return rs.replicas * rs.gbps_per_replica


def _rs_diagnostics(rs: ReductionServerPlan, result: Plan,
                    native: NativeSpec | None) -> list[Diagnostic]:
    where = _where(native, ("reduction_server", "replicas"))
    if rs.auto and rs.replicas is None:
        if not _unknown_bandwidth(result):
            return []  # a replica count is missing or invalid: the schema reports that one
        return [dx.error("rs-auto-unknown", _unknown_message(result, rs), **where)]
    if rs.auto or rs.replicas is None or rs.replicas_needed is None:
        return []
    if rs.replicas * (rs.gbps_per_replica or 0.0) >= result.training_gbps:
        return []
    return [dx.warning("rs-bandwidth", _short_message(rs, result), **where)]


def _short_message(rs: ReductionServerPlan, result: Plan) -> str:
    total = (rs.replicas or 0) * (rs.gbps_per_replica or 0.0)
    return (f"reduction_server.replicas: {rs.replicas} × {rs.machine_type} = {gbps(total)} Gbps "
            f"is below the {gbps(result.training_gbps)} Gbps of the training pools (chief + "
            f"workers), so all-reduce waits on it; replicas: {rs.replicas_needed} (or auto) "
            f"would suffice")


def _unknown_bandwidth(result: Plan) -> list[str]:
    return [f"{r.role} ({r.machine_type})" for r in result.pools
            if r.gbps_per_node is None and (r.role in TRAINING_ROLES or r.index == 2)]


def _unknown_message(result: Plan, rs: ReductionServerPlan) -> str:
    unknown = _unknown_bandwidth(result)
    return (f"reduction_server.replicas: auto cannot be sized: the network bandwidth of "
            f"{', '.join(unknown) or rs.machine_type} is not in the catalog; give a number "
            f"of replicas instead (pool 2's total bandwidth should match pools 0 + 1)")


def _where(native: NativeSpec | None, path: tuple[str, ...]) -> Mapping[str, Any]:
    """A diagnostic's location keywords (``NativeSpec.where``'s: path, file, line, column)."""
    return native.where(path) if native is not None else {"path": format_path(path)}


def estimate_allreduce(gradient_bytes: float, training: list[PoolBandwidth],
                       result: Plan) -> AllReduce:
    """Ring ≈ 2(N−1)/N · S / B_node; Reduction Server ≈ S / B_node while pool 2
    keeps up, else bound by pool 2: N · S / B_pool2 (B in bytes/s, the slowest node)."""
    nodes = sum(r.replicas or 0 for r in training)
    speeds = [r.gbps_per_node for r in training]
    node_gbps = None if not speeds or None in speeds else min(s for s in speeds if s is not None)
    if node_gbps is None or nodes == 0:
        return AllReduce(gradient_bytes, nodes, node_gbps, None, None, None)
    node_bytes = bytes_per_second(node_gbps)
    ring = ring_seconds(gradient_bytes, nodes, node_bytes)
    rs_seconds, keeps_up = _rs_seconds(gradient_bytes, nodes, node_bytes, result)
    return AllReduce(gradient_bytes, nodes, node_gbps, ring, rs_seconds, keeps_up)


def bytes_per_second(gbps: float) -> float:
    """A rate in Gbps (1e9 bits per second) as bytes per second."""
    return gbps * 1e9 / BITS_PER_BYTE


def ring_seconds(size: float, nodes: int, node_bytes: float) -> float:
    """A ring all-reduce of ``size`` bytes over ``nodes`` nodes: 2(N−1)/N · S / B_node."""
    return 2 * (nodes - 1) / nodes * size / node_bytes


def server_seconds(size: float, nodes: int, node_bytes: float, pool_bytes: float) -> tuple[float, bool]:
    """A Reduction Server all-reduce of ``size`` bytes over ``nodes`` nodes with pool 2 moving
    ``pool_bytes`` per second: S / B_node while pool 2 keeps up (B_pool2 ≥ N · B_node), else
    N · S / B_pool2; and whether it keeps up."""
    keeps_up = pool_bytes >= nodes * node_bytes - 1e-6
    return max(size / node_bytes, nodes * size / pool_bytes), keeps_up


def _rs_seconds(size: float, nodes: int, node_bytes: float,
                result: Plan) -> tuple[float | None, bool | None]:
    """With no pool 2 yet, the estimate is for a Reduction Server sized to keep up."""
    rs = result.reduction_server
    if rs is None:
        return size / node_bytes, None
    if rs.replicas is None or rs.replicas < 1 or not rs.gbps_per_replica:  # replicas: 0 is the schema's to refuse
        return None, None
    return server_seconds(size, nodes, node_bytes, bytes_per_second(rs.replicas * rs.gbps_per_replica))


# --- applying the plan ---------------------------------------------------------

def resolve(job: Job, plan: Plan) -> Job:
    """A copy of ``job`` with ``reduction_server.replicas: auto`` filled in from the plan.

    The copy is shallow where nothing changes (a deepcopy would cost more than
    the whole compile); the Reduction Server pool and the pools map are new.
    """
    pool = job.pool("reduction_server")
    rs = plan.reduction_server
    if pool is None or not is_auto(pool) or rs is None or rs.replicas is None:
        return _with_pools(job, dict(job.pools))
    return _with_pools(job, {**job.pools, "reduction_server": replace(pool, replicas=rs.replicas)})


def _with_pools(job: Job, pools: dict[str, Pool]) -> Job:
    """A shallow copy of ``job`` with ``pools``: ``dataclasses.replace`` without its cost.

    ``replace`` reads every field and calls ``__init__`` again, per spec; Job has no
    ``__post_init__`` nor ``init=False`` fields, so copying its ``__dict__`` is the same copy.
    """
    copy = object.__new__(Job)
    copy.__dict__.update(job.__dict__)
    copy.pools = pools
    return copy


# --- numbers in words -------------------------------------------------------------

def gbps(value: float | None) -> str:
    """Gbps as the plan and its messages write them: ``512``, ``12.5``; ``?`` when unknown."""
    if value is None:
        return "?"
    return str(int(value)) if float(value).is_integer() else f"{value:.1f}"
