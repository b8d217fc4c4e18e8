"""Request validation: what Vertex AI refuses in a request, in Vertex's wording.

A create request whose job breaks Vertex's rules is answered INVALID_ARGUMENT
with Vertex's "List of found errors: 1.Field: ...; Message: ..." text, so a
client (and its user) sees what the real service would say.

The rules are vxtrain's own, from its catalog, so the emulator is never looser than
validation (a job it takes is one Vertex AI takes): the location must be a Vertex AI
location (catalog regions.csv), each machine type one Vertex AI training offers
(training_machines.csv), and a job has at most the four worker pools Vertex AI takes
(vxtrain.slots). Their wording is paraphrased: the service's own text is unverified.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hpt

from vxtrain import catalog, slots
from vxtrain.backends.emulator.common import RpcError, spec_of
from vxtrain.catalog import networking
from vxtrain.vocab.kinds import TUNING, JobKind

#: The most worker pools a job has: one per slot (chief, workers, parameter servers or
#: Reduction Server, evaluators; https://cloud.google.com/vertex-ai/docs/training/distributed-training).
MAX_POOLS = len(slots.SLOTS)
_LOCATIONS_DOC = "https://cloud.google.com/vertex-ai/docs/general/locations"
_MACHINES_DOC = "https://cloud.google.com/vertex-ai/docs/training/configure-compute"

_PARENT = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)$")


def _is_empty(pool: cj.WorkerPoolSpec) -> bool:
    """``{}`` in workerPoolSpecs: a slot left empty on purpose."""
    size: int = cj.WorkerPoolSpec.pb(pool).ByteSize()
    return size == 0


def parse_parent(parent: str) -> tuple[str, str]:
    """``projects/P/locations/L`` → (P, L); anything else is INVALID_ARGUMENT."""
    m = _PARENT.match(parent or "")
    if not m:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid parent {parent!r}: expected projects/{{project}}/locations/{{location}}.")
    return m.group("project"), m.group("location")


def pool_problems(pools: Sequence[cj.WorkerPoolSpec], prefix: str) -> list[tuple[str, str]]:
    """(field, message) for each way ``pools`` breaks Vertex's rules.

    https://cloud.google.com/vertex-ai/docs/training/distributed-training :
    the first pool runs the primary replica, so its replicaCount is exactly 1.
    The "Required field is not set." and accelerator wordings are Vertex's;
    the replica-count and task wordings are paraphrased.
    """
    if not pools:
        return [(f"{prefix}.worker_pool_specs", "Required field is not set.")]
    if len(pools) > MAX_POOLS:  # each pool past the fourth would be a problem of its own: one is said
        return [(f"{prefix}.worker_pool_specs", f"At most {MAX_POOLS} worker pool specs are allowed (chief, workers, "
                 f"parameter servers or Reduction Server, evaluators), got {len(pools)}.")]
    if _is_empty(pools[0]):
        return [(f"{prefix}.worker_pool_specs[0]",
                 "The first worker pool (the primary replica) must be specified; it cannot be empty.")]
    out = []
    if pools[0].replica_count != 1:
        out.append((f"{prefix}.worker_pool_specs[0].replica_count",
                    f"The replica count of the first worker pool (the primary replica) must be 1, "
                    f"got {pools[0].replica_count}."))
    for i, pool in enumerate(pools):
        if not _is_empty(pool):
            out += _one_pool_problems(pool, f"{prefix}.worker_pool_specs[{i}]")
    return out


def machine_spec_problems(machine: Any, where: str) -> list[tuple[str, str]]:
    """A MachineSpec's problems in the service's words: no machine type, or an accelerator
    type without a count (or the reverse). Worker pools and persistent resources' pools alike."""
    out = []
    if not machine.machine_type:
        out.append((f"{where}.machine_spec.machine_type", "Required field is not set."))
    has_type = machine.accelerator_type.name != "ACCELERATOR_TYPE_UNSPECIFIED"
    if has_type != (machine.accelerator_count > 0):
        out.append((f"{where}.machine_spec.accelerator_type",
                    "Both `accelerator_type` and `accelerator_count` should be specified or none."))
    return out


