"""Reading log entries: ``google.cloud.logging_v2``'s GAPIC ``LoggingServiceV2Client``.

The ``LogReader`` of the seam (vxtrain.backends.base). One class serves both
targets, like the job backend:

* Cloud Logging: ``logging.googleapis.com`` (a global endpoint, whatever the
  job's region) with Application Default Credentials;
* an emulator at ``HOST:PORT``: the same client over the emulator's channel
  (vxtrain.backends.vertex.emulator_channel: its private socket, with its token) and
  anonymous credentials (``vxtrain emulator`` serves LoggingServiceV2 on its JobService port).

``tail`` opens Cloud Logging's TailLogEntries (live tailing: one stream of a
query's entries as they are received, instead of a ListLogEntries call every few
seconds) with google-api-core's ``bidi.BidiRpc`` over the GAPIC transport's stub,
as gcloud's ``logging tail`` does: the GAPIC method itself waits for the stream's
first response before it returns, which a stream that stays quiet may never send,
and could not be closed while it waits.

This module imports google-cloud-logging at its top: only
vxtrain.backends.open_log_reader imports it, on the logs path; validate and plan never do.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
from google.api_core import bidi
from google.api_core import exceptions as gexc
from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.services.logging_service_v2.transports.grpc import LoggingServiceV2GrpcTransport
from google.cloud.logging_v2.types import logging as lg
from google.protobuf import json_format

from vxtrain import errors
from vxtrain.backends.base import MAX_PAGE_SIZE, MAX_TAIL_SESSIONS, EntryDict, TailBatch
from vxtrain.backends.vertex import DEFAULT_TIMEOUT, check_guard, gapic_client, guarded, split_endpoint, translate

#: Cloud Logging's API endpoint (https://cloud.google.com/logging/docs/reference/v2/rpc).
LOGGING_HOST = "logging.googleapis.com"

_VIEWER_HELP = "https://cloud.google.com/logging/docs/access-control"


class CloudLoggingReader:
    """``base.LogReader`` over ``logging_v2``'s ``LoggingServiceV2Client``."""

    def __init__(self, endpoint: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Any = None, token: str | None = None) -> None:
        self.endpoint = endpoint
        #: The emulator's token when the caller has it in hand (else found for the port).
        self.token = token
        self.emulated = endpoint is not None
        self.timeout = timeout
        self.calls = 0  # ListLogEntries requests made (each page is one)
        self.tails = 0  # TailLogEntries streams opened
        self._open_tails: set[CloudLogTail] = set()
        self._tails_lock = threading.Lock()
        self._credentials = credentials
        self._host = split_endpoint(endpoint)[0] if endpoint else LOGGING_HOST
        self._client_obj: Any = None

    def __repr__(self) -> str:
        return f"CloudLoggingReader({'emulator ' + (self.endpoint or '') if self.emulated else self._host})"

    def _client(self) -> Any:
        if self._client_obj is None:
            check_guard(self._host)
            self._client_obj = self._guarded(self._make_client)
        return self._client_obj

    def _make_client(self) -> Any:
        return gapic_client(LoggingServiceV2Client, LoggingServiceV2GrpcTransport, host=self._host,
                            endpoint=self.endpoint, credentials=self._credentials, token=self.token)

    def _guarded(self, call: Callable[[], Any]) -> Any:
        return guarded(call, host=self._host, explain=_explain)

    def list_entries(self, project: str, filter: str, *, order_by: str = "timestamp asc",  # noqa: A002
                     page_size: int = MAX_PAGE_SIZE) -> Iterator[EntryDict]:
        """Every matching entry, all pages; see base.LogReader."""
        client = self._client()
        request = {"resource_names": [f"projects/{project}"], "filter": filter, "order_by": order_by,
                   "page_size": page_size}
        # retry=None: the caller decides (a follower backs off rather than hammering a quota).
        pager = self._guarded(lambda: client.list_log_entries(request=request, retry=None, timeout=self.timeout))
        pages = iter(pager.pages)
        while True:
            page = self._guarded(lambda: next(pages, None))
            if page is None:
                return
            self.calls += 1
            for entry in page.entries:
                yield json_format.MessageToDict(type(entry).pb(entry))

    def tail(self, project: str, filter: str) -> CloudLogTail:  # noqa: A002
        """Open a TailLogEntries stream; see base.LogReader."""
        client = self._client()
        request = lg.TailLogEntriesRequest(resource_names=[f"projects/{project}"], filter=filter)
        # The transport's stub, not the wrapped GAPIC method: that one blocks until the first
        # response (see the module's docstring). No deadline: Cloud Logging ends a session
        # itself after an hour (OUT_OF_RANGE), and the follower opens the next.
        rpc = bidi.BidiRpc(client.transport.tail_log_entries,  # type: ignore[no-untyped-call]  # api_core's bidi is unannotated
                           initial_request=request)
        self._guarded(rpc.open)
        self.tails += 1
        tail = CloudLogTail(rpc, self)
        with self._tails_lock:
            self._open_tails.add(tail)
        return tail

    def _closed_tail(self, tail: CloudLogTail) -> None:
        with self._tails_lock:
            self._open_tails.discard(tail)

    def close(self) -> None:
        """End the open tail streams and close the gRPC channel (idempotent)."""
        with self._tails_lock:
            tails = list(self._open_tails)
        for tail in tails:
            tail.close()
        if self._client_obj is not None:
            self._client_obj.transport.close()
        self._client_obj = None


