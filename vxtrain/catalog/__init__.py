"""The machine catalog: what Vertex AI training offers (machine types,
accelerators, regions) and the Compute Engine facts behind them (vCPU, memory,
GPUs, bandwidth).

The facts are data (``*.csv`` beside this file, each row with a ``source`` URL
and a ``confidence`` of documented | derived | unverified; README.md says how
they were derived). This module only loads them, once and lazily, into dicts,
so every lookup is a dict hit (``validate`` runs thousands of specs a second).

Nothing here imports google.cloud.aiplatform: the accelerator enum is read
from the installed package's source text (:mod:`vxtrain.protos`, see
``accelerator_types``).
"""
from __future__ import annotations

import csv
import difflib
import functools
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from vxtrain import protos, slots

_HERE = Path(__file__).resolve().parent
_N1_PREFIX = "n1-"
_UNKNOWN = "unknown"

#: Vertex AI's images (prebuilt training containers, the Reduction Server) live in
#: one Artifact Registry multi-region per continent; regions elsewhere use ``us``:
#: https://cloud.google.com/vertex-ai/docs/training/pre-built-containers
_MULTI_REGIONS = (
    (("europe-", "me-", "africa-"), "europe"),
    (("asia-", "australia-"), "asia"),
)


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
class Egress:
    """Per-node egress bandwidth and how sure the catalog is of it ('unknown' when gbps is None)."""

    gbps: float | None
    confidence: str
    source: str


@dataclass(frozen=True)
class _Catalog:
    machines: dict[str, Machine]
    fixed_gpus: dict[str, dict[str, tuple[int, ...]]]
    n1_limits: dict[tuple[str, int], tuple[int, float]]
    n1_egress: dict[tuple[str, str, int], Egress]
    accelerators: tuple[str, ...]
    deprecated: frozenset[str]
    allowed: dict[str, dict[str, tuple[int, ...]]]
    by_series: dict[str, tuple[str, ...]]
    offered: frozenset[str]
    offered_as_of: str
    training_accelerators: frozenset[str]


def _rows(name: str) -> Iterator[dict[str, str]]:
    """Rows of a catalog CSV; lines starting with '#' are comments."""
    with open(_HERE / name, newline="", encoding="utf-8") as f:
        yield from csv.DictReader(line for line in f if not line.startswith("#"))


def _gbps(text: str) -> float | None:
    return float(text) if text else None


def _load_machines() -> dict[str, Machine]:
    return {
        r["name"]: Machine(r["name"], int(r["vcpu"]), float(r["memory_gb"]),
                           _gbps(r["egress_gbps"]), r["confidence"], r["source"])
        for r in _rows("machines.csv")
    }


def _load_fixed_gpus() -> dict[str, dict[str, tuple[int, ...]]]:
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for r in _rows("gpu_machines.csv"):
        counts = out.setdefault(r["machine_type"], {}).get(r["accelerator"], ())
        out[r["machine_type"]][r["accelerator"]] = (*counts, int(r["count"]))
    return out


def _load_n1_limits() -> dict[tuple[str, int], tuple[int, float]]:
    return {(r["accelerator"], int(r["count"])): (int(r["max_vcpu"]), float(r["max_memory_gb"]))
            for r in _rows("n1_gpu_limits.csv")}


def _load_n1_egress() -> dict[tuple[str, str, int], Egress]:
    return {(r["machine_type"], r["accelerator"], int(r["count"])):
            Egress(_gbps(r["egress_gbps"]), r["confidence"], r["source"])
            for r in _rows("n1_gpu_egress.csv")}


def _n1_allowed(m: Machine, limits: dict[tuple[str, int], tuple[int, float]]) -> dict[str, tuple[int, ...]]:
    """GPU type → counts an N1 machine of this size can take (Compute Engine GPU limits)."""
    out: dict[str, tuple[int, ...]] = {}
    for (acc, count), (max_vcpu, max_mem) in sorted(limits.items()):
        if m.vcpu <= max_vcpu and m.memory_gb <= max_mem:
            out[acc] = (*out.get(acc, ()), count)
    return out


