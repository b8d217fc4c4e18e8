"""How a job's machines talk: each machine type's GPU network (GPUDirect-RDMA, GPUDirect-TCPXO
or plain TCP), the accelerators Vertex AI does not peer with a VPC network, and the MIG
partition sizes of each GPU.

Data: ``gpu_networks.csv`` (configure-compute's machine list and RDMA note),
``vpc_peering.csv`` (using-private-ip's note) and ``gpu_partitions.csv`` (NVIDIA's MIG
user guide and profiles: which GPUs partition and into which sizes). A machine type's built-in GPUs come from
``gpu_machines.csv`` (:func:`vxtrain.catalog.machines.builtin_accelerator`).
"""
from __future__ import annotations

import functools
from typing import NamedTuple

from vxtrain.catalog.tables import rows

#: The GPU networks the plan names: GPUDirect over RDMA (A3 Ultra, A4, A4X), GPUDirect-TCPXO
#: (A3 Mega), and NCCL over the VM's TCP network (every other machine).
GPUDIRECT_RDMA = "gpudirect-rdma"
GPUDIRECT_TCPXO = "gpudirect-tcpxo"
TCP = "tcp"
#: The line configure-compute asks RDMA jobs to begin with: "When using RDMA, add `source
#: /usr/local/gib/scripts/set_nccl_env.sh` to the beginning of the training command".
NCCL_ENV_SCRIPT = "/usr/local/gib/scripts/set_nccl_env.sh"
NCCL_ENV_LINE = f"source {NCCL_ENV_SCRIPT}"
#: Where a machine type with no row gets ``tcp`` from: the page that names GPUDirect for the others.
_DEFAULT_SOURCE = ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
                   "configure-compute#machine-types")


# NamedTuples, not dataclasses: this module is on validate's path, and a frozen dataclass
# costs several times more to define (python -X importtime).
class GpuNetwork(NamedTuple):
    """One machine type's GPU network, with the row's confidence and source."""

    machine_type: str
    network: str
    confidence: str
    source: str


class GpuPartitions(NamedTuple):
    """The MIG partition sizes of one accelerator (empty: the GPU has no MIG), and the source of the rows."""

    accelerator: str
    sizes: tuple[str, ...]
    source: str


class VpcPeering(NamedTuple):
    """One row of vpc_peering.csv: an accelerator whose jobs Vertex AI does not peer with a VPC."""

    accelerator: str
    source: str


@functools.cache
def _networks() -> dict[str, GpuNetwork]:
    return {r["machine_type"]: GpuNetwork(r["machine_type"], r["gpu_network"], r["confidence"], r["source"])
            for r in rows("gpu_networks.csv")}


@functools.cache
def _no_peering() -> dict[str, VpcPeering]:
    return {r["accelerator"]: VpcPeering(r["accelerator"], r["source"])
            for r in rows("vpc_peering.csv") if r["vpc_peering"] == "no"}


#: The ``partition_size`` of a GPU that has no MIG at all.
NO_MIG = "none"


@functools.cache
def _partitions() -> dict[str, GpuPartitions]:
    sizes: dict[str, list[str]] = {}
    sources: dict[str, str] = {}
    for r in rows("gpu_partitions.csv"):
        found = sizes.setdefault(r["accelerator"], [])
        if r["partition_size"] != NO_MIG:
            found.append(r["partition_size"])
        sources.setdefault(r["accelerator"], r["source"])
    return {acc: GpuPartitions(acc, tuple(found), sources[acc]) for acc, found in sizes.items()}


def gpu_network(machine_type: str) -> GpuNetwork:
    """The GPU network of ``machine_type``: its row, else ``tcp`` (``derived``: no GPUDirect is named for it)."""
    return _networks().get(machine_type) or GpuNetwork(machine_type, TCP, "derived", _DEFAULT_SOURCE)


def rdma_machine_types() -> tuple[str, ...]:
    """The machine types whose GPUs talk over GPUDirect-RDMA, in the table's order."""
    return tuple(name for name, row in _networks().items() if row.network == GPUDIRECT_RDMA)


def vpc_peering_refused(accelerator_type: str) -> VpcPeering | None:
    """The using-private-ip row when Vertex AI does not peer jobs on ``accelerator_type`` (else None)."""
    return _no_peering().get(accelerator_type)


def gpu_partitions(accelerator_type: str) -> GpuPartitions | None:
    """The MIG partition sizes of ``accelerator_type`` (``sizes`` empty: it has no MIG); None
    when the table has no row for it (a GPU newer than the table)."""
    return _partitions().get(accelerator_type)
