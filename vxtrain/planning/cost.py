"""Cost plan: Vertex AI training prices per pool, per hour and up to the timeout.

Pure arithmetic over the (resolved) job model and the price catalog
(:mod:`vxtrain.catalog.prices`):

- a pool's ``per_node_hour`` = its machine's price + accelerators per node ×
  the accelerator's price; its ``per_hour`` = replicas × hosts × ``per_node_hour``
  (hosts: the TPU VMs of one multi-host slice, from its topology; 1 otherwise);
- a TPU VM type (``ct5lp-*``, ``ct6e-*``, ``tpu7x-*``) is priced per host, its
  chips included (Cloud TPU bills per chip-hour, the host VM in it), so an
  accelerator named on it adds no line;
- the job's ``per_hour`` = the sum over every pool (Reduction Server and
  evaluators included); ``max_total`` = ``per_hour`` × the timeout in hours;
- a study: each trial is one such job, so ``max_total`` is × ``max_trials``,
  and ``per_hour`` is what ``parallel_trials`` trials running at once cost;
- ``scheduling.strategy: SPOT`` uses Spot prices;
- a job on a persistent resource is not billed per job: every figure is 0,
  ``pricing`` is ``persistent_resource`` and ``billed_via`` names the resource,
  which is billed while it is running, jobs or not.

A price the catalog lacks makes the pool's figures ``None`` and is listed in
``unknown``; the job's ``per_hour`` and ``max_total`` are then ``None`` too,
because a partial sum would read as the whole price. Nothing is guessed.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from vxtrain import diagnostics as dx
from vxtrain import catalog
from vxtrain.catalog import prices
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import NativeSpec, format_path
from vxtrain.model import Accelerator, Job, Pool, written_at
from vxtrain.slots import role_of
from vxtrain.vocab.kinds import TUNING, job_spec_of, kind_of_job

CURRENCY = "USD"
UNKNOWN = "unknown"
#: Scheduling.timeout: "The maximum job running time. The default is 7 days."
#: https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#Scheduling
#: Vertex stops a job at its timeout, so without one the job still ends by 7 days:
#: that (not "no limit") is the honest bound, shown as ``max_total_at_default_timeout``
#: (the JSON's ``max_total`` stays null without a timeout, as the plan contract says).
DEFAULT_TIMEOUT_SECONDS = 7 * 24 * 3600
SECONDS_PER_HOUR = 3600
ON_DEMAND, SPOT, FLEX_START = prices.ON_DEMAND, prices.SPOT, prices.FLEX_START
PERSISTENT_RESOURCE = "persistent_resource"
#: "You are billed for the entire duration that a persistent resource is in a running state, regardless of
#: whether there is a job running" ... "All jobs running on a persistent resource are not separately charged."
PERSISTENT_RESOURCE_BILLING = ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/"
                               "training/persistent-resource-overview")
#: How each pricing is named in messages.
TIER = {ON_DEMAND: "", SPOT: "Spot ", FLEX_START: "FLEX_START (Dynamic Workload Scheduler) ",
        PERSISTENT_RESOURCE: "persistent-resource "}
#: TPU VM types: the catalog prices one host with its chips (prices.csv's header), so the chips named
#: as an accelerator (TPU_V5_LITEPOD…) are not priced again.
CHIPS_IN_MACHINE_PRICE = ("ct5lp-", "ct6e-", "tpu7x-")
# Weakest last: a pool is as sure as its least sure price.
_CONFIDENCE_ORDER = ("documented", "copied", "derived", "unverified", UNKNOWN)
_DIGITS = 8  # the catalog's precision


# --- plan's JSON (docs/cli.md, "plan -o json": the Contract's ``cost``) ---------------------

# Annotations only: a TypedDict class costs ~15 µs a field to create (measured), and plan imports
# this module.
if TYPE_CHECKING:
    class PriceLineJson(TypedDict):
        """One entry of a pool's ``prices``."""

        kind: str
        name: str
        count: int
        usd_per_hour: float | None
        confidence: str
        source: str
        as_of: str


    class UnknownJson(TypedDict):
        """One entry of ``cost.unknown``."""

        pool: int | None
        role: str | None
        kind: str
        name: str | None
        region: str | None
        pricing: str


    class PoolCostJson(TypedDict):
        """One row of ``cost.pools``."""

        pool: int
        role: str
        replicas: int | None
        hosts: int
        machine_type: str | None
        per_node_hour: float | None
        per_hour: float | None
        confidence: str
        source: str
        prices: list[PriceLineJson]


    class StudyCostJson(TypedDict):
        """``cost.study``: a study's figures."""

        per_trial_hour: float | None
        max_trials: int | None
        parallel_trials: int


    class CostJson(TypedDict):
        """The Contract's ``cost`` object and the keys vxtrain adds."""

        currency: str
        region: str | None
        per_hour: float | None
        max_total: float | None
        pools: list[PoolCostJson]
        unknown: list[UnknownJson]
        pricing: str
        confidence: str
        timeout_hours: float
        timeout_default: bool
        max_total_at_default_timeout: NotRequired[float | None]
        billed_via: NotRequired[str]
        source: NotRequired[str]
        study: NotRequired[StudyCostJson]


