"""The emulator's ``google.cloud.aiplatform.v1.PersistentResourceService``.

Served: CreatePersistentResource, GetPersistentResource, ListPersistentResources
and DeletePersistentResource (every other method answers UNIMPLEMENTED), so the
unmodified ``aiplatform_v1.PersistentResourceServiceClient`` creates, reads and
deletes resources here as on Vertex AI, and ``vxtrain submit`` checks a job
against one
(https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/persistent-resource-train).

What differs from the service, on purpose:

* Create and Delete answer a long-running operation that is already done (the
  client's ``.result()`` returns at once); a new resource is RUNNING at once,
  not PROVISIONING for minutes. A test that needs a resource in another state
  creates it with the label ``vxtrain_emulator_state`` (``provisioning``,
  ``stopping``, ``error``, ``rebooting``, ``updating``), or calls
  :meth:`ResourceStore.set_state`.
* Nothing is provisioned: ``used_replica_count`` stays 0, and jobs that name the
  resource run as any other emulated job. Deleting a resource cancels the
  unfinished jobs on it, as Vertex AI does ("if there are custom jobs running on
  the persistent resource when you delete it, those custom jobs are automatically
  cancelled", https://cloud.google.com/vertex-ai/docs/training/persistent-resource-delete).
* Pools without an ``id`` get ``pool-K`` (K their position): the service
  generates one in a form no page states.

The store lives on the :class:`~vxtrain.backends.emulator.store.Emulator`
(``emulator.resources``); the handlers are built like the JobService's
(``common.unary_handler``, the proto-plus classes' ``serialize``/``deserialize``).
"""
from __future__ import annotations

import itertools
import re
import threading
from collections.abc import Callable, Mapping
from typing import Any

import grpc
from google.cloud.aiplatform_v1.types import persistent_resource as pr
from google.cloud.aiplatform_v1.types import persistent_resource_service as prs
from google.rpc import status_pb2

from vxtrain.backends.emulator.checks import invalid_argument, machine_spec_problems, parse_parent
from vxtrain.backends.emulator.common import (
    Call, RpcError, Service, copy, decode_cursor, done_operation, encode_cursor, now, operation_id,
)
from vxtrain.backends.emulator.filters import DEFAULT_PAGE_SIZE
# CreatePersistentResourceRequest.persistent_resource_id's rule: the ID that submit and validate check.
from vxtrain.vocab.resources import PERSISTENT_RESOURCE_ID

SERVICE = "google.cloud.aiplatform.v1.PersistentResourceService"
#: The label that creates a resource in a state other than RUNNING (the emulator's, for tests).
STATE_LABEL = "vxtrain_emulator_state"
COLLECTION = "persistentResources"

State = pr.PersistentResource.State
RUNNING = State(State.RUNNING)
#: The states a resource can be created in with :data:`STATE_LABEL`.
STATES: dict[str, State] = {name.lower(): State(value) for name, value in State.__members__.items()
                            if name != "STATE_UNSPECIFIED"}

_NAME = re.compile(rf"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)/{COLLECTION}/(?P<id>[^/]+)$")


def check_id(resource_id: str, field: str = "persistent_resource_id") -> None:
    """INVALID_ARGUMENT unless ``resource_id`` is a valid persistent resource ID."""
    if not PERSISTENT_RESOURCE_ID.fullmatch(resource_id or ""):
        raise invalid_argument([(field, f"The ID {resource_id!r} is invalid: the maximum length is 63 characters, "
                                        f"and valid characters are /{PERSISTENT_RESOURCE_ID.pattern}/.")])


def parse_name(name: str) -> tuple[str, str, str]:
    """``projects/P/locations/L/persistentResources/ID`` → (P, L, ID); INVALID_ARGUMENT otherwise."""
    found = _NAME.match(name or "")
    if not found:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid PersistentResource name {name!r}: expected "
                       f"projects/{{project}}/locations/{{location}}/{COLLECTION}/{{persistent_resource_id}}.")
    check_id(found.group("id"), "name")
    return found.group("project"), found.group("location"), found.group("id")


def _pool_problems(pools: list[pr.ResourcePool]) -> list[tuple[str, str]]:
    """(field, message) for what the service refuses in ``resource_pools``: none at
    all, a machine type missing, an accelerator type without a count (or the
    reverse), no machine to start with, an autoscaling range that does not hold
    (ResourcePool's field docs: "min_replica_count must be ≤ replica_count and <
    max_replica_count … for Persistent Resource, the min_replica_count must be > 0")."""
    if not pools:
        return [("persistent_resource.resource_pools", "Required field is not set.")]
    out = []
    for i, pool in enumerate(pools):
        where = f"persistent_resource.resource_pools[{i}]"
        out += machine_spec_problems(pool.machine_spec, where)
        if "autoscaling_spec" in pool:
            low, high = pool.autoscaling_spec.min_replica_count, pool.autoscaling_spec.max_replica_count
            if low <= 0 or low >= high or (pool.replica_count and low > pool.replica_count):
                out.append((f"{where}.autoscaling_spec",
                            f"min_replica_count ({low}) must be > 0, at most replica_count "
                            f"({pool.replica_count}) and less than max_replica_count ({high})."))
        elif pool.replica_count <= 0:
            out.append((f"{where}.replica_count", "The replica count must be at least 1."))
    return out


