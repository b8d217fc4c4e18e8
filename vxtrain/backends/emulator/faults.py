"""Fault injection: ``--fault METHOD:KIND:COUNT`` (and ``VXTRAIN_EMULATOR_FAULTS``).

A fault makes the next COUNT calls of a JobService method (or, with METHOD
``quotas``, of the Cloud Quotas API's ListQuotaInfos/GetQuotaInfo) fail the way
Vertex AI can fail, so the client's retry and exactly-once logic can be tested
against each of them. Every kind but ``deadline-after-commit`` and
``deadline-commit-late`` fires before the method acts; the first lets the call
commit, then answers DEADLINE_EXCEEDED; the second answers DEADLINE_EXCEEDED at
once and commits the call ``LATE_COMMIT_SECONDS`` later (a create whose caller
gave up on it, still committed by the server).

With METHOD ``tail``, a fault applies to the next COUNT TailLogEntries sessions
(Cloud Logging's live tailing): a kind whose error is transient (``unavailable``,
``unavailable-before-commit``, ``internal``, the ``deadline-*`` ones) lets the session open
and breaks it after its first entries; any other refuses the session when it opens
(``quota``/``ratelimit``: RESOURCE_EXHAUSTED, ``permission``/``disabled``: PERMISSION_DENIED,
``unimplemented``), so a follower's fall back to polling can be tested.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc

from vxtrain import catalog
from vxtrain.backends.emulator.common import RpcError, spec_of
from vxtrain.errors import UsageError
from vxtrain.planning.quota import PREEMPTIBLE_STRATEGIES

FAULT_ENV = "VXTRAIN_EMULATOR_FAULTS"
FAULT_METHODS: tuple[str, ...] = ("create", "get", "list", "cancel", "delete", "quotas", "tail")
FAULT_KINDS: tuple[str, ...] = ("unavailable-before-commit", "unavailable", "deadline-after-commit",
                                "deadline-commit-late", "quota", "ratelimit", "permission", "internal", "disabled",
                                "unimplemented")
#: How long after its DEADLINE_EXCEEDED a ``deadline-commit-late`` call commits.
LATE_COMMIT_SECONDS = 2.0


@dataclass
class Fault:
    """Make ``method`` fail with ``kind`` for its next ``count`` calls."""

    method: str
    kind: str
    count: int = 1

    @property
    def before_commit(self) -> bool:
        """Faults other than deadline-after-commit and deadline-commit-late fire before the method acts."""
        return self.kind not in ("deadline-after-commit", "deadline-commit-late")

    @property
    def commits_late(self) -> bool:
        """deadline-commit-late: the call commits ``LATE_COMMIT_SECONDS`` after its error."""
        return self.kind == "deadline-commit-late"


def parse_fault(text: str) -> Fault:
    """``create:quota:2`` → Fault; a malformed spec is a UsageError naming what is accepted."""
    parts = text.strip().split(":")
    if len(parts) == 2:
        parts.append("1")
    if len(parts) != 3:
        raise UsageError(f"--fault takes METHOD:KIND:COUNT, got {text!r} (e.g. create:unavailable-before-commit:1)")
    method, kind, count = (p.strip().lower() for p in parts)
    if method not in FAULT_METHODS:
        raise UsageError(f"fault method {method!r} in {text!r} is not one of {', '.join(FAULT_METHODS)}")
    if kind not in FAULT_KINDS:
        raise UsageError(f"fault kind {kind!r} in {text!r} is not one of {', '.join(FAULT_KINDS)}")
    if not (count.isascii() and count.isdigit()) or int(count) < 1:
        raise UsageError(f"fault count {count!r} in {text!r} must be a whole number ≥ 1")
    return Fault(method, kind, int(count))


def faults_from_env(environ: Mapping[str, str]) -> list[Fault]:
    """Faults listed comma-separated in ``VXTRAIN_EMULATOR_FAULTS``."""
    raw = environ.get(FAULT_ENV, "")
    return [parse_fault(item) for item in raw.split(",") if item.strip()]


class FaultPlan:
    """Pending faults; each call of a method consumes at most one (thread-safe)."""

    def __init__(self, faults: Iterable[Fault] = ()) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        for fault in faults:
            self.add(fault)

    def add(self, fault: Fault | str) -> None:
        """Queue a fault (a Fault or its ``METHOD:KIND:COUNT`` text)."""
        parsed = parse_fault(fault) if isinstance(fault, str) else Fault(fault.method, fault.kind, fault.count)
        with self._lock:
            self._faults.append(parsed)

    def take(self, method: str) -> Fault | None:
        """The fault that fires on this call of ``method`` (one count used), or None."""
        with self._lock:
            for fault in self._faults:
                if fault.method == method and fault.count > 0:
                    fault.count -= 1
                    return Fault(fault.method, fault.kind, 1)
        return None

    def take_tail(self) -> tuple[RpcError, bool] | None:
        """The next TailLogEntries session's fault: its error, and True when it breaks the
        open stream after its first entries (False: it refuses the session); or None."""
        fault = self.take("tail")
        return None if fault is None else (fault_error(fault), breaks_stream(fault))

    def pending(self) -> list[Fault]:
        """Faults that have not fired yet (copies)."""
        with self._lock:
            return [Fault(f.method, f.kind, f.count) for f in self._faults if f.count > 0]

    def clear(self) -> None:
        """Drop every pending fault."""
        with self._lock:
            self._faults.clear()


def quota_metric(job: Any) -> str:
    """The quota metric Vertex would name for ``job``'s primary pool.

    Vertex words it "The following quota metrics exceed quota limits:
    aiplatform.googleapis.com/custom_model_training_nvidia_v100_gpus" (seen in
    GoogleCloudPlatform/vertex-ai-samples#700 and stable-diffusion-on-gcp#12).
    The names are not mechanical (A100 40GB is ``nvidia_a100``, H100 80GB is
    ``nvidia_h100``), so they come from the sourced table
    vxtrain/catalog/quota_metrics.csv; Spot and FLEX_START jobs count against the
    preemptible twin where one is published. An accelerator whose metric no
    source names (B200, GB200, RTX PRO 6000, TPU v2) gets the CPU metric, which
    every job also counts against, rather than a made-up name.
    """
    spec = spec_of(job) if job is not None else None
    pools = spec.worker_pool_specs if spec is not None else []
    accel = pools[0].machine_spec.accelerator_type.name if pools else "ACCELERATOR_TYPE_UNSPECIFIED"
    strategy = spec.scheduling.strategy.name if spec is not None and "scheduling" in spec else ""
    preemptible = strategy in PREEMPTIBLE_STRATEGIES  # the quota needs' set (one home)
    accel_type = None if accel.endswith("_UNSPECIFIED") else accel
    metric = catalog.quota_metric(accel_type, preemptible=preemptible) or catalog.quota_metric(None)
    assert metric is not None, "quota_metrics.csv lost its CPU row"
    return metric


def quota_refusal(metrics: Iterable[str]) -> RpcError:
    """A create refused for quota, in Vertex AI's words (the ``quota`` fault's, and the
    emulator's own when a job alone exceeds a ``--quota`` limit)."""
    return RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                    f"The following quota metrics exceed quota limits: {', '.join(metrics)}")