@dataclass(frozen=True)
class PriceLine:
    """One priced item of a node: its machine, or its accelerators (``count`` per node)."""

    kind: str
    name: str
    count: int
    unit_usd_per_hour: float | None
    confidence: str
    source: str
    as_of: str

    @property
    def usd_per_hour(self) -> float | None:
        """count × the unit price (None when the price is unknown)."""
        return None if self.unit_usd_per_hour is None else self.count * self.unit_usd_per_hour

    def to_json(self) -> PriceLineJson:
        """One entry of a pool's ``prices``."""
        return {"kind": self.kind, "name": self.name, "count": self.count,
                "usd_per_hour": _round(self.unit_usd_per_hour), "confidence": self.confidence,
                "source": self.source, "as_of": self.as_of}


@dataclass(frozen=True)
class Unknown:
    """A price the catalog does not have (or cannot have: no region)."""

    pool: int | None
    role: str | None
    kind: str  # machine | accelerator | region
    name: str | None
    region: str | None
    pricing: str

    def to_json(self) -> UnknownJson:
        """One entry of ``cost.unknown``."""
        return {"pool": self.pool, "role": self.role, "kind": self.kind, "name": self.name,
                "region": self.region, "pricing": self.pricing}

    def message(self) -> str:
        """Why the job's cost is not known, in words."""
        if self.kind == "region":
            return ("cost unknown: no region, and Vertex AI prices differ per region; "
                    "set region: or pass --region")
        return (f"cost unknown: the price catalog has no Vertex AI {TIER[self.pricing]}price for {self.kind} "
                f"{self.name} in {self.region} ({self.role}); the job's cost per hour is not "
                "summed without it")


@dataclass(frozen=True)
class PoolCost:
    """The price of one pool's nodes."""

    index: int
    role: str
    replicas: int | None
    machine_type: str | None
    lines: tuple[PriceLine, ...]
    hosts: int = 1  # VMs per replica: a multi-host TPU slice is one replica of several hosts
    billed_via: str | None = None  # a persistent resource: the pool costs nothing per job

    @property
    def per_node_hour(self) -> float | None:
        """Machine + accelerators of one node (one host), USD per hour (None when any part is unknown)."""
        if self.billed_via is not None:
            return 0.0
        parts = [line.usd_per_hour for line in self.lines]
        if not parts or any(p is None for p in parts):
            return None
        return sum(p for p in parts if p is not None)

    @property
    def per_hour(self) -> float | None:
        """replicas × hosts × ``per_node_hour`` (None when either is unknown)."""
        node = self.per_node_hour
        return None if node is None or self.replicas is None else self.replicas * self.hosts * node

    @property
    def confidence(self) -> str:
        """The weakest confidence of the pool's prices (a persistent resource's billing rule is documented)."""
        if self.billed_via is not None:
            return "documented"
        return weakest(line.confidence for line in self.lines)

    @property
    def source(self) -> str:
        """The sources of the pool's prices, space-separated, each once."""
        if self.billed_via is not None:
            return PERSISTENT_RESOURCE_BILLING
        return " ".join(dict.fromkeys(line.source for line in self.lines if line.source))

    def to_json(self) -> PoolCostJson:
        """One row of the Contract's ``cost.pools`` (plus the ``prices`` it sums and its ``hosts``)."""
        return {"pool": self.index, "role": self.role, "replicas": self.replicas, "hosts": self.hosts,
                "machine_type": self.machine_type, "per_node_hour": _round(self.per_node_hour),
                "per_hour": _round(self.per_hour), "confidence": self.confidence,
                "source": self.source, "prices": [line.to_json() for line in self.lines]}


