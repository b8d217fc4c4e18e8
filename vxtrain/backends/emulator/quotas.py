"""The emulator's Cloud Quotas API (``google.api.cloudquotas.v1.CloudQuotas``) and the
quota limits it enforces when a job is created.

Served: ListQuotaInfos (paged) and GetQuotaInfo (every other method answers
UNIMPLEMENTED), so the unmodified ``cloudquotas_v1.CloudQuotasClient`` reads
limits here as from ``cloudquotas.googleapis.com``
(https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos).
The limits are the ones given (``--quota METRIC:REGION=N``, ``METRIC=N`` for
every region), for any project; only those are listed.

A create whose job alone needs more of a metric than its limit in the job's
region is refused as Vertex AI refuses it: RESOURCE_EXHAUSTED "The following
quota metrics exceed quota limits: aiplatform.googleapis.com/METRIC"
(google-deepmind/xmanager#29, GoogleCloudPlatform/stable-diffusion-on-gcp#12).
Jobs already alive are not counted: on Vertex AI a job that fits the limit but
not beside the others waits QUEUED ("Vertex AI keeps the job queued until you have
sufficient quotas", https://cloud.google.com/vertex-ai/docs/training/understanding-training-service);
docs/decisions.md, "Quota preflight (issue 20)". The needs are
vxtrain.planning.quota's, the ones the preflight reads (one home).

A need whose metric no catalog row names counts against the name its documented
pattern gives (``custom_model_training_preemptible_nvidia_a100_gpus`` …) when a
``--quota`` serves that name: the project's quota, as the preflight confirms it
from ListQuotaInfos.

What differs from the service: a metric with no quota ID in the catalog gets its
short metric name as ID (the emulator's stand-in); usage is never served (the
API has none).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.cloud.cloudquotas_v1.types import cloudquotas as cq
from google.cloud.cloudquotas_v1.types import resources as cqr
from google.protobuf import json_format

from vxtrain import catalog
from vxtrain.backends.emulator.common import Call, RpcError, Service, decode_cursor, encode_cursor
from vxtrain.backends.emulator.faults import FaultPlan, fault_error, quota_refusal
from vxtrain.backends.emulator.filters import DEFAULT_PAGE_SIZE
from vxtrain.errors import UsageError
from vxtrain.planning.quota import needs

SERVICE = "google.api.cloudquotas.v1.CloudQuotas"
#: The fault method of both RPCs (``--fault quotas:permission:1``).
FAULT_METHOD = "quotas"
_PARENT = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/services/(?P<service>[^/]+)$")
_NAME = re.compile(r"^(?P<parent>projects/[^/]+/locations/[^/]+/services/[^/]+)/quotaInfos/(?P<id>[^/]+)$")
_QUOTA = re.compile(r"^(?P<metric>[A-Za-z0-9_./-]+?)(?::(?P<region>[a-z0-9-]+))?=(?P<value>[0-9]+)$")


@dataclass(frozen=True)
class QuotaLimit:
    """A limit the emulator serves: ``metric`` (short name) in ``region`` (None: every region)."""

    metric: str
    region: str | None
    value: int


def parse_quota(text: str) -> QuotaLimit:
    """``custom_model_training_nvidia_a100_gpus:us-central1=8`` (or ``METRIC=N``, every region)
    → QuotaLimit; anything else is a UsageError naming the form."""
    found = _QUOTA.match(text.strip())
    if not found:
        raise UsageError(f"--quota takes METRIC:REGION=N (e.g. custom_model_training_nvidia_a100_gpus:us-central1=8),"
                         f" or METRIC=N for every region; got {text!r}")
    metric = found.group("metric").removeprefix(f"{catalog.QUOTA_SERVICE}/")
    return QuotaLimit(metric, found.group("region"), int(found.group("value")))


def unmatched(limit: QuotaLimit) -> str | None:
    """Why ``limit`` can never refuse a job (its metric is not one a job's needs count
    against: a typo, say), or None when it can."""
    if limit.metric in catalog.known_metrics() or limit.metric in catalog.candidate_metrics():
        return None  # a pattern's name (docs/capacity.md): served, so the project's answer lists it
    return (f"--quota {limit.metric}: no job counts against this metric (it is not in vxtrain's quota table), "
            f"so it is served but never enforced; known: {', '.join(sorted(catalog.known_metrics()))}")


def quota_id_of(metric: str) -> str:
    """The quota ID the emulator serves a metric under: the catalog's, else the metric's short name."""
    return catalog.quota_id(metric) or metric


class QuotaStore:
    """The limits the emulator serves and enforces, by (metric, region) (thread-safe)."""

    def __init__(self, limits: Iterable[QuotaLimit | str] = ()) -> None:
        self._lock = threading.Lock()
        self._limits: dict[tuple[str, str | None], int] = {}
        for limit in limits:
            self.set(limit)

    def set(self, limit: QuotaLimit | str) -> None:
        """Serve ``limit`` (a QuotaLimit or its ``METRIC:REGION=N`` text), replacing the same one."""
        parsed = parse_quota(limit) if isinstance(limit, str) else limit
        with self._lock:
            self._limits[(parsed.metric, parsed.region)] = parsed.value

    def limit(self, metric: str, region: str) -> int | None:
        """The limit of ``metric`` (short name) in ``region``: the region's own, else the every-region one."""
        with self._lock:
            found = self._limits.get((metric, region))
            return found if found is not None else self._limits.get((metric, None))

    def infos(self, project: str) -> list[cqr.QuotaInfo]:
        """One QuotaInfo per metric with a limit, sorted by metric."""
        with self._lock:
            metrics = sorted({metric for metric, _ in self._limits})
            return [self._info(project, metric) for metric in metrics]

    def info(self, name: str) -> cqr.QuotaInfo:
        """The QuotaInfo called ``name``; NOT_FOUND when no served metric has that ID."""
        found = _NAME.match(name or "")
        if not found:
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid QuotaInfo name {name!r}: expected "
                           "projects/{project}/locations/global/services/{service}/quotaInfos/{quota_id}.")
        project, service = _parse_parent(found.group("parent"))
        for info in self.infos(project) if service == catalog.QUOTA_SERVICE else ():
            if info.quota_id == found.group("id"):
                return info
        raise RpcError(grpc.StatusCode.NOT_FOUND, f"QuotaInfo {name} not found.")

    def _info(self, project: str, metric: str) -> cqr.QuotaInfo:
        """``metric``'s QuotaInfo; region entries first, the every-region one last ("ordered
        by their dimensions from more specific ones to less specific ones")."""
        quota_id = quota_id_of(metric)
        entries = sorted(((region, value) for (m, region), value in self._limits.items() if m == metric),
                         key=lambda entry: (entry[0] is None, entry[0] or ""))
        dimensions = [cqr.DimensionsInfo(dimensions={"region": region} if region else {},
                                         details=cqr.QuotaDetails(value=value),
                                         applicable_locations=[region] if region else [])
                      for region, value in entries]
        return cqr.QuotaInfo(
            name=f"projects/{project}/locations/global/services/{catalog.QUOTA_SERVICE}/quotaInfos/{quota_id}",
            quota_id=quota_id, metric=f"{catalog.QUOTA_SERVICE}/{metric}", service=catalog.QUOTA_SERVICE,
            is_precise=True, container_type=cqr.QuotaInfo.ContainerType.PROJECT, dimensions=["region"],
            metric_display_name=metric, quota_display_name=quota_id, metric_unit="1",
            dimensions_infos=dimensions)

    def exceeded(self, job: Any, region: str) -> list[str]:
        """The metrics (full names) whose limit in ``region`` the job alone needs more of; a
        need no catalog row names counts against its pattern's name where that is served
        here (the project's quota, as the preflight reads it from ListQuotaInfos)."""
        data = json_format.MessageToDict(type(job).pb(job))
        out = []
        for need in needs(data):
            metric = need.metric or need.candidate
            limit = self.limit(metric.rpartition("/")[2], region) if metric else None
            if metric and need.needed is not None and limit is not None and need.needed > limit:
                out.append(metric)
        return out

    def check_create(self, job: Any, region: str) -> None:
        """RESOURCE_EXHAUSTED, in Vertex AI's words, when the job alone exceeds a limit in ``region``."""
        over = self.exceeded(job, region)
        if over:
            raise quota_refusal(over)