#: The ``tail`` fault kinds that break an open stream (the others refuse it at open).
_STREAM_BREAKS = ("unavailable-before-commit", "unavailable", "internal", "deadline-after-commit",
                  "deadline-commit-late")


def breaks_stream(fault: Fault) -> bool:
    """True when a ``tail`` fault breaks the session after its first entries (a transient
    error), False when it refuses the session at open."""
    return fault.kind in _STREAM_BREAKS


def _tail_error(fault: Fault) -> RpcError | None:
    """A ``tail`` fault's refusal in Cloud Logging's terms (None: the generic wording fits)."""
    if fault.kind in ("quota", "ratelimit"):
        # gcloud's words for RESOURCE_EXHAUSTED on TailLogEntries (googlecloudsdk tailing.py);
        # the limit: 10 open live-tailing sessions per project (https://cloud.google.com/logging/quotas).
        return RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED, "There are too many tail sessions open.")
    if fault.kind == "permission":
        return RpcError(grpc.StatusCode.PERMISSION_DENIED,
                        "Permission 'logging.logEntries.list' denied on resource (or it may not exist).")
    if fault.kind == "disabled":
        return RpcError(grpc.StatusCode.PERMISSION_DENIED,
                        "Cloud Logging API has not been used in this project before or it is disabled. Enable it "
                        "and retry after a few minutes.")
    return None


def fault_error(fault: Fault, job: Any = None) -> RpcError:
    """The gRPC error a fault produces, worded like Vertex's own (Cloud Logging's for ``tail``)."""
    tail = _tail_error(fault) if fault.method == "tail" else None
    if tail is not None:
        return tail
    if fault.kind == "unimplemented":
        return RpcError(grpc.StatusCode.UNIMPLEMENTED, "Method not found.")
    if fault.kind == "disabled":
        # Google's wording for a disabled API (PERMISSION_DENIED, reason SERVICE_DISABLED).
        api = "Cloud Quotas API" if fault.method == "quotas" else "Vertex AI API"
        return RpcError(grpc.StatusCode.PERMISSION_DENIED,
                        f"{api} has not been used in this project before or it is disabled. Enable it and "
                        "retry after a few minutes.")
    if fault.kind == "permission" and fault.method == "quotas":
        return RpcError(grpc.StatusCode.PERMISSION_DENIED,
                        "Permission 'cloudquotas.quotas.get' denied on resource (or it may not exist).")
    if fault.kind == "quota":
        return quota_refusal([quota_metric(job)])
    if fault.kind == "ratelimit":
        # A rate quota, not a capacity one: RESOURCE_EXHAUSTED in Google's words for
        # aiplatform.googleapis.com (GoogleCloudPlatform/vertex-ai-samples#1000).
        return RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                        "Quota exceeded for quota metric 'Resource management (CRUD) requests' and limit "
                        "'Resource management (CRUD) requests per minute per region' of service "
                        "'aiplatform.googleapis.com' for consumer 'project_number:0'.")
    if fault.kind == "permission":
        account = spec_of(job).service_account if job is not None else ""
        who = account or "the Vertex AI Custom Code Service Agent"
        return RpcError(grpc.StatusCode.PERMISSION_DENIED,
                        f"Permission 'iam.serviceAccounts.actAs' denied on service account {who} "
                        "(or it may not exist).")
    if fault.kind == "internal":
        return RpcError(grpc.StatusCode.INTERNAL, "Internal error encountered.")
    if fault.kind in ("deadline-after-commit", "deadline-commit-late"):
        return RpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
    return RpcError(grpc.StatusCode.UNAVAILABLE, "The service is currently unavailable.")

