"""The gRPC face of ``google.cloud.aiplatform.v1.JobService``.

Create/Get/List/Cancel/Delete of CustomJob and HyperparameterTuningJob are
served over the :class:`~vxtrain.backends.emulator.store.Emulator`; every other
JobService method answers UNIMPLEMENTED.

There is no generated ``*_pb2_grpc`` module for JobService in
google-cloud-aiplatform (its GAPIC transport builds the stubs itself with
``channel.unary_unary("/google.cloud.aiplatform.v1.JobService/...")``), so the
handlers are registered with ``grpc.method_handlers_generic_handler`` using the
proto-plus classes' ``serialize`` / ``deserialize``.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import job_service as js
from google.protobuf import empty_pb2

from vxtrain.backends.base import LOCAL_METADATA, LocalRun
from vxtrain.backends.emulator.common import Call, Service
from vxtrain.backends.emulator.store import Emulator
from vxtrain.vocab.kinds import CUSTOM, TUNING, JobKind

SERVICE = "google.cloud.aiplatform.v1.JobService"


@dataclass(frozen=True)
class Method:
    """One served RPC: its fault key, request class and action."""

    fault: str
    request: Any
    action: Callable[[Emulator, Any], Any]
    job: Callable[[Any], Any] = lambda request: None


def _list_custom(emu: Emulator, req: Any) -> js.ListCustomJobsResponse:
    jobs, token = emu.list(CUSTOM, req.parent, req.filter, req.page_size, req.page_token)
    return js.ListCustomJobsResponse(custom_jobs=jobs, next_page_token=token)


def _list_hpt(emu: Emulator, req: Any) -> js.ListHyperparameterTuningJobsResponse:
    jobs, token = emu.list(TUNING, req.parent, req.filter, req.page_size, req.page_token)
    return js.ListHyperparameterTuningJobsResponse(hyperparameter_tuning_jobs=jobs, next_page_token=token)


def _cancel(kind: JobKind) -> Callable[[Emulator, Any], empty_pb2.Empty]:
    """The Cancel RPC of ``kind``: it answers google.protobuf.Empty."""
    def action(emu: Emulator, req: Any) -> empty_pb2.Empty:
        emu.cancel(kind, req.name)
        return empty_pb2.Empty()
    return action


METHODS: dict[str, Method] = {
    "CreateCustomJob": Method("create", js.CreateCustomJobRequest,
                              lambda e, r: e.create(CUSTOM, r.parent, r.custom_job), lambda r: r.custom_job),
    "GetCustomJob": Method("get", js.GetCustomJobRequest, lambda e, r: e.get(CUSTOM, r.name)),
    "ListCustomJobs": Method("list", js.ListCustomJobsRequest, _list_custom),
    "CancelCustomJob": Method("cancel", js.CancelCustomJobRequest, _cancel(CUSTOM)),
    "DeleteCustomJob": Method("delete", js.DeleteCustomJobRequest,
                              lambda e, r: e.delete(CUSTOM, r.name)),
    "CreateHyperparameterTuningJob": Method(
        "create", js.CreateHyperparameterTuningJobRequest,
        lambda e, r: e.create(TUNING, r.parent, r.hyperparameter_tuning_job), lambda r: r.hyperparameter_tuning_job),
    "GetHyperparameterTuningJob": Method("get", js.GetHyperparameterTuningJobRequest,
                                         lambda e, r: e.get(TUNING, r.name)),
    "ListHyperparameterTuningJobs": Method("list", js.ListHyperparameterTuningJobsRequest, _list_hpt),
    "CancelHyperparameterTuningJob": Method("cancel", js.CancelHyperparameterTuningJobRequest,
                                            _cancel(TUNING)),
    "DeleteHyperparameterTuningJob": Method("delete", js.DeleteHyperparameterTuningJobRequest,
                                            lambda e, r: e.delete(TUNING, r.name)),
}


def service(emulator: Emulator) -> Service:
    """JobService over ``emulator``: the RPCs in METHODS, as gRPC and REST both serve them."""
    return Service(SERVICE, {name: (m.request, _call(emulator, m)) for name, m in METHODS.items()})


def generic_handler(emulator: Emulator) -> grpc.GenericRpcHandler:
    """The JobService handlers; methods not in METHODS answer UNIMPLEMENTED."""
    return service(emulator).grpc_handler()


def _call(emulator: Emulator, method: Method) -> Call:
    """One RPC of ``method``, under the fault plan."""
    def call(request: Any, metadata: Mapping[str, str]) -> Any:
        job = method.job(request)
        if job is not None and LOCAL_METADATA in metadata:
            _register_local(emulator, job, metadata[LOCAL_METADATA])
        return emulator.call(method.fault, lambda: method.action(emulator, request), job)
    return call


def _register_local(emulator: Emulator, job: Any, text: str) -> None:
    """A create that says how to run its job on this host (vxtrain's submit does, for the
    spec's ``local:`` block and folder): jobs with its labels run so. Registered before
    the create, whose job starts at once; a create with no labels cannot be told apart."""
    local = LocalRun.from_metadata(text)
    if local is not None and job.labels:
        emulator.register_local(dict(job.labels), local.local, base_dir=local.base_dir)
