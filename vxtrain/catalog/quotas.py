"""Vertex AI training quota metrics per accelerator and per CPU machine family (``quota_metrics.csv``),
and the documented shapes of the names no row gives (``quota_patterns.csv``): candidates only,
which the quota preflight accepts when the project's own ListQuotaInfos answer lists them."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from vxtrain.catalog.tables import rows

#: quota_metrics.csv's row for the CPUs of a job without accelerators (N1, the default machine family).
CPU_QUOTA_KEY = "(CPUs n1)"
#: The service every Vertex AI training quota belongs to (the metrics' prefix).
QUOTA_SERVICE = "aiplatform.googleapis.com"


@dataclass(frozen=True)
class QuotaMetric:
    """One row of quota_metrics.csv: what a resource counts against.

    ``metric`` None: no source names it (shown as unknown, never made up).
    ``unit``: ``gpus`` (acceleratorCount per replica), ``vcpus`` (the machine's vCPUs
    per replica), or None when no source says what the quota counts (TPUs).
    """

    key: str
    kind: str
    metric: str | None
    quota_id: str | None
    unit: str | None
    confidence: str
    source: str


@functools.cache
def _rows() -> dict[tuple[str, str], QuotaMetric]:
    return {(r["accelerator"], r["kind"]): QuotaMetric(r["accelerator"], r["kind"], r["quota_metric"] or None,
                                                       r["quota_id"] or None, r["unit"] or None,
                                                       r["confidence"], r["source"])
            for r in rows("quota_metrics.csv")}


def _quota_metrics() -> dict[tuple[str, str], str]:
    return {key: row.metric for key, row in _rows().items() if row.metric}


def quota_metric(accelerator_type: str | None, *, preemptible: bool = False) -> str | None:
    """The Vertex AI training quota metric an accelerator counts against (quota_metrics.csv).

    ``preemptible``: Spot and FLEX_START jobs use the preemptible twin, where one
    is published (H100, H100 Mega; T4 and L4 from third-party lists). None when no
    source names the metric (B200, GB200, RTX PRO 6000): the names are not
    mechanical, so none is made up. Without a preemptible row this falls back to the
    on-demand metric (the emulator's ``create:quota`` fault wants a name);
    :func:`accelerator_quota` does not.
    """
    key = accelerator_type or CPU_QUOTA_KEY
    metrics = _quota_metrics()
    if preemptible and (key, "preemptible") in metrics:
        return metrics[(key, "preemptible")]
    return metrics.get((key, "on_demand"))


def accelerator_quota(accelerator_type: str, *, preemptible: bool = False) -> QuotaMetric | None:
    """The row an accelerator counts against: the preemptible one under SPOT and FLEX_START
    (https://cloud.google.com/vertex-ai/docs/training/schedule-jobs-dws#quota), with no
    fallback to the on-demand metric, which such a job does not use. None: no row (unknown)."""
    return _rows().get((accelerator_type, "preemptible" if preemptible else "on_demand"))


def machine_family(machine_type: str) -> str:
    """``n1-standard-8`` → ``n1``: the series a CPU quota is kept per."""
    return machine_type.split("-", 1)[0].lower()


def cpu_quota(machine_type: str) -> QuotaMetric | None:
    """The CPU quota row of ``machine_type``'s family (``(CPUs n1)`` …); None: no source
    names that family's quota. The quotas page keeps CPUs per family (N1+E2, N2, N4, C2, M1,
    A2, A3: https://cloud.google.com/vertex-ai/docs/quotas), and Spot/FLEX_START jobs'
    CPUs are not said to move to another metric, so there is no preemptible CPU row."""
    return _rows().get((f"(CPUs {machine_family(machine_type)})", "on_demand"))


def quota_id(metric: str) -> str | None:
    """The Cloud Quotas ID of a metric (``aiplatform.googleapis.com/…`` or its short name)
    where a source showed one; None otherwise."""
    short = metric.rpartition("/")[2]
    for row in _rows().values():
        if row.quota_id and row.metric and row.metric.rpartition("/")[2] == short:
            return row.quota_id
    return None


def known_metrics() -> frozenset[str]:
    """The short names of every metric quota_metrics.csv names (``custom_model_training_cpus`` …):
    the only ones a job's needs count against."""
    return frozenset(metric.rpartition("/")[2] for metric in _quota_metrics().values())


@dataclass(frozen=True)
class QuotaCandidate:
    """A metric name a documented pattern gives where no quota_metrics.csv row names one.

    Not a fact on its own: the quota preflight counts a need against ``metric`` only
    when the project's ListQuotaInfos answer lists it (docs/capacity.md). ``unit``:
    what a replica counts (``gpus``, ``vcpus``); ``pattern``, ``confidence``, ``source``:
    the quota_patterns.csv row that gave the name.
    """

    metric: str
    unit: str
    pattern: str
    confidence: str
    source: str


@dataclass(frozen=True)
class _Pattern:
    pattern: str
    confidence: str
    source: str

    def metric(self, **parts: str) -> str:
        return f"{QUOTA_SERVICE}/{self.pattern.format(**parts)}"

    def read(self, metric: str, part: str) -> str | None:
        """The ``{part}`` of ``metric`` (full or short name) when it has this pattern's shape."""
        prefix, _, suffix = self.pattern.partition(f"{{{part}}}")
        found = re.fullmatch(re.escape(prefix) + r"([a-z0-9_]+?)" + re.escape(suffix), metric.rpartition("/")[2])
        return found.group(1) if found else None


@functools.cache
def _patterns() -> dict[tuple[str, str], _Pattern]:
    return {(r["resource"], r["kind"]): _Pattern(r["pattern"], r["confidence"], r["source"])
            for r in rows("quota_patterns.csv")}


def accelerator_candidate(accelerator_type: str, *, preemptible: bool = False) -> QuotaCandidate | None:
    """The metric the documented pattern gives an accelerator whose row names none (the
    preemptible twin of ``custom_model_training_nvidia_a100_gpus`` is
    ``custom_model_training_preemptible_nvidia_a100_gpus``); None where a row names the
    metric, or where the accelerator's ``{gpu}`` token is not known (no on-demand metric
    named: B200, GB200, RTX PRO 6000; TPUs)."""
    kind = "preemptible" if preemptible else "on_demand"
    row = _rows().get((accelerator_type, kind))
    if row is not None and row.metric:
        return None
    on_demand = _rows().get((accelerator_type, "on_demand"))
    build, read = _patterns().get(("gpus", kind)), _patterns().get(("gpus", "on_demand"))
    if on_demand is None or not on_demand.metric or on_demand.unit != "gpus" or build is None or read is None:
        return None
    token = read.read(on_demand.metric, "gpu")
    if token is None:
        return None
    return QuotaCandidate(build.metric(gpu=token), "gpus", build.pattern, build.confidence, build.source)


def cpu_candidate(machine_type: str) -> QuotaCandidate | None:
    """The metric the documented pattern gives the CPUs of a family the quotas page keeps
    apart but whose metric no source names (N4, M1, A2, A3: ``custom_model_training_a2_cpus``);
    None for a family with a named metric or with no row (no source says it has its own quota)."""
    family = machine_family(machine_type)
    row = _rows().get((f"(CPUs {family})", "on_demand"))
    pattern = _patterns().get(("cpus", "on_demand"))
    if row is None or row.metric or pattern is None:
        return None
    return QuotaCandidate(pattern.metric(family=family), "vcpus", pattern.pattern, pattern.confidence,
                          pattern.source)


def candidate_metrics() -> frozenset[str]:
    """The short names the patterns give the catalog's accelerators and CPU families (the
    ones a job's needs count against once the project's ListQuotaInfos answer lists them)."""
    found: list[QuotaCandidate | None] = []
    for key in {key for key, _ in _rows()}:
        if key.startswith("(CPUs "):
            found.append(cpu_candidate(key.removeprefix("(CPUs ").removesuffix(")")))
        else:
            found += [accelerator_candidate(key), accelerator_candidate(key, preemptible=True)]
    return frozenset(each.metric.rpartition("/")[2] for each in found if each is not None)
