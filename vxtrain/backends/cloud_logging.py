"""Reading log entries: ``google.cloud.logging_v2``'s GAPIC ``LoggingServiceV2Client``.

The ``LogReader`` of the seam (vxtrain.backends.base). One class serves both
targets, like the job backend:

* Cloud Logging: ``logging.googleapis.com`` (a global endpoint, whatever the
  job's region) with Application Default Credentials;
* an emulator at ``HOST:PORT``: the same client over an insecure gRPC channel
  with anonymous credentials (``vxtrain emulator`` serves LoggingServiceV2 on
  its JobService port).

This module imports google-cloud-logging at its top: only
vxtrain.backends.open_log_reader imports it, on the logs path; validate and plan never do.
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.services.logging_service_v2.transports.grpc import LoggingServiceV2GrpcTransport
from google.protobuf import json_format

from vxtrain import errors
from vxtrain.backends.base import MAX_PAGE_SIZE, EntryDict
from vxtrain.backends.vertex import DEFAULT_TIMEOUT, check_guard, gapic_client, guarded, split_endpoint

#: Cloud Logging's API endpoint (https://cloud.google.com/logging/docs/reference/v2/rpc).
LOGGING_HOST = "logging.googleapis.com"

_VIEWER_HELP = "https://cloud.google.com/logging/docs/access-control"


class CloudLoggingReader:
    """``base.LogReader`` over ``logging_v2``'s ``LoggingServiceV2Client``."""

    def __init__(self, endpoint: str | None = None, *, timeout: float = DEFAULT_TIMEOUT,
                 credentials: Any = None) -> None:
        self.endpoint = endpoint
        self.emulated = endpoint is not None
        self.timeout = timeout
        self.calls = 0  # ListLogEntries requests made (each page is one)
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
                            endpoint=self.endpoint, credentials=self._credentials)

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

    def close(self) -> None:
        """Close the gRPC channel (idempotent)."""
        if self._client_obj is not None:
            self._client_obj.transport.close()
        self._client_obj = None


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