def _allowed_map(offered: frozenset[str], machines: dict[str, Machine],
                 fixed: dict[str, dict[str, tuple[int, ...]]],
                 limits: dict[tuple[str, int], tuple[int, float]]) -> dict[str, dict[str, tuple[int, ...]]]:
    """Accelerators of every offered type whose accelerators are tabulated.

    Types Vertex AI training does not offer take nothing (they are refused
    first); TPU VM types (cloud-tpu, ct5lp/ct6e/tpu7x) are left out: their
    accelerator counts and topologies are not tabulated here.
    """
    out: dict[str, dict[str, tuple[int, ...]]] = {}
    for name in offered:
        m = machines.get(name)
        if name in fixed:
            out[name] = fixed[name]
        elif m is not None and name.startswith(_N1_PREFIX):
            out[name] = _n1_allowed(m, limits)
        elif m is not None and not _TPU_TYPES.match(name):
            out[name] = {}
    return out


#: TPU VM machine types: Vertex AI's TPU section of configure-compute.
_TPU_TYPES = re.compile(r"^(cloud-tpu|ct\d|tpu)")


def _series_index(names: list[str]) -> dict[str, tuple[str, ...]]:
    out: dict[str, list[str]] = {}
    for name in names:
        out.setdefault(_series(name), []).append(name)
    return {k: tuple(v) for k, v in out.items()}


@functools.cache
def _catalog() -> _Catalog:
    machines = _load_machines()
    fixed = _load_fixed_gpus()
    limits = _load_n1_limits()
    accs = list(_rows("accelerators.csv"))
    training = list(_rows("training_machines.csv"))
    offered = frozenset(r["name"] for r in training if r["offered"] == "yes")
    return _Catalog(
        machines=machines, fixed_gpus=fixed, n1_limits=limits, n1_egress=_load_n1_egress(),
        accelerators=tuple(r["name"] for r in accs),
        deprecated=frozenset(r["name"] for r in accs if r["deprecated"] == "yes"),
        allowed=_allowed_map(offered, machines, fixed, limits),
        by_series=_series_index(sorted(offered)),
        offered=offered,
        offered_as_of=max(r["as_of"] for r in training),
        training_accelerators=frozenset(r["name"] for r in _rows("training_accelerators.csv")
                                        if r["training"] == "yes"),
    )


def machine(name: str) -> Machine | None:
    """The catalog entry of machine type ``name``, or None when it is not in the catalog."""
    return _catalog().machines.get(name)


def machine_types() -> list[str]:
    """Every machine type with Compute Engine facts in the catalog, sorted (offered or not)."""
    return sorted(_catalog().machines)


def offered(machine_type: str) -> bool:
    """True when Vertex AI training offers ``machine_type`` (training_machines.csv)."""
    return machine_type in _catalog().offered


def training_machine_types() -> list[str]:
    """The machine types Vertex AI training offers, sorted."""
    return sorted(_catalog().offered)


def training_list_as_of() -> str:
    """The date the training machine list was transcribed (its rows' ``as_of``)."""
    return _catalog().offered_as_of


# --- near misses -------------------------------------------------------------

_DIGITS = re.compile(r"\d+")
_SEPARATORS = re.compile(r"[\s_.]+")


def _series(name: str) -> str:
    """``n1-standard-8`` → ``n1`` (the machine series, before the first dash)."""
    return name.split("-", 1)[0]


def _normalize(name: str) -> str:
    return _SEPARATORS.sub("-", name.strip().lower())


def _distance(a: str, b: str) -> int:
    """Optimal-string-alignment distance (Levenshtein plus adjacent transpositions)."""
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cost = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cost = min(cost, prev2[j - 2] + 1)
            cur.append(cost)
        prev2, prev = prev, cur
    return prev[-1]


