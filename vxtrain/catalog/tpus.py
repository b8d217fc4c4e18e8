"""TPU machine types: their TPU generation, the slice sizes each takes (topologies,
or cloud-tpu's accelerator counts), how many hosts a size spans, and the
region_accelerators.csv key that says where it trains.

Data: ``tpu_machines.csv`` (configure-compute's TPU section; its header says how
the rows were read).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

from vxtrain.catalog.tables import rows


@dataclass(frozen=True)
class TpuSize:
    """One allowed size of a TPU machine: a topology (TPU VMs) or an accelerator count (cloud-tpu).

    ``count_step``: when set, ``accelerator_count`` and every step above it
    (cloud-tpu pods: 32, 64, 96, …). ``hosts`` None: not published (a pod).
    """

    topology: str | None
    chips: int | None
    hosts: int | None
    accelerator_type: str | None
    accelerator_count: int | None
    count_step: int | None
    region_key: str
    confidence: str
    source: str

    @property
    def multi_host(self) -> bool:
        """More than one host, or a pod whose host count is not published (a TPU Pod, for Spot)."""
        return self.hosts is None or self.hosts > 1

    def takes_count(self, count: int) -> bool:
        """Whether ``count`` is this size's accelerator count (or one of its steps)."""
        if self.accelerator_count is None:
            return False
        if self.count_step is None:
            return count == self.accelerator_count
        return count >= self.accelerator_count and (count - self.accelerator_count) % self.count_step == 0

    def describe(self) -> str:
        """``2x4 (8 chips, 2 hosts)``, ``8 (one TPU)`` or ``32, 64, 96, … (a TPU Pod)``."""
        if self.topology is not None:
            chips = "1 chip" if self.chips == 1 else f"{self.chips} chips"
            return f"{self.topology} ({chips}, {self.hosts} {'host' if self.hosts == 1 else 'hosts'})"
        first = self.accelerator_count or 0
        what = "a TPU Pod" if self.multi_host else "one TPU"
        if self.count_step is None:
            return f"{first} ({what})"
        step = self.count_step
        return f"{first}, {first + step}, {first + 2 * step}, … ({what})"


@dataclass(frozen=True)
class TpuMachine:
    """A TPU machine type and the sizes Vertex AI training takes on it (``generation``: "TPU v5e";
    "TPU v2 / TPU v3" for cloud-tpu)."""

    machine_type: str
    generation: str
    sizes: tuple[TpuSize, ...] = field(default_factory=tuple)

    @property
    def needs_topology(self) -> bool:
        """TPU VM slices (ct5lp/ct6e/tpu7x) are sized by ``tpuTopology``; cloud-tpu by its accelerator count."""
        return any(s.topology is not None for s in self.sizes)

    @property
    def topologies(self) -> tuple[str, ...]:
        """The documented topologies, smallest first."""
        return tuple(s.topology for s in self.sizes if s.topology is not None)

    @property
    def accelerator_types(self) -> tuple[str, ...]:
        """The AcceleratorType values that name this machine's chips (none for v6e/7x)."""
        return tuple(dict.fromkeys(s.accelerator_type for s in self.sizes if s.accelerator_type))

    def topology(self, name: str) -> TpuSize | None:
        """The size of topology ``name`` (None: not documented for this machine type)."""
        return next((s for s in self.sizes if s.topology == name), None)

    def count_size(self, accelerator_type: str, count: int) -> TpuSize | None:
        """The size ``count`` × ``accelerator_type`` is (cloud-tpu), None when not allowed."""
        return next((s for s in self.sizes if s.accelerator_type == accelerator_type and s.takes_count(count)),
                    None)

    def counts(self, accelerator_type: str) -> tuple[TpuSize, ...]:
        """The count sizes of ``accelerator_type`` (cloud-tpu)."""
        return tuple(s for s in self.sizes if s.accelerator_type == accelerator_type and s.accelerator_count)


def _int(text: str) -> int | None:
    return int(text) if text else None


@functools.cache
def _tpu_machines() -> dict[str, TpuMachine]:
    sizes: dict[str, list[TpuSize]] = {}
    generations: dict[str, dict[str, None]] = {}
    for r in rows("tpu_machines.csv"):
        generations.setdefault(r["machine_type"], {})[r["generation"]] = None
        sizes.setdefault(r["machine_type"], []).append(TpuSize(
            r["topology"] or None, _int(r["chips"]), _int(r["hosts"]), r["accelerator_type"] or None,
            _int(r["accelerator_count"]), _int(r["count_step"]), r["region_key"], r["confidence"], r["source"]))
    # cloud-tpu carries two generations (TPU v2 / TPU v3), chosen by its accelerator type.
    return {mt: TpuMachine(mt, " / ".join(generations[mt]), tuple(s)) for mt, s in sizes.items()}


def tpu_machine(machine_type: str | None) -> TpuMachine | None:
    """The TPU machine type ``machine_type`` (None: not a TPU machine Vertex AI training lists)."""
    return _tpu_machines().get(machine_type or "")


def is_tpu(machine_type: str | None) -> bool:
    """True for the TPU machine types of tpu_machines.csv (cloud-tpu, ct5lp-*, ct6e-*, tpu7x-*)."""
    return tpu_machine(machine_type) is not None


def tpu_machine_types() -> list[str]:
    """The TPU machine types tpu_machines.csv has rules for, sorted."""
    return sorted(_tpu_machines())


def tpu_machines() -> list[TpuMachine]:
    """Every TPU machine type of tpu_machines.csv, sorted by name."""
    return [m for _, m in sorted(_tpu_machines().items())]


def tpu_accelerator_types() -> frozenset[str]:
    """Every AcceleratorType that names a TPU chip in the catalog (TPU_V2, TPU_V3, TPU_V5_LITEPOD)."""
    return frozenset(a for m in _tpu_machines().values() for a in m.accelerator_types)


def tpu_size(machine_type: str | None, topology: str | None, accelerator_type: str | None,
             count: int | None) -> TpuSize | None:
    """The slice a pool asks for: by topology (TPU VMs) or by accelerator count (cloud-tpu); None if not allowed."""
    m = tpu_machine(machine_type)
    if m is None:
        return None
    if m.needs_topology:
        return m.topology(topology) if topology else None
    if accelerator_type is None or count is None:
        return None
    return m.count_size(accelerator_type, count)


def tpu_region_key(machine_type: str | None, accelerator_type: str | None, count: int | None) -> str | None:
    """The region_accelerators.csv key of a TPU pool, whether or not it names an accelerator type.

    TPU VMs (ct5lp/ct6e/tpu7x) are keyed by their machine type; cloud-tpu by its
    TPU type, a pod (32 cores or more) apart from a single TPU. None: not a TPU
    machine, or a cloud-tpu pool without a TPU type (the TPU rules report it).
    """
    m = tpu_machine(machine_type)
    if m is None:
        return None
    if m.needs_topology:
        return m.sizes[0].region_key
    counts = m.counts(accelerator_type or "")
    if not counts:
        return None
    pods = [s for s in counts if s.multi_host]
    if pods and (count or 0) >= min(s.accelerator_count or 0 for s in pods):
        return pods[0].region_key
    return next((s.region_key for s in counts if not s.multi_host), counts[0].region_key)