def _parse_parent(parent: str) -> tuple[str, str]:
    """``projects/P/locations/global/services/S`` → (P, S); INVALID_ARGUMENT otherwise
    (QuotaInfo's name: "The ID component following 'locations/' must be 'global'")."""
    found = _PARENT.match(parent or "")
    if not found or found.group("location") != "global":
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid parent {parent!r}: expected projects/{{project}}/locations/global/services/{{service}}.")
    return found.group("project"), found.group("service")


def _list(store: QuotaStore, request: cq.ListQuotaInfosRequest) -> cq.ListQuotaInfosResponse:
    """One page of the QuotaInfos of the parent's service (none for a service other than Vertex AI's)."""
    project, service = _parse_parent(request.parent)
    infos = store.infos(project) if service == catalog.QUOTA_SERVICE else []
    after = decode_cursor("after", request.page_token)
    start = after + 1 if after is not None else 0
    size = request.page_size if request.page_size > 0 else DEFAULT_PAGE_SIZE
    page = infos[start:start + size]
    more = start + size < len(infos)
    return cq.ListQuotaInfosResponse(quota_infos=page,
                                     next_page_token=encode_cursor("after", start + size - 1) if more else "")


def service(store: QuotaStore, faults: FaultPlan) -> Service:
    """CloudQuotas over ``store`` (ListQuotaInfos, GetQuotaInfo) under the ``quotas`` faults,
    as gRPC and REST both serve it."""
    def under_faults(action: Callable[[Any], Any]) -> Call:
        def call(request: Any, metadata: Mapping[str, str]) -> Any:
            fault = faults.take(FAULT_METHOD)
            if fault is not None:
                raise fault_error(fault)
            return action(request)
        return call

    return Service(SERVICE, {
        "ListQuotaInfos": (cq.ListQuotaInfosRequest, under_faults(lambda r: _list(store, r))),
        "GetQuotaInfo": (cq.GetQuotaInfoRequest, under_faults(lambda r: store.info(r.name))),
    })


def generic_handler(store: QuotaStore, faults: FaultPlan) -> grpc.GenericRpcHandler:
    """The CloudQuotas handlers (ListQuotaInfos, GetQuotaInfo), under the ``quotas`` faults."""
    return service(store, faults).grpc_handler()