def near_miss(name: str) -> str | None:
    """The offered type ``name`` is probably a typo of (``n1-standrad-8`` → ``n1-standard-8``).

    Only an offered type of the same series with the same numbers counts, at most
    two edits away (after folding case and ``_``/spaces to ``-``): a new series
    such as ``a4-highgpu-8g`` is *not* a near miss of ``a3-highgpu-8g``, it is
    a type the catalog does not know yet. None when nothing is that close.
    """
    norm = _normalize(name)
    if norm in _catalog().offered:
        return norm if norm != name else None
    digits = _DIGITS.findall(norm)
    best: tuple[int, str] | None = None
    for cand in _catalog().by_series.get(_series(norm), ()):
        if _DIGITS.findall(cand) != digits:
            continue
        d = _distance(norm, cand)
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
    norm = _normalize(name)
    cat = _catalog()
    gpus = cat.fixed_gpus.get(norm)
    if gpus:
        acc, counts = next(iter(gpus.items()))
        same = [t for t in sorted(cat.offered) if acc in cat.fixed_gpus.get(t, {})]
        same.sort(key=lambda t: (abs(cat.fixed_gpus[t][acc][0] - counts[0]), _distance(norm, t)))
        if same:
            return same[:n]
    m = cat.machines.get(norm)
    if m is not None:
        return sorted(_plain_offered(), key=lambda t: _shape_distance(m, cat.machines[t]))[:n]
    return difflib.get_close_matches(norm, sorted(cat.offered), n=n, cutoff=0.5)


@functools.cache
def _plain_offered() -> tuple[str, ...]:
    """Offered types with a known shape and no built-in accelerators: what a CPU or N1 job can move to."""
    cat = _catalog()
    return tuple(sorted(t for t in cat.offered if t in cat.machines and t not in cat.fixed_gpus
                        and not _TPU_TYPES.match(t)))


def _shape_distance(a: Machine, b: Machine) -> tuple[bool, bool, float]:
    """Order by: same kind (standard/highmem/...) first, then same series, then vCPU/memory ratio."""
    kind = a.name.split("-")[1:2] != b.name.split("-")[1:2]
    ratio = abs(math.log(max(a.vcpu, 1) / max(b.vcpu, 1))) + abs(math.log(a.memory_gb / b.memory_gb))
    return kind, _series(a.name) != _series(b.name), round(ratio, 6)


# --- accelerators -------------------------------------------------------------

def _read_installed_enum() -> list[str] | None:
    """AcceleratorType names from the installed aiplatform_v1 source, without importing it."""
    values = protos.enum_values("accelerator_type", "AcceleratorType") or {}
    return [n for n in values if not n.endswith("_UNSPECIFIED")] or None


@functools.cache
def _accelerator_types() -> tuple[str, ...]:
    return tuple(_read_installed_enum() or _catalog().accelerators)


def accelerator_types() -> list[str]:
    """Accelerator types the installed google-cloud-aiplatform knows (UNSPECIFIED excluded).

    Read from the package's source text so new GPUs appear without a vxtrain
    release and ``validate`` never imports the heavy client library; falls back
    to the catalog's own list when the package is not installed.
    """
    return list(_accelerator_types())


def catalog_accelerators() -> list[str]:
    """The accelerator types listed in the catalog data (accelerators.csv)."""
    return list(_catalog().accelerators)


def training_accelerator(accelerator_type: str) -> bool:
    """True when Vertex AI training offers ``accelerator_type`` (training_accelerators.csv; not K80)."""
    return accelerator_type in _catalog().training_accelerators


def deprecated_accelerator(accelerator_type: str) -> bool:
    """True for accelerator types at end of support (K80: compute/docs/eol/k80-eol)."""
    return accelerator_type in _catalog().deprecated


def allowed_accelerators(machine_type: str) -> dict[str, tuple[int, ...]] | None:
    """Accelerator type → allowed counts on ``machine_type``.

    None when the machine is not offered for training, or its accelerators are
    not tabulated (TPU VM types); ``{}`` when it takes no accelerators. N1
    takes V100/T4/P4/P100 within Vertex AI's N1 GPU vCPU/memory limits
    (n1_gpu_limits.csv); A2/A3/A4/G2/G4 come with a fixed GPU type and count.
    """
    allowed = _catalog().allowed.get(machine_type)
    return None if allowed is None else dict(allowed)


