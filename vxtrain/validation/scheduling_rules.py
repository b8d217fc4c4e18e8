"""Scheduling: a zero timeout, ``max_wait`` without FLEX_START (Vertex AI ignores it then),
Dynamic Workload Scheduler's requirements, and a strategy on a persistent resource.

FLEX_START (DWS_DOC#requirements): "Your serverless training job requests L4,
A100, H100, H200, or B200 GPUs." / "Your serverless training job has a maximum
`timeout` of 7 days or less." / "Your serverless training job uses the same
machine configuration for all worker pools." The GPU list is catalog data
(flex_start_accelerators.csv). A Reduction Server pool runs on CPUs ("You do
not use GPUs for the Reduction Server nodes", DISTRIBUTED_DOC#reduction-server),
so it never has the training pools' configuration.

``scheduling`` as compiled: a field ``extra.jobSpec.scheduling`` sets is the
one sent, and the one checked, at its own line (_common.scheduling_value).
"""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import KeyPath, NativeSpec, format_path, get_path
from vxtrain.model import DURATION_EXAMPLES, DURATION_MAX_SECONDS, Job, Pool, duration_seconds, duration_too_long
from vxtrain.validation._common import DISTRIBUTED_DOC, RS, key_path, pool_accelerator, raw_pool, scheduling_value

FLEX_START = "FLEX_START"
SPOT = "SPOT"
#: Dynamic Workload Scheduler for training: its requirements.
DWS_DOC = ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
           "schedule-jobs-dws")
#: jobSpec.persistentResourceId: "the job will be run on existing machines held by the
#: PersistentResource instead of on-demand short-live machines" (aiplatform_v1 custom_job.proto).
PERSISTENT_DOC = ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
                  "persistent-resource-train")
#: Names of FLEX_START's GPUs, as the DWS page words them.
_GPU_WORDS = "L4, A100 (40 or 80 GB), H100, H200 or B200"

Config = tuple[str | None, str | None, int]


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """A zero timeout, max_wait without FLEX_START, FLEX_START's requirements, and SPOT or
    FLEX_START on a persistent resource."""
    yield from _too_long(native)
    sched = job.scheduling
    if sched is not None and sched.timeout == 0:
        yield error("bad-timeout", f"scheduling.timeout is 0: give a positive duration such as {DURATION_EXAMPLES} "
                    "(the default is 7d)", **native.where(("scheduling", "timeout")))
    strategy, strategy_at = scheduling_value(job, "strategy")
    max_wait, max_wait_at = scheduling_value(job, "max_wait")
    # Scheduling.max_wait_duration applies "if the scheduling strategy is set to
    # DWS_FLEX_START" (aiplatform_v1 custom_job.proto): elsewhere it is ignored.
    if max_wait is not None and (strategy or "STANDARD") != FLEX_START:
        yield warning("max-wait-ignored", f"{format_path(max_wait_at)} only applies with strategy FLEX_START "
                      f"(strategy is {strategy or 'STANDARD (default)'}); set strategy: FLEX_START "
                      f"or remove {max_wait_at[-1]}", **native.where(max_wait_at))
    if strategy == FLEX_START:
        yield from _flex_start(job, native)
    if strategy in (SPOT, FLEX_START) and job.persistent_resource is not None:
        yield _strategy_on_persistent_resource(str(strategy), job.persistent_resource, strategy_at, native)


def _too_long(native: NativeSpec) -> Iterator[Diagnostic]:
    """A duration past what a protobuf Duration carries: refused here, not by submit's
    conversion to protobuf (the schema refuses what is not a duration at all)."""
    for key in ("timeout", "max_wait"):
        path = ("scheduling", key)
        raw = get_path(native.data, path)
        seconds = (duration_seconds(raw) if isinstance(raw, str)
                   else raw if isinstance(raw, int) and not isinstance(raw, bool) else None)
        why = None if seconds is None else duration_too_long(seconds)
        if why is not None:
            shown = str(raw).strip()
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            yield error("duration-too-long", f"{format_path(path)} {shown!r} {why}; give at most "
                        f"{DURATION_MAX_SECONDS}s (or a duration such as {DURATION_EXAMPLES})", **native.where(path))


# --- FLEX_START ------------------------------------------------------------------------------