class ResourceStore:
    """Persistent resources in memory, by name, in the order they were created (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._resources: dict[str, tuple[int, pr.PersistentResource]] = {}
        self._seq = itertools.count(1)

    def create(self, parent: str, resource_id: str, resource: pr.PersistentResource) -> pr.PersistentResource:
        """Store ``resource`` as ``parent/persistentResources/resource_id``; return the stored copy."""
        project, location = parse_parent(parent)
        check_id(resource_id)
        problems = _pool_problems(list(resource.resource_pools))
        state_label = resource.labels.get(STATE_LABEL, "running") if resource.labels else "running"
        if state_label not in STATES:
            problems.append((f"persistent_resource.labels.{STATE_LABEL}",
                             f"The emulator creates resources in one of {', '.join(sorted(STATES))}, "
                             f"not {state_label!r}."))
        if problems:
            raise invalid_argument(problems)
        stored = copy(resource)
        stored.name = f"projects/{project}/locations/{location}/{COLLECTION}/{resource_id}"
        for i, pool in enumerate(stored.resource_pools):
            if not pool.id:
                pool.id = f"pool-{i}"
        stamp = now()
        stored.create_time = stored.update_time = stamp
        with self._lock:
            if stored.name in self._resources:
                raise RpcError(grpc.StatusCode.ALREADY_EXISTS, f"PersistentResource {stored.name} already exists.")
            self._resources[stored.name] = (next(self._seq), stored)
            self._set(stored, STATES[state_label])
            return copy(stored)

    def get(self, name: str) -> pr.PersistentResource:
        """A copy of the resource ``name``; NOT_FOUND when there is none."""
        with self._lock:
            return copy(self._find(name))

    def page(self, parent: str, page_size: int, page_token: str) -> tuple[list[pr.PersistentResource], str]:
        """One page of the resources under ``parent``, oldest first, and the next page's token."""
        parse_parent(parent)
        after = decode_cursor("after", page_token)
        size = page_size if page_size > 0 else DEFAULT_PAGE_SIZE
        prefix = f"{parent}/{COLLECTION}/"
        with self._lock:
            matched = sorted((seq, r) for seq, r in self._resources.values()
                             if r.name.startswith(prefix) and (after is None or seq > after))
            page = [copy(r) for _, r in matched[:size]]
        return page, encode_cursor("after", matched[size - 1][0]) if len(matched) > size else ""

    def delete(self, name: str) -> pr.PersistentResource:
        """Remove the resource ``name`` and return it; NOT_FOUND when there is none."""
        with self._lock:
            resource = self._find(name)
            del self._resources[name]
            return resource

    def set_state(self, name: str, state: str | State) -> None:
        """Put the resource ``name`` in ``state`` (a :data:`STATES` key or a State): for tests."""
        with self._lock:
            self._set(self._find(name), STATES[state.lower()] if isinstance(state, str) else state)

    def resources(self) -> list[pr.PersistentResource]:
        """Copies of every stored resource, oldest first."""
        with self._lock:
            return [copy(r) for _, r in sorted(self._resources.values())]

    def _find(self, name: str) -> pr.PersistentResource:
        parse_name(name)
        found = self._resources.get(name)
        if found is None:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"PersistentResource {name} does not exist.")
        return found[1]

    @staticmethod
    def _set(resource: pr.PersistentResource, state: State) -> None:
        stamp = now()
        resource.state = state
        resource.update_time = stamp
        if state == RUNNING and "start_time" not in resource:
            resource.start_time = stamp
        if state == State.ERROR:
            resource.error = status_pb2.Status(code=grpc.StatusCode.INTERNAL.value[0],
                                               message=f"The emulator put {resource.name} in state ERROR.")


def _create(store: ResourceStore, request: prs.CreatePersistentResourceRequest) -> Any:
    resource = store.create(request.parent, request.persistent_resource_id, request.persistent_resource)
    stamp = now()
    metadata = prs.CreatePersistentResourceOperationMetadata(
        generic_metadata={"create_time": stamp, "update_time": stamp}, progress_message="Created.")
    return done_operation(f"{resource.name}/operations/{operation_id()}", resource, metadata)


def _list(store: ResourceStore, request: prs.ListPersistentResourcesRequest) -> prs.ListPersistentResourcesResponse:
    resources, token = store.page(request.parent, request.page_size, request.page_token)
    return prs.ListPersistentResourcesResponse(persistent_resources=resources, next_page_token=token)


def service(store: ResourceStore, on_delete: Callable[[str], None] = lambda name: None) -> Service:
    """PersistentResourceService over ``store``, as gRPC and REST both serve it; ``on_delete(name)``
    runs after a resource is deleted (the emulator cancels the jobs still running on it)."""
    def delete(request: prs.DeletePersistentResourceRequest) -> Any:
        resource = store.delete(request.name)
        on_delete(resource.name)
        return done_operation(f"{resource.name}/operations/{operation_id()}")

    actions: dict[str, tuple[Any, Callable[[Any], Any]]] = {
        "CreatePersistentResource": (prs.CreatePersistentResourceRequest, lambda r: _create(store, r)),
        "GetPersistentResource": (prs.GetPersistentResourceRequest, lambda r: store.get(r.name)),
        "ListPersistentResources": (prs.ListPersistentResourcesRequest, lambda r: _list(store, r)),
        "DeletePersistentResource": (prs.DeletePersistentResourceRequest, delete),
    }
    return Service(SERVICE, {name: (request, _ignoring_metadata(action))
                             for name, (request, action) in actions.items()})


def generic_handler(store: ResourceStore, on_delete: Callable[[str], None] = lambda name: None,
                    ) -> grpc.GenericRpcHandler:
    """The PersistentResourceService handlers over ``store`` (:func:`service`)."""
    return service(store, on_delete).grpc_handler()


def _ignoring_metadata(action: Callable[[Any], Any]) -> Call:
    return lambda request, metadata: action(request)