@dataclass
class Cost:
    """The cost plan of a job (of one trial, for a study, plus the study's totals)."""

    region: str | None
    pricing: str
    pools: list[PoolCost]
    timeout_seconds: int
    timeout_default: bool
    max_trials: int | None = None  # set for a study
    parallel_trials: int | None = None
    study: bool = False
    unknown: list[Unknown] = field(default_factory=list)
    billed_via: str | None = None  # the persistent resource the job runs on (pricing persistent_resource)

    @property
    def per_trial_hour(self) -> float | None:
        """One run of the job (one trial): the sum over pools; None if any is unknown."""
        if self.unknown or not self.pools:
            return None
        parts = [p.per_hour for p in self.pools]
        if any(p is None for p in parts):
            return None
        return sum(p for p in parts if p is not None)

    @property
    def per_hour(self) -> float | None:
        """USD per hour while the job runs; a study's ``parallel_trials`` at once."""
        one = self.per_trial_hour
        if one is None or not self.study:
            return one
        return one * (self.parallel_trials or 1)

    @property
    def max_total(self) -> float | None:
        """USD up to the timeout (× ``max_trials`` for a study); None when unknown."""
        return self.up_to_timeout(self.per_trial_hour)

    def up_to_timeout(self, per_hour: float | None) -> float | None:
        """``per_hour`` (one trial's, or one pool's in it) run until the timeout, × ``max_trials``
        for a study: what it costs at most; None when unknown."""
        runs = self.max_trials if self.study else 1
        if per_hour is None or runs is None:
            return None
        return per_hour * self.timeout_seconds / SECONDS_PER_HOUR * runs

    @property
    def confidence(self) -> str:
        """The weakest confidence of every price in the job."""
        if self.billed_via is not None:
            return "documented"
        return weakest(p.confidence for p in self.pools) if not self.unknown else UNKNOWN

    def to_json(self) -> dict[str, Any]:
        """The Contract's ``cost`` object (plus ``pricing``, the timeout used and study figures)."""
        out: CostJson = {
            "currency": CURRENCY, "region": self.region, "per_hour": _round(self.per_hour),
            # The contract: null without a timeout. Vertex still stops such a job at its
            # 7-day default, so that bound is given beside it (an added key).
            "max_total": None if self.timeout_default else _round(self.max_total),
            "pools": [p.to_json() for p in self.pools],
            "unknown": [u.to_json() for u in self.unknown], "pricing": self.pricing,
            "confidence": self.confidence, "timeout_hours": self.timeout_seconds / SECONDS_PER_HOUR,
            "timeout_default": self.timeout_default,
        }
        if self.timeout_default:
            out["max_total_at_default_timeout"] = _round(self.max_total)
        if self.billed_via is not None:
            out["billed_via"] = self.billed_via
            out["source"] = PERSISTENT_RESOURCE_BILLING
        if self.study:
            out["study"] = {"per_trial_hour": _round(self.per_trial_hour),
                            "max_trials": self.max_trials,
                            "parallel_trials": self.parallel_trials or 1}
        return dict(out)  # a plain dict: commands/diff.py holds it so (it is a CostJson)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, _DIGITS)


def weakest(confidences: Any) -> str:
    """The least sure of ``confidences`` (``unknown`` when there are none)."""
    ranks = [_CONFIDENCE_ORDER.index(c) if c in _CONFIDENCE_ORDER else len(_CONFIDENCE_ORDER) - 1
             for c in confidences]
    return _CONFIDENCE_ORDER[max(ranks)] if ranks else UNKNOWN


# --- planning ------------------------------------------------------------------

def pricing_of(job: Job) -> str:
    """Which price list applies: ``scheduling.strategy`` SPOT / FLEX_START, else on-demand."""
    strategy = (job.scheduling.strategy or "").upper() if job.scheduling else ""
    return {"SPOT": SPOT, "FLEX_START": FLEX_START}.get(strategy, ON_DEMAND)