class CloudLogTail:
    """One TailLogEntries stream (``base.LogTail``) over google-api-core's ``BidiRpc``."""

    def __init__(self, rpc: bidi.BidiRpc, reader: CloudLoggingReader) -> None:
        self._rpc = rpc
        self._reader = reader
        self._closed = threading.Event()

    def batches(self) -> Iterator[TailBatch]:
        """The stream's responses until it ends; see base.LogTail."""
        while not self._closed.is_set():
            try:
                response = self._rpc.recv()  # type: ignore[no-untyped-call]  # unannotated
            except StopIteration:  # the server ended the stream: a new session goes on
                return
            except (grpc.RpcError, ValueError) as exc:  # ValueError: recv() after close()
                if self._closed.is_set():
                    return
                if isinstance(exc, grpc.RpcError) and exc.code() == grpc.StatusCode.OUT_OF_RANGE:
                    return  # the session ran its maximum duration (an hour): a new one goes on
                raise _tail_error(exc, self._reader._host) from exc
            yield TailBatch([json_format.MessageToDict(type(e).pb(e)) for e in response.entries],
                            sum(info.suppressed_count for info in response.suppression_info))

    def close(self) -> None:
        """Cancel the stream (idempotent, from any thread)."""
        if not self._closed.is_set():
            self._closed.set()
            self._rpc.close()  # type: ignore[no-untyped-call]  # unannotated
            self._reader._closed_tail(self)


def _tail_error(exc: BaseException, host: str) -> errors.ApiError:
    """A broken or refused stream as vxtrain's error, worded for live tailing."""
    api_exc: BaseException = (gexc.from_grpc_error(exc)  # type: ignore[no-untyped-call]  # unannotated
                              if isinstance(exc, grpc.RpcError) else exc)
    return _explain_tail(translate(api_exc, host=host), api_exc)


def _explain_tail(mapped: errors.ApiError, exc: BaseException) -> errors.ApiError:
    """The tail stream's errors: a RESOURCE_EXHAUSTED here is the tail-session limit."""
    message = str(getattr(exc, "message", None) or exc).strip()
    if isinstance(mapped, errors.QuotaError):
        return mapped.reworded(f"Cloud Logging refused a live-tailing session: {message} (at most "
                               f"{MAX_TAIL_SESSIONS} open sessions per project, "
                               "https://cloud.google.com/logging/quotas)")
    return _explain(mapped, exc)


def _explain(mapped: errors.ApiError, exc: BaseException) -> errors.ApiError:
    """The job API's translation (one table of error classes), worded for Cloud Logging."""
    message = str(getattr(exc, "message", None) or exc).strip()
    kind = type(exc).__name__
    if isinstance(mapped, errors.QuotaError):
        text = (f"Cloud Logging read quota exceeded: {message} (entries.list: 60 requests per minute "
                f"per project, https://cloud.google.com/logging/quotas#api-limits)")
    elif isinstance(mapped, errors.PermissionError_) and kind not in ("Unauthenticated", "Unauthorized"):
        text = f"permission denied reading logs: {message}; the caller needs roles/logging.viewer ({_VIEWER_HELP})"
    elif isinstance(mapped, errors.PermissionError_):
        text = str(mapped)
    else:
        text = f"Cloud Logging ({kind}): {message}"
    return mapped.reworded(text)


def connect_logs(endpoint: str | None = None, **kwargs: Any) -> CloudLoggingReader:
    """A reader for Cloud Logging, or for the emulator at ``endpoint``."""
    return CloudLoggingReader(endpoint, **kwargs)

