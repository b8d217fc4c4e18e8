"""Machine types: their Compute Engine shapes, the GPUs built into accelerator-optimized
types, and which types Vertex AI training offers (with near misses for typos).

Data: ``machines.csv``, ``gpu_machines.csv``, ``training_machines.csv``.
"""
from __future__ import annotations

import difflib
import functools
import math
import re
from dataclasses import dataclass

from vxtrain.catalog.spelling import distance, normalize, within
from vxtrain.catalog.tables import number, rows

#: TPU VM machine types: Vertex AI's TPU section of configure-compute.
TPU_TYPES = re.compile(r"^(cloud-tpu|ct\d|tpu)")
_DIGITS = re.compile(r"\d+")


@dataclass(frozen=True)
class Machine:
    """One machine type; ``egress_gbps`` is its default per-VM egress cap (None: not published)."""

    name: str
    vcpu: int
    memory_gb: float
    egress_gbps: float | None
    confidence: str
    source: str


@dataclass(frozen=True)
class MachineTables:
    """The loaded machine data: shapes, built-in GPUs and Vertex AI training's list."""

    machines: dict[str, Machine]
    fixed_gpus: dict[str, dict[str, tuple[int, ...]]]
    offered: frozenset[str]
    offered_as_of: str
    by_series: dict[str, tuple[str, ...]]


def _load_machines() -> dict[str, Machine]:
    return {
        r["name"]: Machine(r["name"], int(r["vcpu"]), float(r["memory_gb"]),
                           number(r["egress_gbps"]), r["confidence"], r["source"])
        for r in rows("machines.csv")
    }


def _load_fixed_gpus() -> dict[str, dict[str, tuple[int, ...]]]:
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for r in rows("gpu_machines.csv"):
        counts = out.setdefault(r["machine_type"], {}).get(r["accelerator"], ())
        out[r["machine_type"]][r["accelerator"]] = (*counts, int(r["count"]))
    return out


def series(name: str) -> str:
    """``n1-standard-8`` → ``n1`` (the machine series, before the first dash)."""
    return name.split("-", 1)[0]


def _series_index(names: list[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(series(name), []).append(name)
    return {k: tuple(v) for k, v in out.items()}


@functools.cache
def tables() -> MachineTables:
    """The machine data, loaded once (every lookup after that is a dict hit)."""
    training = list(rows("training_machines.csv"))
    offered = frozenset(r["name"] for r in training if r["offered"] == "yes")
    return MachineTables(machines=_load_machines(), fixed_gpus=_load_fixed_gpus(), offered=offered,
                         offered_as_of=max(r["as_of"] for r in training),
                         by_series=_series_index(sorted(offered)))


def machine(name: str) -> Machine | None:
    """The catalog entry of machine type ``name``, or None when it is not in the catalog."""
    return tables().machines.get(name)


def machine_types() -> list[str]:
    """Every machine type with Compute Engine facts in the catalog, sorted (offered or not)."""
    return sorted(tables().machines)


def offered(machine_type: str) -> bool:
    """True when Vertex AI training offers ``machine_type`` (training_machines.csv)."""
    return machine_type in tables().offered


def training_machine_types() -> list[str]:
    """The machine types Vertex AI training offers, sorted."""
    return sorted(tables().offered)


def training_list_as_of() -> str:
    """The date the training machine list was transcribed (its rows' ``as_of``)."""
    return tables().offered_as_of


def builtin_accelerator(machine_type: str) -> tuple[str, int] | None:
    """The GPUs built into an accelerator-optimized type (A2/A3/G2), e.g. ``("NVIDIA_L4", 1)``."""
    fixed = tables().fixed_gpus.get(machine_type)
    if not fixed:
        return None
    acc, counts = next(iter(fixed.items()))
    return acc, counts[0]


# --- near misses -------------------------------------------------------------

def near_miss(name: str) -> str | None:
    """The offered type ``name`` is probably a typo of (``n1-standrad-8`` → ``n1-standard-8``).

    Only an offered type of the same series with the same numbers counts, at most
    two edits away (after folding case and ``_``/spaces to ``-``): a new series
    such as ``a4-highgpu-8g`` is *not* a near miss of ``a3-highgpu-8g``, it is
    a type the catalog does not know yet. None when nothing is that close.
    """
    norm = normalize(name)
    if norm in tables().offered:
        return norm if norm != name else None
    digits = _DIGITS.findall(norm)
    best: tuple[int, str] | None = None
    for cand in tables().by_series.get(series(norm), ()):
        if _DIGITS.findall(cand) != digits or not within(norm, cand, 2):
            continue
        d = distance(norm, cand)
        if d <= 2 and (best is None or d < best[0]):
            best = (d, cand)
    return best[1] if best else None


def nearest_offered(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` offered types closest to ``name`` (e.g. ``c3-standard-8`` → n1/n2/n4-standard-8).

    A type with built-in GPUs gets offered types with the same GPU first
    (``a3-edgegpu-8g`` → ``a3-highgpu-8g``); a type with a known shape gets
    offered types of the same kind (standard/highmem/highcpu) and the nearest
    vCPU and memory; anything else the offered names that look most alike.
    """
    norm = normalize(name)
    cat = tables()
    gpus = cat.fixed_gpus.get(norm)
    if gpus:
        acc, counts = next(iter(gpus.items()))
        same = [t for t in sorted(cat.offered) if acc in cat.fixed_gpus.get(t, {})]
        same.sort(key=lambda t: (abs(cat.fixed_gpus[t][acc][0] - counts[0]), distance(norm, t)))
        if same:
            return same[:n]
    m = cat.machines.get(norm)
    if m is not None:
        return sorted(_plain_offered(), key=lambda t: _shape_distance(m, cat.machines[t]))[:n]
    return difflib.get_close_matches(norm, sorted(cat.offered), n=n, cutoff=0.5)


@functools.cache
def _plain_offered() -> tuple[str, ...]:
    """Offered types with a known shape and no built-in accelerators: what a CPU or N1 job can move to."""
    cat = tables()
    return tuple(sorted(t for t in cat.offered if t in cat.machines and t not in cat.fixed_gpus
                        and not TPU_TYPES.match(t)))


def _shape_distance(a: Machine, b: Machine) -> tuple[bool, bool, float]:
    """Order by: same kind (standard/highmem/...) first, then same series, then vCPU/memory ratio."""
    kind = a.name.split("-")[1:2] != b.name.split("-")[1:2]
    ratio = abs(math.log(max(a.vcpu, 1) / max(b.vcpu, 1))) + abs(math.log(a.memory_gb / b.memory_gb))
    return kind, series(a.name) != series(b.name), round(ratio, 6)
