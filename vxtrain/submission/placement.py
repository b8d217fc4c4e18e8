"""A job on a persistent resource: checked against the resource before it is created.

A CustomJob (or a tuning job's ``trialJobSpec``) with ``persistentResourceId``
runs on the machines the resource holds. Vertex AI refuses it, after the user
waited, when it does not fit; ``submit`` reads the resource first
(PersistentResourceService.GetPersistentResource, through the backend) and
refuses the job itself, creating nothing, when:

* the ID is not one (vxtrain.vocab.resources.PERSISTENT_RESOURCE_ID), or the resource
  ``projects/P/locations/R/persistentResources/ID`` (the job's project and
  region) does not exist;
* the resource is not RUNNING;
* a pool of the job matches none of the resource's pools exactly in machine
  spec and disk spec, Vertex's defaults filled in on both sides: "Specify the
  ``worker_pool_specs`` parameter such that the values of ``machine_spec`` and
  ``disk_spec`` for each resource pool matches exactly with a corresponding
  resource pool from the persistent resource";
* a pool asks for more replicas than its resource pool has: "Specify a
  ``replica_count`` less than or equal to the ``replica_count`` or
  ``max_replica_count`` of the corresponding resource pool"
  (both quotes: https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/persistent-resource-train).
  The job's pools that land on one resource pool share its machines, so their
  replicas are added up (derived: each replica is a machine);
* the job's network or CMEK key differs from the resource's, both being set
  ("The network and CMEK configs on the job should be consistent with those on
  the PersistentResource, otherwise, the job will be rejected", CustomJobSpec's
  ``persistent_resource_id``,
  https://github.com/googleapis/python-aiplatform/blob/main/google/cloud/aiplatform_v1/types/custom_job.py).

:func:`placement_problems` is pure (the job and the resource as REST JSON in,
diagnostics out); :func:`check_placement` reads the resource and raises
SpecError (exit 1) with them.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from vxtrain import errors
from vxtrain import diagnostics as dx
from vxtrain.backends.base import JobDict, ResourceDict
from vxtrain.diagnostics import Diagnostic
from vxtrain.model import DEFAULT_DISK_GB, DEFAULT_DISK_TYPE
from vxtrain.slots import role_of
from vxtrain.submission.names import parent_of
from vxtrain.submission.session import Session
from vxtrain.vocab.kinds import job_spec_of, kind_of_job
from vxtrain.vocab.resources import PERSISTENT_RESOURCE_ID

#: DiskSpec.boot_disk_type: "The default value is `pd-ssd` (`hyperdisk-balanced` is the
#: default for `a3-ultragpu-8g` and `a4-highgpu-8g`)"; boot_disk_size_gb defaults to 100
#: (https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/configure-compute;
#: documented. The installed DiskSpec docstring names "A3U machines" only:
#: https://github.com/googleapis/python-aiplatform/blob/main/google/cloud/aiplatform_v1/types/machine_resources.py).
HYPERDISK_DEFAULT = "hyperdisk-balanced"
HYPERDISK_DEFAULT_MACHINES = frozenset({"a3-ultragpu-8g", "a4-highgpu-8g"})
#: "Specifying `NO_RESERVATION` has the same effect as omitting a reservation affinity
#: specification" (https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/use-reservations).
_NO_RESERVATION = frozenset({"NO_RESERVATION", "TYPE_UNSPECIFIED", ""})
_UNSET = "(not set)"


def resource_id_of(job: Mapping[str, Any]) -> str | None:
    """The ``persistentResourceId`` of a CustomJob's ``jobSpec`` or a tuning job's ``trialJobSpec``."""
    found = job_spec_of(job).get("persistentResourceId")
    return str(found) if found else None


def resource_name(project: str, region: str, resource_id: str) -> str:
    """``projects/P/locations/R/persistentResources/ID``: a job's resource is in its project and region."""
    return f"{parent_of(project, region)}/persistentResources/{resource_id}"


def boot_disk_default(machine_type: str) -> str:
    """The boot disk type Vertex gives a pool of ``machine_type`` that names none."""
    return HYPERDISK_DEFAULT if machine_type in HYPERDISK_DEFAULT_MACHINES else DEFAULT_DISK_TYPE


