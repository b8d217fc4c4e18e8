"""Accelerators: the AcceleratorType names, which ones Vertex AI training offers, and
which GPU types and counts each offered machine type takes.

Data: ``accelerators.csv``, ``training_accelerators.csv``, ``n1_gpu_limits.csv``
(with the machine data of :mod:`vxtrain.catalog.machines`). Nothing here imports
google.cloud.aiplatform: the enum is read from the installed package's source
text (:mod:`vxtrain.protos`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from vxtrain import protos
from vxtrain.catalog.machines import TPU_TYPES, Machine, tables as machine_tables
from vxtrain.catalog.tables import rows

_N1_PREFIX = "n1-"


@dataclass(frozen=True)
class _Accelerators:
    names: tuple[str, ...]
    deprecated: frozenset[str]
    training: frozenset[str]
    n1_limits: dict[tuple[str, int], tuple[int, float]]
    allowed: dict[str, dict[str, tuple[int, ...]]]


def _n1_allowed(m: Machine, limits: dict[tuple[str, int], tuple[int, float]]) -> dict[str, tuple[int, ...]]:
    """GPU type → counts an N1 machine of this size can take (Compute Engine GPU limits)."""
    out: dict[str, tuple[int, ...]] = {}
    for (acc, count), (max_vcpu, max_mem) in sorted(limits.items()):
        if m.vcpu <= max_vcpu and m.memory_gb <= max_mem:
            out[acc] = (*out.get(acc, ()), count)
    return out


def _allowed_map(limits: dict[tuple[str, int], tuple[int, float]]) -> dict[str, dict[str, tuple[int, ...]]]:
    """Accelerators of every offered type whose accelerators are tabulated.

    Types Vertex AI training does not offer take nothing (they are refused
    first); TPU VM types (cloud-tpu, ct5lp/ct6e/tpu7x) are left out: their
    accelerator counts and topologies are not tabulated here.
    """
    cat = machine_tables()
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for name in cat.offered:
        m = cat.machines.get(name)
        if name in cat.fixed_gpus:
            out[name] = cat.fixed_gpus[name]
        elif m is not None and name.startswith(_N1_PREFIX):
            out[name] = _n1_allowed(m, limits)
        elif m is not None and not TPU_TYPES.match(name):
            out[name] = {}
    return out


@functools.cache
def _accelerators() -> _Accelerators:
    accs = list(rows("accelerators.csv"))
    limits = {(r["accelerator"], int(r["count"])): (int(r["max_vcpu"]), float(r["max_memory_gb"]))
              for r in rows("n1_gpu_limits.csv")}
    return _Accelerators(
        names=tuple(r["name"] for r in accs),
        deprecated=frozenset(r["name"] for r in accs if r["deprecated"] == "yes"),
        training=frozenset(r["name"] for r in rows("training_accelerators.csv") if r["training"] == "yes"),
        n1_limits=limits,
        allowed=_allowed_map(limits),
    )


def _read_installed_enum() -> list[str] | None:
    """AcceleratorType names from the installed aiplatform_v1 source, without importing it."""
    values = protos.enum_values("accelerator_type", "AcceleratorType") or {}
    return [n for n in values if not n.endswith("_UNSPECIFIED")] or None


@functools.cache
def _accelerator_types() -> tuple[str, ...]:
    return tuple(_read_installed_enum() or _accelerators().names)


def accelerator_types() -> list[str]:
    """Accelerator types the installed google-cloud-aiplatform knows (UNSPECIFIED excluded).

    Read from the package's source text so new GPUs appear without a vxtrain
    release and ``validate`` never imports the heavy client library; falls back
    to the catalog's own list when the package is not installed.
    """
    return list(_accelerator_types())


def catalog_accelerators() -> list[str]:
    """The accelerator types listed in the catalog data (accelerators.csv)."""
    return list(_accelerators().names)


def training_accelerator(accelerator_type: str) -> bool:
    """True when Vertex AI training offers ``accelerator_type`` (training_accelerators.csv; not K80)."""
    return accelerator_type in _accelerators().training


def deprecated_accelerator(accelerator_type: str) -> bool:
    """True for accelerator types at end of support (K80: compute/docs/eol/k80-eol)."""
    return accelerator_type in _accelerators().deprecated


def allowed_accelerators(machine_type: str) -> dict[str, tuple[int, ...]] | None:
    """Accelerator type → allowed counts on ``machine_type``.

    None when the machine is not offered for training, or its accelerators are
    not tabulated (TPU VM types); ``{}`` when it takes no accelerators. N1
    takes V100/T4/P4/P100 within Vertex AI's N1 GPU vCPU/memory limits
    (n1_gpu_limits.csv); A2/A3/A4/G2/G4 come with a fixed GPU type and count.
    """
    allowed = _accelerators().allowed.get(machine_type)
    return None if allowed is None else dict(allowed)


def n1_gpu_limits(accelerator_type: str, count: int) -> tuple[int, float] | None:
    """(max vCPU, max memory GB) of an N1 machine with ``count`` GPUs of that type; None if not offered."""
    return _accelerators().n1_limits.get((accelerator_type, count))


def n1_gpu_counts(accelerator_type: str) -> tuple[int, ...]:
    """GPU counts N1 offers for ``accelerator_type`` (empty: not an N1 GPU)."""
    return tuple(sorted(c for a, c in _accelerators().n1_limits if a == accelerator_type))
