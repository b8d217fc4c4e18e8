"""Scheduling: a zero timeout, and ``max_wait`` without FLEX_START (Vertex AI ignores it then)."""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import NativeSpec
from vxtrain.model import DURATION_EXAMPLES, Job

FLEX_START = "FLEX_START"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """A zero timeout, and max_wait without FLEX_START (Vertex AI ignores it then)."""
    sched = job.scheduling
    if sched is None:
        return
    if sched.timeout == 0:
        yield error("bad-timeout", f"scheduling.timeout is 0: give a positive duration such as {DURATION_EXAMPLES} "
                    "(the default is 7d)", **native.where(("scheduling", "timeout")))
    # Scheduling.max_wait_duration applies "if the scheduling strategy is set to
    # DWS_FLEX_START" (aiplatform_v1 custom_job.proto): elsewhere it is ignored.
    if sched.max_wait is not None and (sched.strategy or "STANDARD") != FLEX_START:
        yield warning("max-wait-ignored", f"scheduling.max_wait only applies with strategy FLEX_START "
                      f"(strategy is {sched.strategy or 'STANDARD (default)'}); set strategy: FLEX_START "
                      "or remove max_wait", **native.where(("scheduling", "max_wait")))