def _one_pool_problems(pool: cj.WorkerPoolSpec, where: str) -> list[tuple[str, str]]:
    out = machine_spec_problems(pool.machine_spec, where)
    machine = pool.machine_spec.machine_type
    if machine and not catalog.offered(machine):
        out.append((f"{where}.machine_spec.machine_type",
                    f"Machine type {machine!r} is not supported for custom training ({_MACHINES_DOC}; "
                    f"the list as of {catalog.training_list_as_of()})."))
    if "container_spec" not in pool and "python_package_spec" not in pool:
        out.append((f"{where}.task", "Either container_spec or python_package_spec must be set."))
    elif "container_spec" in pool and not pool.container_spec.image_uri:
        out.append((f"{where}.container_spec.image_uri", "Required field is not set."))
    elif "python_package_spec" in pool and not pool.python_package_spec.python_module:
        out.append((f"{where}.python_package_spec.python_module", "Required field is not set."))
    return out


def location_problems(location: str) -> list[tuple[str, str]]:
    """A create's location that is not a Vertex AI location (one the locations page lists
    without custom training is taken: validation only warns of it)."""
    if catalog.region(location) is not None:
        return []
    return [("parent", f"Location {location!r} is not a Vertex AI location; training locations: "
             f"{', '.join(catalog.training_regions())} ({_LOCATIONS_DOC}).")]


def job_problems(kind: JobKind, job: Any, location: str) -> list[tuple[str, str]]:
    """Everything Vertex would refuse in a create request's job, created in ``location``."""
    out = location_problems(location)
    if not job.display_name:
        out.append(("display_name", "Required field is not set."))
    out += pool_problems(list(spec_of(job).worker_pool_specs), kind.spec_field)
    out += _peering_problems(spec_of(job), kind.spec_field)
    if kind is TUNING:
        out += _study_problems(job)
    return out


def _peering_problems(spec: cj.CustomJobSpec, prefix: str) -> list[tuple[str, str]]:
    """VPC peering (``network``) on accelerators Vertex AI does not peer: using-private-ip, "Vertex
    AI Training doesn't support VPC Peering with H100-mega, H200 and B200 accelerators"
    (https://cloud.google.com/vertex-ai/docs/training/using-private-ip). The accelerators are
    validation's (catalog.networking, vpc_peering.csv); the message is the page's words, the
    service's own refusal text being unverified."""
    if not spec.network:
        return []
    refused = [acc for pool in spec.worker_pool_specs if not _is_empty(pool)
               for acc in [_accelerator(pool.machine_spec)] if acc and networking.vpc_peering_refused(acc)]
    if not refused:
        return []
    return [(f"{prefix}.network", "Vertex AI Training doesn't support VPC Peering with H100-mega, H200 and B200 "
             f"accelerators ({', '.join(dict.fromkeys(refused))}). A network attachment with PSC-I can be "
             "used as an alternative for VPC Peering.")]


def _accelerator(machine: Any) -> str | None:
    """A pool's accelerator type: as sent, else the GPUs built into its machine type."""
    if machine.accelerator_type.name != "ACCELERATOR_TYPE_UNSPECIFIED":
        return str(machine.accelerator_type.name)
    builtin = catalog.builtin_accelerator(machine.machine_type)
    return builtin[0] if builtin else None


def _study_problems(job: hpt.HyperparameterTuningJob) -> list[tuple[str, str]]:
    out = []
    if not job.study_spec.metrics:
        out.append(("study_spec.metrics", "Required field is not set."))
    if not job.study_spec.parameters:
        out.append(("study_spec.parameters", "Required field is not set."))
    if job.max_trial_count <= 0:
        out.append(("max_trial_count", "Required field is not set."))
    return out


def invalid_argument(problems: Sequence[tuple[str, str]]) -> RpcError:
    """Vertex's wording for a list of field errors (as seen in prefect-gcp#175)."""
    listed = "\t".join(f"{i}.Field: {f}; Message: {m}" for i, (f, m) in enumerate(problems, 1))
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"List of found errors:\t{listed}\t")



def check_name(kind: JobKind, name: str) -> None:
    """A job name must be ``projects/P/locations/L/{collection}/ID``; anything else is INVALID_ARGUMENT."""
    pattern = rf"^projects/[^/]+/locations/[^/]+/{kind.collection}/\d+$"
    if not re.match(pattern, name or ""):
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid {kind.label} name {name!r}: expected "
                       f"projects/{{project}}/locations/{{location}}/{kind.collection}/{{id}}.")
