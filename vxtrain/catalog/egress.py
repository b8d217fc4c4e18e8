"""Per-node egress bandwidth: a machine's default cap, or the N1 × GPU table.

Data: ``n1_gpu_egress.csv`` (with the machine shapes of :mod:`vxtrain.catalog.machines`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from vxtrain.catalog.machines import machine
from vxtrain.catalog.tables import number, rows

_UNKNOWN = "unknown"


@dataclass(frozen=True)
class Egress:
    """Per-node egress bandwidth and how sure the catalog is of it ('unknown' when gbps is None)."""

    gbps: float | None
    confidence: str
    source: str


@functools.cache
def _n1_egress() -> dict[tuple[str, str, int], Egress]:
    return {(r["machine_type"], r["accelerator"], int(r["count"])):
            Egress(number(r["egress_gbps"]), r["confidence"], r["source"])
            for r in rows("n1_gpu_egress.csv")}


def node_egress(machine_type: str, accelerator_type: str | None = None,
                accelerator_count: int = 0) -> Egress:
    """Per-node egress cap of a machine, GPU-aware.

    N1 with GPUs: the N1 × GPU table (T4/V100 rows unverified except Google's
    n1-highmem-96 + 8 × V100 = 100 Gbps example; P100/P4 capped at 32).
    Everything else: the machine's default cap. Unknown: ``Egress(None, 'unknown', '')``.
    """
    if accelerator_type and accelerator_count:
        combo = _n1_egress().get((machine_type, accelerator_type, accelerator_count))
        if combo is not None:
            return combo
    m = machine(machine_type)
    if m is None:
        return Egress(None, _UNKNOWN, "")
    if m.egress_gbps is None:
        return Egress(None, _UNKNOWN, m.source)
    return Egress(m.egress_gbps, m.confidence, m.source)