def _flex_start(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    timeout, timeout_at = scheduling_value(job, "timeout")
    if isinstance(timeout, int) and timeout > catalog.FLEX_START_MAX_TIMEOUT_S:
        yield error("flex-start-timeout", f"{format_path(timeout_at)} is {_days(timeout)}: a FLEX_START job runs "
                    f"at most 7 days (\"a maximum `timeout` of 7 days or less\"); give 7d or less, or use strategy "
                    f"STANDARD or SPOT ({DWS_DOC}#requirements)", **native.where(timeout_at))
    pools = job.ordered_pools()
    first = next((p for p in pools if p.role != RS), None)
    for pool in pools:
        if pool.role == RS:
            yield _reduction_server(pool, first, native)
            continue
        yield from _gpu(pool, native)
        if (first is not None and pool is not first and pool.machine_type and first.machine_type
                and _config(pool) != _config(first)):
            yield _mixed(pool, first, native)


def _config(pool: Pool) -> Config:
    """The machine configuration DWS compares: machine type, accelerator type and count."""
    return (pool.machine_type, *pool_accelerator(pool))


def _describe(config: Config) -> str:
    machine, acc, count = config
    return f"{machine} with {count} x {acc}" if acc else f"{machine} without accelerators"


def _gpu(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    """The pool's GPUs are ones DWS runs (flex_start_accelerators.csv)."""
    machine = pool.machine_type
    if machine is None or not catalog.offered(machine):
        return  # machine_rules reports it
    acc, _ = pool_accelerator(pool)
    if acc is None:
        yield error("flex-start-no-gpu", f"strategy FLEX_START (Dynamic Workload Scheduler) schedules jobs that "
                    f"request {_GPU_WORDS} GPUs; {machine} has none: use a machine with one of them (e.g. "
                    f"g2-standard-8 with 1 x NVIDIA_L4, a3-highgpu-8g with 8 x NVIDIA_H100_80GB), or strategy "
                    f"STANDARD or SPOT ({DWS_DOC}#requirements)", **native.where(key_path(native, pool.role,
                                                                                          "machine_type")))
        return
    row = catalog.flex_start(acc)
    at = key_path(native, pool.role, "accelerator")
    if row is None:
        return  # not an accelerator the catalog knows: accelerator_rules reports it
    if not row.allowed:
        yield error("flex-start-gpu", f"strategy FLEX_START (Dynamic Workload Scheduler) runs {_GPU_WORDS} GPUs "
                    f"only, not {acc}: use one of {', '.join(catalog.flex_start_accelerators())}, or strategy "
                    f"STANDARD or SPOT ({DWS_DOC}#requirements)", **native.where((*at, "type")))
    elif row.confidence in ("derived", "unverified"):
        yield warning("flex-start-gpu-unconfirmed", f"{acc} with strategy FLEX_START: the Dynamic Workload "
                      f"Scheduler page names {_GPU_WORDS} GPUs ({acc}: {row.note}); vxtrain accepts it, but "
                      f"Vertex AI may refuse it ({DWS_DOC}#requirements)", **native.where((*at, "type")))


def _mixed(pool: Pool, first: Pool, native: NativeSpec) -> Diagnostic:
    """A pool whose machine configuration differs from the first pool's."""
    key = "machine_type" if pool.machine_type != first.machine_type else "accelerator"
    return error("flex-start-mixed-machines", f"strategy FLEX_START needs \"the same machine configuration for "
                 f"all worker pools\": {pool.role} has {_describe(_config(pool))}, {first.role} "
                 f"{_describe(_config(first))}; give every pool the same machine_type and accelerator (in defaults), "
                 f"or use strategy STANDARD or SPOT ({DWS_DOC}#requirements)",
                 **native.where(key_path(native, pool.role, key)))


def _reduction_server(pool: Pool, first: Pool | None, native: NativeSpec) -> Diagnostic:
    """A Reduction Server pool (CPU) never shares the training pools' configuration."""
    others = f" ({first.role} has {_describe(_config(first))})" if first is not None else ""
    at: KeyPath = (RS, "machine_type") if "machine_type" in raw_pool(native, RS) else (RS,)
    return error("flex-start-reduction-server", f"strategy FLEX_START needs \"the same machine configuration for "
                 f"all worker pools\", and reduction_server runs {pool.machine_type} without GPUs (Reduction Server "
                 f"nodes use no GPUs){others}: remove reduction_server or use strategy STANDARD or SPOT "
                 f"({DWS_DOC}#requirements, {DISTRIBUTED_DOC}#reduction-server)", **native.where(at))


def _days(seconds: int) -> str:
    days = seconds / 86400
    return f"{days:g} days" if days == int(days) else f"{seconds}s ({days:.2f} days)"


# --- a strategy on a persistent resource ----------------------------------------------------

def _strategy_on_persistent_resource(strategy: str, resource: str, at: KeyPath, native: NativeSpec) -> Diagnostic:
    """No page says what SPOT or FLEX_START does on a persistent resource; the job runs on
    the resource's machines, so the strategy cannot provision it any (a warning:
    docs/decisions.md)."""
    what = "Spot VMs" if strategy == SPOT else "Dynamic Workload Scheduler capacity"
    return warning("strategy-on-persistent-resource", f"strategy {strategy} with persistent_resource "
                   f"\"{resource}\": the job runs \"on existing machines held by the PersistentResource instead of "
                   f"on-demand short-live machines\", so it gets no {what} and is billed with the resource; no "
                   f"Google page says how Vertex AI treats a strategy there: remove strategy, or the "
                   f"persistent_resource ({PERSISTENT_DOC})", **native.where(at))