def builtin_accelerator(machine_type: str) -> tuple[str, int] | None:
    """The GPUs built into an accelerator-optimized type (A2/A3/G2), e.g. ``("NVIDIA_L4", 1)``."""
    fixed = _catalog().fixed_gpus.get(machine_type)
    if not fixed:
        return None
    acc, counts = next(iter(fixed.items()))
    return acc, counts[0]


def n1_gpu_limits(accelerator_type: str, count: int) -> tuple[int, float] | None:
    """(max vCPU, max memory GB) of an N1 machine with ``count`` GPUs of that type; None if not offered."""
    return _catalog().n1_limits.get((accelerator_type, count))


def n1_gpu_counts(accelerator_type: str) -> tuple[int, ...]:
    """GPU counts N1 offers for ``accelerator_type`` (empty: not an N1 GPU)."""
    return tuple(sorted(c for a, c in _catalog().n1_limits if a == accelerator_type))


def node_egress(machine_type: str, accelerator_type: str | None = None,
                accelerator_count: int = 0) -> Egress:
    """Per-node egress cap of a machine, GPU-aware.

    N1 with GPUs: the N1 × GPU table (T4/V100 rows unverified except Google's
    n1-highmem-96 + 8 × V100 = 100 Gbps example; P100/P4 capped at 32).
    Everything else: the machine's default cap. Unknown: ``Egress(None, 'unknown', '')``.
    """
    cat = _catalog()
    if accelerator_type and accelerator_count:
        combo = cat.n1_egress.get((machine_type, accelerator_type, accelerator_count))
        if combo is not None:
            return combo
    m = cat.machines.get(machine_type)
    if m is None:
        return Egress(None, _UNKNOWN, "")
    if m.egress_gbps is None:
        return Egress(None, _UNKNOWN, m.source)
    return Egress(m.egress_gbps, m.confidence, m.source)


# --- regions ----------------------------------------------------------------------

@dataclass(frozen=True)
class Region:
    """A Vertex AI location: ``training`` is "yes" or "not listed" (regions.csv)."""

    name: str
    training: str
    confidence: str
    source: str


@dataclass(frozen=True)
class RegionAccelerator:
    """Whether a region offers an accelerator for training, per the locations page.

    ``conflict``: the quotas page disagrees (a quota where the locations page
    lists none, or "Not available" where it lists one).
    """

    offered: bool
    conflict: bool
    locations_page: str
    quota_page: str
    source: str


@functools.cache
def _regions() -> dict[str, Region]:
    return {r["region"]: Region(r["region"], r["custom_training"], r["confidence"], r["source"])
            for r in _rows("regions.csv")}


@functools.cache
def _region_accelerators() -> dict[tuple[str, str], RegionAccelerator]:
    # Loaded apart from the machine catalog: only specs with a region and an accelerator need it.
    return {(r["region"], r["accelerator"]): RegionAccelerator(
        r["offered_for_training"] == "yes", r["conflict"] == "yes", r["locations_page"],
        r["quota_page_default"], r["source"]) for r in _rows("region_accelerators.csv")}


def region(name: str) -> Region | None:
    """The Vertex AI location ``name`` (None when the locations page does not list it)."""
    return _regions().get(name)


def training_regions() -> list[str]:
    """Regions whose Vertex AI feature table lists custom training, sorted."""
    return sorted(r.name for r in _regions().values() if r.training == "yes")


def near_region(name: str) -> list[str]:
    """Training regions ``name`` is probably a typo of (``us-centrl1`` → ``us-central1``)."""
    norm = _normalize(name)
    names = sorted(_regions())
    if norm in names:
        return [norm] if norm != name else []
    scored = sorted((_distance(norm, r), r) for r in names)
    return [r for d, r in scored if d <= 2][:3]