def plan(job: Job, *, hosts: Mapping[str, int] | None = None, persistent_resource: str | None = None,
         project: str | None = None) -> Cost:
    """The cost of ``job`` (resolved: ``reduction_server.replicas: auto`` filled in).

    ``hosts``: pool role → VMs per replica (default: a TPU VM slice's hosts, from its
    topology); a pool not named has 1. ``persistent_resource`` (default: the job's): the ID of the
    persistent resource the job runs on (``jobSpec.persistentResourceId``): nothing is priced per job
    and ``billed_via`` is the resource's name (its full name when ``project`` and the
    job's region are known).
    """
    persistent_resource = persistent_resource or job.persistent_resource
    project = project or job.project
    hosts = slice_hosts(job) if hosts is None else hosts
    timeout = job.scheduling.timeout if job.scheduling else None
    cost = Cost(region=job.region, pricing=pricing_of(job), pools=[],
                timeout_seconds=DEFAULT_TIMEOUT_SECONDS if timeout is None else timeout,
                timeout_default=timeout is None)
    if job.study is not None:
        cost.study = True
        cost.max_trials, cost.parallel_trials = job.study.max_trials, job.study.parallel_trials
    if persistent_resource is not None:
        cost.pricing = PERSISTENT_RESOURCE
        cost.billed_via = resource_name(persistent_resource, project, job.region)
    elif job.region is None:
        cost.unknown.append(Unknown(None, None, "region", None, None, cost.pricing))
    for pool in job.ordered_pools():
        cost.pools.append(pool_cost(pool, cost, (hosts or {}).get(pool.role, 1)))
    return cost


def slice_hosts(job: Job) -> dict[str, int]:
    """Pool role → hosts of its TPU VM slice (``tpu_topology``), for pools whose slice spans more than one."""
    out: dict[str, int] = {}
    for pool in job.ordered_pools():
        hosts = _hosts_of(pool)
        if hosts > 1:
            out[pool.role] = hosts
    return out


def _hosts_of(pool: Pool) -> int:
    """VMs per replica of ``pool``: a multi-host TPU VM slice's hosts (from its topology), else 1."""
    size = catalog.tpu_size(pool.machine_type, pool.tpu_topology, None, None)
    return size.hosts if size is not None and size.hosts is not None and size.hosts > 1 else 1


def resource_name(resource_id: str, project: str | None, region: str | None) -> str:
    """``projects/P/locations/R/persistentResources/ID`` when project and region are known, else the ID."""
    if project and region:
        return f"projects/{project}/locations/{region}/persistentResources/{resource_id}"
    return resource_id


def pool_cost(pool: Pool, cost: Cost, hosts: int = 1) -> PoolCost:
    """The priced lines of one pool's nodes; unknown prices are added to ``cost.unknown``.

    ``hosts``: VMs per replica (a multi-host TPU slice), each priced as one node.
    """
    if cost.billed_via is not None:  # a persistent resource: billed as a whole, not per job
        return PoolCost(index=pool.index, role=pool.role, replicas=pool.replicas, machine_type=pool.machine_type,
                        lines=(), hosts=hosts, billed_via=cost.billed_via)
    lines = []
    if pool.machine_type is not None:
        lines.append(_line(pool, prices.MACHINE, pool.machine_type, 1, cost))
    acc = pool.accelerator
    chips_in_machine = (pool.machine_type or "").startswith(CHIPS_IN_MACHINE_PRICE)
    if acc is not None and acc.type and (acc.count or 0) > 0 and not chips_in_machine:
        lines.append(_line(pool, prices.ACCELERATOR, acc.type, acc.count or 0, cost))
    return PoolCost(index=pool.index, role=pool.role, replicas=pool.replicas,
                    machine_type=pool.machine_type, lines=tuple(lines), hosts=hosts)


def _line(pool: Pool, kind: str, name: str, count: int, cost: Cost) -> PriceLine:
    row = prices.price(cost.region, kind, name, cost.pricing) if cost.region else None
    usd = row.usd_per_hour if row is not None else None
    if usd is None:
        if cost.region:  # else one job-level entry says why
            cost.unknown.append(Unknown(pool.index, pool.role, kind, name, cost.region, cost.pricing))
        return PriceLine(kind, name, count, None, UNKNOWN, row.source if row else "", row.as_of if row else "")
    assert row is not None
    return PriceLine(kind, name, count, usd, row.confidence, row.source, row.as_of)


# --- diagnostics and the guardrail ---------------------------------------------------

def diagnostics(cost: Cost, native: NativeSpec | None = None) -> list[Diagnostic]:
    """A ``price-unknown`` warning per unknown price, at the key that asks for it."""
    return [dx.warning("price-unknown", u.message(), **_where(native, _unknown_path(u, native)))
            for u in cost.unknown]