def pool_shape(machine_spec: Mapping[str, Any] | None, disk_spec: Mapping[str, Any] | None) -> dict[str, Any]:
    """A pool's machine spec and disk spec as flat ``machineSpec.F`` / ``diskSpec.F`` fields,
    with Vertex's defaults filled in and unset values (0, "", ``*_UNSPECIFIED``,
    NO_RESERVATION) left out, so two pools match exactly when their shapes are equal."""
    out: dict[str, Any] = {}
    machine = dict(machine_spec or {})
    affinity = machine.pop("reservationAffinity", None) or {}
    for key, value in machine.items():
        if key == "acceleratorCount":
            value = int(value or 0)
        if value not in (None, "", 0) and not str(value).endswith("_UNSPECIFIED"):
            out[f"machineSpec.{key}"] = value
    if str(affinity.get("reservationAffinityType", "")) not in _NO_RESERVATION or affinity.get("values"):
        for key, value in affinity.items():
            out[f"machineSpec.reservationAffinity.{key}"] = sorted(value) if isinstance(value, list) else value
    disk = dict(disk_spec or {})
    out["diskSpec.bootDiskType"] = disk.get("bootDiskType") or boot_disk_default(str(machine.get("machineType", "")))
    out["diskSpec.bootDiskSizeGb"] = int(disk.get("bootDiskSizeGb") or DEFAULT_DISK_GB)
    return out


