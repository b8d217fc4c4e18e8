"""The one table of Vertex AI's worker pool slots, and the Reduction Server test.

Vertex AI fixes the meaning of each ``workerPoolSpecs`` position
(https://cloud.google.com/vertex-ai/docs/training/distributed-training#cluster-spec-format):
slot 0 is the primary replica (chief), 1 the workers, 2 the parameter servers
or the Reduction Server, 3 the evaluators. Everything that maps between a
slot, a native role, a TF_CONFIG task type, a CLUSTER_SPEC key or a replica
name reads it from here: the formats, the compiler, the cluster environment,
the local runner and the emulator.

Import-light on purpose (``re`` and ``dataclasses`` only): the runtime helper
:mod:`vxtrain.cluster` imports it inside training containers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Slot:
    """One ``workerPoolSpecs`` position and every name it goes by."""

    index: int
    roles: tuple[str, ...]  # native roles that occupy the slot (slot 2: either one, never both)
    tf_type: str  # TF_CONFIG task type of its replicas
    in_tf_cluster: bool  # evaluators are never in TF_CONFIG's cluster

    @property
    def cluster_key(self) -> str:
        """The key of this pool in CLUSTER_SPEC's ``cluster`` (``workerpool0``…)."""
        return f"workerpool{self.index}"


SLOTS: tuple[Slot, ...] = (
    Slot(0, ("chief",), "chief", True),
    Slot(1, ("workers",), "worker", True),
    Slot(2, ("parameter_servers", "reduction_server"), "ps", True),
    Slot(3, ("evaluators",), "evaluator", False),
)

#: Native roles in pool order.
ROLES: tuple[str, ...] = tuple(role for slot in SLOTS for role in slot.roles)
#: Native role → slot index.
POOL_INDEX: dict[str, int] = {role: slot.index for slot in SLOTS for role in slot.roles}
#: The roles whose replicas train (and take GPUs for all-reduce).
TRAINING_ROLES: tuple[str, ...] = ("chief", "workers")
#: Slot index → TF_CONFIG task type.
TF_TASK_TYPES: dict[int, str] = {slot.index: slot.tf_type for slot in SLOTS}
#: TF_CONFIG task types that appear in its ``cluster``.
TF_CLUSTER_TYPES: tuple[str, ...] = tuple(slot.tf_type for slot in SLOTS if slot.in_tf_cluster)
#: CLUSTER_SPEC key (``workerpoolK``) → TF task type, for reading CLUSTER_SPEC back.
TF_TYPE_BY_CLUSTER_KEY: dict[str, str] = {slot.cluster_key: slot.tf_type for slot in SLOTS}

#: Google's Reduction Server image, per multi-region
#: (https://cloud.google.com/vertex-ai/docs/training/distributed-training#reduction-server).
RS_IMAGE_TEMPLATE = "{}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"

#: A Reduction Server image: Google's, or a copy whose repository is named
#: ``reductionserver`` (a mirror in the user's own registry, which the native
#: format allows through ``reduction_server.image``).
_RS_IMAGE = re.compile(r"(?:^|/)reductionserver(?:[:@]|$)")


def is_reduction_server_image(image: object) -> bool:
    """Whether a pool running ``image`` is a Reduction Server (not a parameter server)."""
    return isinstance(image, str) and bool(_RS_IMAGE.search(image))


def role_of(index: int, image: object = None) -> str:
    """The native role of slot ``index``; slot 2 is told apart by its image."""
    if index == 2:
        return "reduction_server" if is_reduction_server_image(image) else "parameter_servers"
    return SLOTS[index].roles[0]


def replica_name(index: int, replica: int) -> str:
    """Vertex's name of a replica, as in log task names: ``workerpool1-0``."""
    return f"{SLOTS[index].cluster_key}-{replica}"


#: Vertex's name of a replica, ``workerpoolK-I`` (K a slot of :data:`SLOTS`, I its
#: replica), as a regex fragment for patterns that embed it (a runner's ``[workerpool0-0]``
#: prefix). Named groups ``pool`` and ``index``.
REPLICA_PATTERN = rf"workerpool(?P<pool>{'|'.join(str(slot.index) for slot in SLOTS)})-(?P<index>\d+)"
#: :data:`REPLICA_PATTERN` compiled: ``fullmatch`` a name, ``search`` one in a message.
REPLICA_NAME = re.compile(REPLICA_PATTERN)
#: A replica as ``vxtrain env --replica`` takes it: ``workerpoolK`` or a native role, then
#: ``:``, ``-`` or ``/``, then the replica's index. Any K: the caller names the pools a job has.
#: Compiled on first use (re's own cache): only ``env --replica`` reads it.
_REPLICA_REF = r"\s*(?:workerpool(?P<pool>\d+)|(?P<role>[a-z_]+))\s*[:\-/](?P<index>\d+)\s*"


def parse_replica(text: str, *, loose: bool = False) -> tuple[int, int] | None:
    """(pool index, replica index) of a replica's name, or None when ``text`` is not one.

    Strict: Vertex's ``workerpoolK-I`` with K a slot. ``loose`` also takes
    ``workerpoolK:I`` (any K), ``workerpoolK/I`` and ``ROLE:I`` with a native role
    (``workers:0`` is ``(1, 0)``), with spaces around it and before the separator.
    """
    if not loose:
        found = REPLICA_NAME.fullmatch(text)
        return (int(found.group("pool")), int(found.group("index"))) if found else None
    ref = re.fullmatch(_REPLICA_REF, text)
    if ref is None:
        return None
    role = ref.group("role")
    if role is not None and role not in POOL_INDEX:
        return None
    pool = POOL_INDEX[role] if role is not None else int(ref.group("pool"))
    return pool, int(ref.group("index"))
