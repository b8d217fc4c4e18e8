"""What a job needs of each Vertex AI training quota in its region, all its pools at once.

Pure: the compiled job (a CustomJob, or a HyperparameterTuningJob with its
``trialJobSpec``, as REST JSON) in, one :class:`Need` per quota metric out. The
quota preflight (vxtrain.submission.quota) sets them against the project's
limits; the emulator enforces its limits with the same function (one home).

Counted per replica, added over pools and replicas (every replica is its own
machine: https://cloud.google.com/vertex-ai/docs/training/distributed-training):

* GPUs: ``acceleratorCount`` (or an A2/A3/G2 type's built-in GPUs) against the
  accelerator's metric, the preemptible one under SPOT and FLEX_START
  (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws#quota);
* CPUs: the machine type's vCPUs against its family's CPU quota (the quotas
  page keeps N1+E2, N2, N4, C2, M1, A2, A3 apart: https://cloud.google.com/vertex-ai/docs/quotas),
  Reduction Server pools included; under SPOT/FLEX_START the CPUs' metric is
  unknown (no source says whether they move to a preemptible one);
* TPUs: the TPU's metric, the amount unknown (no source says whether a TPU quota
  counts chips or cores), and no CPUs (a TPU VM's host is part of the slice);
* a study: × ``parallelTrialCount`` (that many trials run at once).

A metric, a unit or a machine the catalog does not know is kept as unknown
(``metric`` or ``needed`` None), never guessed. Where no row names the metric but a
documented pattern gives a name (catalog.quotas: the preemptible twin of a known GPU
metric, an N4/M1/A2/A3 CPU metric), the need carries it as ``candidate``: the
preflight counts it only when the project's ListQuotaInfos answer lists it. A job
on a persistent resource needs nothing: it runs on machines the resource already
holds (its quota was used when the resource was created).
"""
from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from vxtrain import catalog
from vxtrain.vocab.kinds import TUNING, job_spec_of, kind_of_job

#: Strategies that use the preemptible quota ("preemptible quota is used only in name",
#: https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws#quota; Spot: use-spot-vms).
PREEMPTIBLE_STRATEGIES = frozenset({"SPOT", "FLEX_START"})
_UNSET = ("", "ACCELERATOR_TYPE_UNSPECIFIED")


@dataclass(frozen=True)
class Need:
    """Units of one quota the job needs at once in its region.

    ``resource``: what is counted, for people (``NVIDIA_TESLA_T4 GPUs``, ``n1 vCPUs``);
    ``metric``: ``aiplatform.googleapis.com/...``, None when no source names it;
    ``needed``: None when the unit or the machine's size is not known;
    ``pools``: the indexes in ``workerPoolSpecs`` that need it (messages point at them);
    ``candidate``: with ``metric`` None, the name a documented pattern gives (full name),
    a fact only once the project's ListQuotaInfos answer lists it (``confidence`` and
    ``source`` are then the pattern's).
    """

    resource: str
    metric: str | None
    quota_id: str | None
    needed: int | None
    confidence: str | None = None
    source: str | None = None
    pools: tuple[int, ...] = ()
    candidate: str | None = None

    @property
    def short_metric(self) -> str | None:
        """The metric without its service (``custom_model_training_nvidia_t4_gpus``)."""
        return self.metric.rpartition("/")[2] if self.metric else None


def strategy_of(job: Mapping[str, Any]) -> str:
    """The compiled job's ``scheduling.strategy`` (``SPOT``, ``FLEX_START``…), ``""`` when unset."""
    spec = job_spec_of(job)
    return str((spec.get("scheduling") or {}).get("strategy") or "").upper()