def _differences(job_shape: Mapping[str, Any], pool_shape_: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """(field, the job's value, the resource pool's value) for every field that differs."""
    fields = sorted(set(job_shape) | set(pool_shape_), key=_field_order)
    return [(f, job_shape.get(f, _UNSET), pool_shape_.get(f, _UNSET)) for f in fields
            if job_shape.get(f, _UNSET) != pool_shape_.get(f, _UNSET)]


def _field_order(field: str) -> tuple[int, str]:
    order = ("machineSpec.machineType", "machineSpec.acceleratorType", "machineSpec.acceleratorCount")
    return (order.index(field), field) if field in order else (len(order), field)


@dataclass
class _ResourcePool:
    index: int
    id: str
    shape: dict[str, Any]
    limit: int
    limit_field: str
    used: int
    taken: int = 0          # replicas the job's pools put on it so far
    takers: tuple[str, ...] = ()


def _resource_pools(resource: Mapping[str, Any]) -> list[_ResourcePool]:
    out = []
    for i, pool in enumerate(resource.get("resourcePools") or []):
        count = int(pool.get("replicaCount") or 0)
        autoscaling_max = int((pool.get("autoscalingSpec") or {}).get("maxReplicaCount") or 0)
        limit, field = ((autoscaling_max, "autoscalingSpec.maxReplicaCount") if autoscaling_max > count
                        else (count, "replicaCount"))
        out.append(_ResourcePool(i, str(pool.get("id") or f"resourcePools[{i}]"),
                                 pool_shape(pool.get("machineSpec"), pool.get("diskSpec")), limit, field,
                                 int(pool.get("usedReplicaCount") or 0)))
    return out


def _job_pools(spec: Mapping[str, Any]) -> Iterator[tuple[int, str, Mapping[str, Any]]]:
    """(index, role, pool) of every pool that is not a ``{}`` gap."""
    for i, pool in enumerate(spec.get("workerPoolSpecs") or []):
        if pool:
            image = (pool.get("containerSpec") or {}).get("imageUri")
            yield i, role_of(i, image) if i < 4 else f"pool {i}", pool


def placement_problems(job: Mapping[str, Any], resource: Mapping[str, Any], *, name: str | None = None,
                       notes: list[str] | None = None) -> list[Diagnostic]:
    """Why ``job`` (a CustomJob or HyperparameterTuningJob, REST JSON) cannot run on
    ``resource`` (a PersistentResource, REST JSON): one error per broken rule, each
    naming the resource, the pool (role and ``workerPoolSpecs`` index), the field and
    both values; [] when it fits. ``notes`` collects what is worth saying but is no
    error (machines other jobs use now)."""
    name = name or str(resource.get("name", "the persistent resource"))
    spec_key = kind_of_job(job).spec_key
    spec = job_spec_of(job)
    state = str(resource.get("state") or "STATE_UNSPECIFIED")
    if state != "RUNNING":
        reason = (resource.get("error") or {}).get("message")
        return [dx.error("persistent-resource-not-running",
                         f"persistent resource {name} is {state}, not RUNNING: a job runs on a persistent "
                         f"resource only while it is RUNNING{f' (its error: {reason})' if reason else ''}; "
                         f"wait for it or pick another, nothing was created", f"{spec_key}.persistentResourceId")]
    out = _consistency(job, spec, spec_key, resource, name)
    pools = _resource_pools(resource)
    placed: list[tuple[int, str, str, int, list[_ResourcePool]]] = []
    for index, role, pool in _job_pools(spec):
        where = f"{spec_key}.workerPoolSpecs[{index}]"
        shape = pool_shape(pool.get("machineSpec"), pool.get("diskSpec"))
        matches = [p for p in pools if p.shape == shape]
        if matches:
            placed.append((index, role, where, int(pool.get("replicaCount") or 0), matches))
        else:
            out.append(_mismatch(name, role, where, shape, pools))
    return out + _replica_problems(name, placed, notes)


def _replica_problems(name: str, placed: list[tuple[int, str, str, int, list[_ResourcePool]]],
                      notes: list[str] | None) -> list[Diagnostic]:
    """The job's pools on the resource pools they match: every way of putting each on one
    (a resource may hold identical pools) is tried, and the first in which every pool's
    replicas fit wins; when none does, the pools that do not fit the first fit found pool
    by pool (most room left) are the errors."""
    for choice in itertools.product(*(matches for *_, matches in placed)):
        taken: dict[int, int] = {}
        for (*_, replicas, _), target in zip(placed, choice):
            taken[target.index] = taken.get(target.index, 0) + replicas
        if all(taken[p.index] <= p.limit for p in choice):
            if notes is not None:
                notes.extend(_busy(name, p, taken[p.index]) for p in {p.index: p for p in choice}.values()
                             if p.used and p.used + taken[p.index] > p.limit)
            return []
    out = []
    for _, role, where, replicas, matches in placed:
        target = max(matches, key=lambda p: p.limit - p.taken)
        if target.taken + replicas > target.limit:
            out.append(_too_many(name, role, where, replicas, target))
        target.taken += replicas
        target.takers += (f"{role} ({where}: {replicas})",)
    return out


def _busy(name: str, pool: _ResourcePool, replicas: int) -> str:
    return (f"{pool.used} of the {pool.limit} machines of pool {pool.id} of {name} are in use by other jobs, "
            f"and this job needs {replicas}: it may wait for them (Vertex AI counts a job's replicas "
            f"against what other jobs leave free)")


def _consistency(job: Mapping[str, Any], spec: Mapping[str, Any], spec_key: str, resource: Mapping[str, Any],
                 name: str) -> list[Diagnostic]:
    """The job's network and CMEK key against the resource's, where both are set."""
    out = []
    pairs = ((f"{spec_key}.network", spec.get("network"), resource.get("network"), "network"),
             ("encryptionSpec.kmsKeyName", (job.get("encryptionSpec") or {}).get("kmsKeyName"),
              (resource.get("encryptionSpec") or {}).get("kmsKeyName"), "encryptionSpec.kmsKeyName"))
    for path, mine, theirs, field in pairs:
        if mine and theirs and mine != theirs:
            out.append(dx.error("persistent-resource-mismatch",
                                f"{path} is {mine} but persistent resource {name} has {field} {theirs}: a job on "
                                f"a persistent resource uses its network and CMEK key; nothing was created", path))
    return out


def _mismatch(name: str, role: str, where: str, shape: Mapping[str, Any], pools: list[_ResourcePool]) -> Diagnostic:
    """The job pool ``where`` matches no resource pool: the differences from the closest one."""
    if not pools:
        return dx.error("persistent-resource-mismatch", f"{role} ({where}) matches no pool of persistent resource "
                        f"{name}: it has no resource pools; nothing was created", where)
    closest = min(pools, key=lambda p: len(_differences(shape, p.shape)))
    diffs = _differences(shape, closest.shape)
    said = "; ".join(f"{field} is {_show(mine)} in the job, {_show(theirs)} in the pool"
                     for field, mine, theirs in diffs)
    listed = "; ".join(f"{p.id}: {_describe(p.shape)}" for p in pools)
    defaults = (f" (a pool that names no boot disk gets {DEFAULT_DISK_TYPE}, or {HYPERDISK_DEFAULT} on "
                f"{' and '.join(sorted(HYPERDISK_DEFAULT_MACHINES))}, of {DEFAULT_DISK_GB} GB)"
                if any(field.startswith("diskSpec.") for field, _, _ in diffs) else "")
    return dx.error("persistent-resource-mismatch",
                    f"{role} ({where}) matches no pool of persistent resource {name}: against its closest pool "
                    f"{closest.id} (resourcePools[{closest.index}]), {said}{defaults}; a job's pools must match "
                    f"one of the resource's pools exactly in machine spec and disk spec (its pools: {listed}); "
                    f"nothing was created", f"{where}.{diffs[0][0]}")


def _too_many(name: str, role: str, where: str, replicas: int, pool: _ResourcePool) -> Diagnostic:
    shared = (f", and the job's {', '.join(pool.takers)} already land on that pool "
              f"({pool.taken + replicas} in all: the job's pools on one resource pool share its machines)"
              if pool.takers else "")
    return dx.error("persistent-resource-replicas",
                    f"{role} ({where}) asks for {replicas} replicas{shared}, but pool {pool.id} "
                    f"(resourcePools[{pool.index}]) of persistent resource {name} has at most {pool.limit} "
                    f"({pool.limit_field}); lower replicaCount or grow the resource; nothing was created",
                    f"{where}.replicaCount")


def _show(value: Any) -> str:
    return value if isinstance(value, str) else repr(value)


def _describe(shape: Mapping[str, Any]) -> str:
    accelerator = shape.get("machineSpec.acceleratorType")
    count = shape.get("machineSpec.acceleratorCount")
    gpu = f" + {count} x {accelerator}" if accelerator else ""
    return (f"{shape.get('machineSpec.machineType', _UNSET)}{gpu}, {shape['diskSpec.bootDiskType']} "
            f"{shape['diskSpec.bootDiskSizeGb']} GB")


def check_placement(session: Session, job: JobDict, *, project: str, region: str) -> ResourceDict | None:
    """Read the persistent resource ``job`` names (None when it names none) and raise
    SpecError (exit 1) when the job cannot run on it; nothing is created either way.
    An in-process emulator (``--target local``) runs the job on this host: the resource is
    not read, and the session's logger says so."""
    resource_id = resource_id_of(job)
    if resource_id is None:
        return None
    path = f"{kind_of_job(job).spec_key}.persistentResourceId"
    if not PERSISTENT_RESOURCE_ID.fullmatch(resource_id):
        raise errors.SpecError([dx.error(
            "persistent-resource-id", f"persistent resource ID {resource_id!r} is not one: 1 to 63 characters, "
            "lowercase letters, digits and hyphens, starting with a letter and not ending with a hyphen "
            f"({PERSISTENT_RESOURCE_ID.pattern}), not a resource path; nothing was created", path)])
    name = resource_name(project, region, resource_id)
    backend = session.api(region)
    if backend.in_process:
        session.log.warning("the job names persistent resource %s: --target local runs it on this host instead "
                            "(the resource is not read)", name)
        return None
    try:
        resource = session.call(lambda: backend.get_persistent_resource(name), f"get persistent resource {name}")
    except errors.NotFoundError as exc:
        raise errors.SpecError([dx.error(
            "persistent-resource-not-found", f"persistent resource {name} does not exist: create it in project "
            f"{project}, region {region} first, or name another; nothing was created", path)]) from exc
    notes: list[str] = []
    problems = placement_problems(job, resource, name=name, notes=notes)
    if problems:
        raise errors.SpecError(problems)
    for note in notes:
        session.log.warning("warning: %s", note)
    return resource