def region_accelerator_key(machine_type: str | None, accelerator_type: str | None,
                           count: int | None) -> str | None:
    """The region_accelerators.csv key of a pool's accelerators (None: no accelerator).

    TPU v2/v3 pods (32 cores or more) are listed apart from single TPUs; TPU
    v6e and TPU7x are named by their machine types (no AcceleratorType value).
    """
    mt = machine_type or ""
    if mt.startswith("ct6e-"):
        return "TPU v6e (ct6e)"
    if mt.startswith("tpu7x-"):
        return "TPU7x (tpu7x)"
    acc = accelerator_type
    if acc is None:
        builtin = builtin_accelerator(mt)
        acc = builtin[0] if builtin else None
    if acc in ("TPU_V2", "TPU_V3") and (count or 0) >= _TPU_POD_CORES:
        return f"{acc} (pod)"
    return acc


#: configure-compute, TPU section: TPU_V2/TPU_V3 take 8 cores (one TPU) or 32 and more (a pod).
_TPU_POD_CORES = 32


def region_accelerator(region_name: str, key: str) -> RegionAccelerator | None:
    """Whether ``region_name`` offers accelerator ``key`` for training (None: not tabulated)."""
    return _region_accelerators().get((region_name, key))


def regions_offering(key: str) -> list[str]:
    """Training regions the locations page lists ``key`` in, sorted."""
    return sorted(r for (r, k), ra in _region_accelerators().items() if k == key and ra.offered)


# --- quotas ------------------------------------------------------------------------

@functools.cache
def _quota_metrics() -> dict[tuple[str, str], str]:
    return {(r["accelerator"], r["kind"]): r["quota_metric"] for r in _rows("quota_metrics.csv")
            if r["quota_metric"]}


#: quota_metrics.csv's row for the CPUs of a job without accelerators.
CPU_QUOTA_KEY = "(CPUs)"


def quota_metric(accelerator_type: str | None, *, preemptible: bool = False) -> str | None:
    """The Vertex AI training quota metric an accelerator counts against (quota_metrics.csv).

    ``preemptible``: Spot and FLEX_START jobs use the preemptible twin, where one
    is published (H100, H100 Mega). None when no source names the metric (B200,
    GB200, RTX PRO 6000): the names are not mechanical, so none is made up.
    """
    key = accelerator_type or CPU_QUOTA_KEY
    metrics = _quota_metrics()
    if preemptible and (key, "preemptible") in metrics:
        return metrics[(key, "preemptible")]
    return metrics.get((key, "on_demand"))


def multi_region(region: str | None) -> str:
    """The Artifact Registry multi-region nearest a Vertex region: europe, asia or us (also when unknown)."""
    region = (region or "").lower()
    for prefixes, multi in _MULTI_REGIONS:
        if region.startswith(prefixes):
            return multi
    return "us"


def reduction_server_image(region: str | None) -> str:
    """Google's Reduction Server image in the multi-region nearest ``region`` (us when unknown).

    https://cloud.google.com/vertex-ai/docs/training/distributed-training#reduction_server
    """
    return slots.RS_IMAGE_TEMPLATE.format(multi_region(region))


__all__ = [
    "CPU_QUOTA_KEY",
    "Egress",
    "Machine",
    "Region",
    "RegionAccelerator",
    "accelerator_types",
    "allowed_accelerators",
    "builtin_accelerator",
    "catalog_accelerators",
    "deprecated_accelerator",
    "machine",
    "machine_types",
    "multi_region",
    "n1_gpu_counts",
    "n1_gpu_limits",
    "near_miss",
    "near_region",
    "nearest_offered",
    "node_egress",
    "offered",
    "quota_metric",
    "reduction_server_image",
    "region",
    "region_accelerator",
    "region_accelerator_key",
    "regions_offering",
    "training_accelerator",
    "training_list_as_of",
    "training_machine_types",
    "training_regions",
]