def needs(job: Mapping[str, Any]) -> list[Need]:
    """One Need per quota metric (and per unknown resource) of a compiled job, in pool order."""
    spec = job_spec_of(job)
    if spec.get("persistentResourceId"):
        return []
    trials = _int(job.get("parallelTrialCount"), 1) if kind_of_job(job) is TUNING else 1
    strategy = strategy_of(job)
    preemptible = strategy in PREEMPTIBLE_STRATEGIES
    merged: dict[str, Need] = {}
    for index, pool in enumerate(spec.get("workerPoolSpecs") or ()):
        if not pool:
            continue  # `{}`: a slot left empty on purpose
        replicas = _int(pool.get("replicaCount"), 1) * trials
        for need in _pool_needs(pool.get("machineSpec") or {}, replicas, preemptible, strategy):
            need = replace(need, pools=(index,))
            key = need.metric or need.resource
            merged[key] = _add(merged[key], need) if key in merged else need
    return list(merged.values())


def _pool_needs(machine_spec: Mapping[str, Any], replicas: int, preemptible: bool,
                strategy: str) -> Iterator[Need]:
    """The needs of one pool's ``replicas`` machines."""
    machine_type = str(machine_spec.get("machineType") or "")
    accelerator = str(machine_spec.get("acceleratorType") or "")
    count = _int(machine_spec.get("acceleratorCount"), 0)
    if accelerator in _UNSET and machine_type:
        accelerator, count = catalog.builtin_accelerator(machine_type) or ("", 0)
    if catalog.is_tpu(machine_type):
        yield _tpu_need(machine_type, machine_spec, accelerator, count, preemptible)
        return
    if accelerator not in _UNSET:
        yield _accelerator_need(accelerator, count * replicas, preemptible, strategy)
    if machine_type:
        yield _cpu_need(machine_type, replicas, preemptible, strategy)


def _accelerator_need(accelerator: str, units: int, preemptible: bool, strategy: str) -> Need:
    row = catalog.accelerator_quota(accelerator, preemptible=preemptible)
    label = f"{accelerator} GPUs" + (f" ({strategy})" if preemptible else "")
    found = catalog.accelerator_candidate(accelerator, preemptible=preemptible)  # None where a row names it
    if found is not None:
        return Need(label, None, None, units, found.confidence, found.source, candidate=found.metric)
    if row is None:
        return Need(label, None, None, units)
    return Need(label, row.metric, row.quota_id, units if row.unit else None, row.confidence, row.source)


def _cpu_need(machine_type: str, replicas: int, preemptible: bool, strategy: str) -> Need:
    family = catalog.machine_family(machine_type)
    shape = catalog.machine(machine_type)
    units = shape.vcpu * replicas if shape is not None else None
    if preemptible:
        return Need(f"{family} vCPUs ({strategy})", None, None, units)
    row = catalog.cpu_quota(machine_type)
    if row is None:
        return Need(f"{family} vCPUs", None, None, units)
    found = catalog.cpu_candidate(machine_type)  # None where the row names the metric
    if found is not None:
        return Need(f"{family} vCPUs", None, None, units, found.confidence, found.source, candidate=found.metric)
    return Need(f"{family} vCPUs", row.metric, row.quota_id, units, row.confidence, row.source)


def _tpu_need(machine_type: str, machine_spec: Mapping[str, Any], accelerator: str, count: int,
              preemptible: bool) -> Need:
    size = catalog.tpu_size(machine_type, machine_spec.get("tpuTopology"), accelerator or None, count or None)
    chip = accelerator if accelerator not in _UNSET else (size.accelerator_type if size is not None else None)
    label = f"TPU {chip or machine_type}"
    row = catalog.accelerator_quota(chip, preemptible=preemptible) if chip else None
    if row is None:
        return Need(label, None, None, None)
    return Need(label, row.metric, row.quota_id, None, row.confidence, row.source)


def _add(a: Need, b: Need) -> Need:
    """Two needs of one metric: their units added (unknown when either is), their pools joined."""
    total = a.needed + b.needed if a.needed is not None and b.needed is not None else None
    return replace(a, needed=total, pools=a.pools + b.pools)


def _int(value: Any, default: int) -> int:
    """An int64 field of REST JSON (MessageToDict writes them as strings)."""
    try:
        return int(value) if value not in (None, "") else default
    except (TypeError, ValueError):
        return default
