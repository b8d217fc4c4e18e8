"""What every part of the emulator shares: the error its RPCs answer with, the
job states it walks through (as ``JobState`` members), page tokens (cursors, not
offsets) and message helpers. The job kinds and which states are terminal are
the seam's (:mod:`vxtrain.vocab.kinds`), shared with the client."""
from __future__ import annotations

import base64
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, TypeVar

import grpc
import proto
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hpt
from google.cloud.aiplatform_v1.types import operation as op_types
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2

from vxtrain.vocab.kinds import TERMINAL_STATES as TERMINAL_STATE_NAMES

# proto-plus publishes no type information, so mypy sees JobState's members as
# plain ints (the class derives from an untyped base). JobState(member) is the
# member itself at runtime and a JobState to mypy: the states used here, typed once.
QUEUED = JobState(JobState.JOB_STATE_QUEUED)
PENDING = JobState(JobState.JOB_STATE_PENDING)
RUNNING = JobState(JobState.JOB_STATE_RUNNING)
SUCCEEDED = JobState(JobState.JOB_STATE_SUCCEEDED)
FAILED = JobState(JobState.JOB_STATE_FAILED)
CANCELLING = JobState(JobState.JOB_STATE_CANCELLING)
CANCELLED = JobState(JobState.JOB_STATE_CANCELLED)
EXPIRED = JobState(JobState.JOB_STATE_EXPIRED)
PARTIALLY_SUCCEEDED = JobState(JobState.JOB_STATE_PARTIALLY_SUCCEEDED)
#: :data:`vxtrain.vocab.kinds.TERMINAL_STATES` as JobState members.
TERMINAL_STATES: frozenset[JobState] = frozenset(JobState(getattr(JobState, name)) for name in TERMINAL_STATE_NAMES)


class RpcError(Exception):
    """A gRPC status the emulator answers with (code + Vertex-like message)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def unary_handler(call: Callable[[Any, Mapping[str, str]], Any], request: Any,
                  serialize: Callable[[Any], bytes]) -> grpc.RpcMethodHandler:
    """A unary-unary gRPC handler answering ``call(request, metadata)`` (the call's
    metadata, key → value); an RpcError becomes its status.

    Every emulated service builds its handlers with this, so they all report
    errors the same way.
    """
    def handle(message: Any, context: grpc.ServicerContext) -> Any:
        metadata = {str(k): str(v) for k, v in context.invocation_metadata() or ()}
        try:
            return call(message, metadata)
        except RpcError as exc:
            context.abort(exc.code, exc.message)
    return grpc.unary_unary_rpc_method_handler(handle, request_deserializer=request.deserialize,
                                               response_serializer=serialize)


#: One RPC's implementation: ``(request, metadata) -> response``, raising RpcError.
Call = Callable[[Any, Mapping[str, str]], Any]


@dataclass(frozen=True)
class Service:
    """One emulated Google API service: its full name and its unary RPCs (name → request
    class, call). The gRPC handler and the REST routes (vxtrain.backends.emulator.rest)
    are both built from it, so each RPC has one implementation whichever transport asks."""

    name: str
    rpcs: Mapping[str, tuple[Any, Call]]

    def handlers(self) -> dict[str, grpc.RpcMethodHandler]:
        """The gRPC method handlers of :attr:`rpcs`, by RPC name."""
        return {name: unary_handler(call, request, serialize) for name, (request, call) in self.rpcs.items()}

    def grpc_handler(self) -> grpc.GenericRpcHandler:
        """The service's gRPC handler; RPCs not in :attr:`rpcs` answer UNIMPLEMENTED."""
        return grpc.method_handlers_generic_handler(self.name, self.handlers())


def serialize(message: Any) -> bytes:
    """The wire bytes of a response: a proto-plus message or a plain protobuf one
    (google.protobuf.Empty, google.longrunning.Operation)."""
    if isinstance(message, proto.Message):
        data: bytes = type(message).serialize(message)
        return data
    wire: bytes = message.SerializeToString()
    return wire


# --- messages ----------------------------------------------------------------

def spec_of(job: Any) -> Any:
    """The CustomJobSpec of a CustomJob or HyperparameterTuningJob."""
    return job.trial_job_spec if isinstance(job, hpt.HyperparameterTuningJob) else job.job_spec


def now() -> datetime:
    """The current time, as the emulator stamps jobs (UTC)."""
    return datetime.now(timezone.utc)


#: A proto-plus message class.
M = TypeVar("M")


def copy(message: M) -> M:
    """A deep copy of a proto-plus message (stored jobs are never handed out)."""
    cls: Any = type(message)  # proto-plus declares serialize/deserialize on its metaclass, untyped
    copied: M = cls.deserialize(cls.serialize(message))
    return copied


def operation_id() -> int:
    """A long-running operation's id, shaped like Vertex's (19 decimal digits)."""
    return 10**18 + secrets.randbelow(9 * 10**18)


def done_operation(name: str, response: Any = None, metadata: Any = None) -> operations_pb2.Operation:
    """A finished google.longrunning Operation called ``name``: its ``response`` a
    proto-plus message (default google.protobuf.Empty, what a delete answers), its
    ``metadata`` one too (default a DeleteOperationMetadata stamped now). The
    client's operation future then holds its result without polling."""
    stamp = now()
    if metadata is None:
        metadata = op_types.DeleteOperationMetadata(generic_metadata={"create_time": stamp, "update_time": stamp})
    packed_metadata, packed_response = any_pb2.Any(), any_pb2.Any()
    packed_metadata.Pack(type(metadata).pb(metadata))
    packed_response.Pack(empty_pb2.Empty() if response is None else type(response).pb(response))
    return operations_pb2.Operation(name=name, done=True, metadata=packed_metadata, response=packed_response)


def unquote(value: str) -> str:
    """A filter term's value without its double quotes and backslash escapes (as the
    Vertex AI and Cloud Logging filter languages both write strings); bare values as they are."""
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def encode_cursor(direction: str, seq: int) -> str:
    """A page cursor, not an offset: the next page starts ``direction`` ("before" or
    "after") the item numbered ``seq``, so items added or removed between two pages
    neither repeat nor vanish."""
    return base64.urlsafe_b64encode(f"{direction}:{seq}".encode()).decode()


def decode_cursor(direction: str, token: str) -> int | None:
    """The ``seq`` a :func:`encode_cursor` continues from (None: the first page)."""
    if not token:
        return None
    try:
        text = base64.urlsafe_b64decode(token.encode()).decode()
        if not text.startswith(f"{direction}:"):
            raise ValueError(text)
        return int(text.removeprefix(f"{direction}:"))
    except (ValueError, UnicodeDecodeError):
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid page_token {token!r}.") from None
