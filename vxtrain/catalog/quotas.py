"""Vertex AI training quota metrics per accelerator and per CPU machine family (``quota_metrics.csv``)."""
from __future__ import annotations

import functools
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