def over_limit(cost: Cost, max_hourly_usd: float) -> Diagnostic | None:
    """The ``--max-hourly-cost`` guardrail: an error when ``per_hour`` exceeds the limit.

    An unknown ``per_hour`` is refused too: a guardrail that lets through what
    it cannot price is no guardrail (drop the option to submit such a job).
    """
    per_hour = cost.per_hour
    what = "per hour while its parallel trials run" if cost.study else "per hour"
    if per_hour is None:
        names = ", ".join(sorted({u.name or u.kind for u in cost.unknown})) or "a pool"
        return dx.error("max-hourly-cost", f"--max-hourly-cost {max_hourly_usd:g}: the job's cost "
                        f"{what} is unknown (no price for {names}), so it cannot be checked; "
                        "refused (drop --max-hourly-cost to send it anyway)", "--max-hourly-cost")
    if per_hour <= max_hourly_usd:
        return None
    return dx.error("max-hourly-cost", f"the job costs {usd(per_hour)} {what}, over "
                    f"--max-hourly-cost {usd(max_hourly_usd)}; refused", "--max-hourly-cost")


def _unknown_path(u: Unknown, native: NativeSpec | None) -> tuple[str | int, ...]:
    if u.kind == "region":
        return ("region",)
    assert u.role is not None
    data = native.data if native is not None else {}
    key, tail = ("accelerator", ("type",)) if u.kind == prices.ACCELERATOR else ("machine_type", ())
    return written_at(data, u.role, key, *tail) or (u.role, key, *tail)


def _where(native: NativeSpec | None, path: tuple[str | int, ...]) -> Mapping[str, Any]:
    """A diagnostic's location keywords (``NativeSpec.where``'s: path, file, line, column)."""
    return native.where(path) if native is not None else {"path": format_path(path)}


# --- what a sent job costs while it runs (recovery's attempts, status, wait) -------------------

def job_per_hour(job: Mapping[str, Any], region: str | None) -> float | None:
    """USD per hour of a job as sent or read back (a CustomJob's or a tuning job's REST JSON):
    its pools' machine specs priced as ``plan`` prices the spec's pools (the same catalog and
    arithmetic; Spot prices under ``scheduling.strategy`` SPOT, nothing under a
    ``persistentResourceId``). None when any price is unknown: never guessed."""
    return _round(sent_cost(job, region).per_hour)


def sent_cost(job: Mapping[str, Any], region: str | None) -> Cost:
    """The cost plan of a job as sent or read back, pool by pool (what ``job_per_hour`` sums;
    ``vxtrain cost --by machine`` splits a job's spend by it): a price it lacks, or no
    ``region``, is in ``unknown`` and makes ``per_hour`` None."""
    spec = job_spec_of(job)
    strategy = str((spec.get("scheduling") or {}).get("strategy") or "").upper()
    cost = Cost(region=region, pricing={"SPOT": SPOT, "FLEX_START": FLEX_START}.get(strategy, ON_DEMAND),
                pools=[], timeout_seconds=DEFAULT_TIMEOUT_SECONDS, timeout_default=True,
                study=kind_of_job(job) is TUNING, parallel_trials=_count(job.get("parallelTrialCount")) or 1)
    if spec.get("persistentResourceId"):
        cost.pricing, cost.billed_via = PERSISTENT_RESOURCE, str(spec["persistentResourceId"])
    elif region is None:
        cost.unknown.append(Unknown(None, None, "region", None, None, cost.pricing))
        return cost
    for index, raw in enumerate(spec.get("workerPoolSpecs") or []):
        pool = _sent_pool(index, raw)
        if pool is not None:
            cost.pools.append(pool_cost(pool, cost, _hosts_of(pool)))
    return cost


def _sent_pool(index: int, raw: Mapping[str, Any]) -> Pool | None:
    """The model pool of one sent workerPoolSpec, with what its price needs (None: an empty slot)."""
    machine = raw.get("machineSpec") or {}
    if not raw or not machine:
        return None
    image = (raw.get("containerSpec") or {}).get("imageUri")
    acc_type, acc_count = machine.get("acceleratorType"), _count(machine.get("acceleratorCount"))
    accelerator = Accelerator(str(acc_type), acc_count) if acc_type and acc_count else None
    return Pool(role=role_of(index, image), replicas=_count(raw.get("replicaCount")) or 1,
                machine_type=machine.get("machineType"), accelerator=accelerator,
                tpu_topology=machine.get("tpuTopology"))


def _count(value: Any) -> int | None:
    """An int64 of REST JSON (written as a string by MessageToDict), None when absent."""
    try:
        return int(value) if value is not None else None
    except (TypeError, ValueError):
        return None


# --- money in words -----------------------------------------------------------------

def usd(value: float | None) -> str:
    """``$1,234.56`` (``$0.2185`` under a dollar; ``?`` when unknown)."""
    if value is None:
        return "?"
    return f"${value:,.4f}" if value < 1 else f"${value:,.2f}"
