"""Vertex AI training quota metrics per accelerator (``quota_metrics.csv``)."""
from __future__ import annotations

import functools

from vxtrain.catalog.tables import rows

#: quota_metrics.csv's row for the CPUs of a job without accelerators.
CPU_QUOTA_KEY = "(CPUs)"


@functools.cache
def _quota_metrics() -> dict[tuple[str, str], str]:
    return {(r["accelerator"], r["kind"]): r["quota_metric"] for r in rows("quota_metrics.csv")
            if r["quota_metric"]}


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
