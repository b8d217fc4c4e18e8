"""The Vertex AI backend: ``google.cloud.aiplatform_v1.JobServiceClient`` (and its
``PersistentResourceServiceClient``, to read the persistent resource a job runs on;
and the Cloud Quotas API's ``cloudquotas_v1.CloudQuotasClient``, to read the
project's training quota limits).

One class serves both targets:

* Vertex AI: the regional endpoint ``{region}-aiplatform.googleapis.com``
  with Application Default Credentials
  (https://cloud.google.com/vertex-ai/docs/reference/rest#service-endpoint);
* an emulator at ``HOST:PORT`` (``vxtrain emulator``): the same client over a
  gRPC channel to the emulator's Unix socket in the user's private folder, which sends
  the emulator's bearer token (vxtrain.backends.tokens says where both are found, and
  why the token never goes over TCP).

Jobs go in and come out as REST-JSON dicts (``json_format.ParseDict`` /
``MessageToDict``); protos never leave this module. Every
``google.api_core.exceptions`` class is translated into ``vxtrain.errors``
here and nowhere else (``ERROR_MAP``; a test fails when one is missing).

This module imports google.cloud.aiplatform (about 0.75 s) at its top: only
vxtrain.backends.open_backend (and the log reader) import it, when a command talks
to an API; validate and plan never do (README, "Performance").
"""
from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from google.api_core import exceptions as gexc
from google.auth import exceptions as auth_exc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service import JobServiceClient
from google.cloud.aiplatform_v1.services.job_service.transports.grpc import JobServiceGrpcTransport
from google.cloud.aiplatform_v1.services.persistent_resource_service import PersistentResourceServiceClient
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports.grpc import (
    PersistentResourceServiceGrpcTransport)
from google.protobuf import json_format

from vxtrain import errors
from vxtrain.backends.base import LOCAL_METADATA, JobDict, JobList, LocalRun, QuotaInfoList, ResourceDict
from vxtrain.backends.tokens import find_token, how_to_give, own_socket
from vxtrain.vocab.kinds import JobKind

#: Set (to "1") by the test suite: any endpoint that is not loopback is refused.
NO_GOOGLE_ENV = "VXTRAIN_NO_GOOGLE"

#: Per-call deadline in seconds. Vertex answers create in a few seconds; retries
#: (google.api_core.retry, in vxtrain.submission) give the whole call more time.
DEFAULT_TIMEOUT = 60.0

_QUOTA_HELP = "https://cloud.google.com/vertex-ai/docs/quotas"
#: The Cloud Quotas API is global: one endpoint for every region
#: (https://cloud.google.com/docs/quotas/reference/rest#service-endpoint).
QUOTAS_HOST = "cloudquotas.googleapis.com"
#: The services' names in error messages: the Job API (jobs, persistent resources), Cloud Quotas.
JOB_API, QUOTAS_API = "the Job API", "the Cloud Quotas API"
_QUOTAS_PERMISSIONS_HELP = "https://cloud.google.com/docs/quotas/permissions"
_ACT_AS_HELP = "https://cloud.google.com/vertex-ai/docs/general/custom-service-account"
_QUOTA_METRIC = re.compile(r"[a-z0-9_.-]+\.googleapis\.com/[A-Za-z0-9_./-]+")
_REGION_IN_NAME = re.compile(r"(?:^|/)locations/([^/]+)")
#: How gRPC (c-ares or the native resolver) and libc word a name that does not resolve.
_UNRESOLVED = re.compile(r"DNS resolution failed|errors resolving|Domain name not found|"
                         r"Name or service not known|nodename nor servname|No address associated|"
                         r"hostname lookup error", re.IGNORECASE)


class GoogleEndpointBlocked(errors.UsageError):
    """A test tried to reach a Google endpoint while VXTRAIN_NO_GOOGLE=1."""


# --- error translation -------------------------------------------------------

#: google.api_core.exceptions class name → (vxtrain error class, transient).
#: Transient ones (the outcome of a create is unknown) are retried by callers;
#: The README's "Submitting exactly once" names UNAVAILABLE, DEADLINE_EXCEEDED and
#: INTERNAL. Keyed by name so this module imports nothing at load time.
ERROR_MAP: dict[str, tuple[type[errors.ApiError], bool]] = {
    # transient: retried with backoff, then UnavailableError
    "ServiceUnavailable": (errors.UnavailableError, True),
    "DeadlineExceeded": (errors.UnavailableError, True),
    "InternalServerError": (errors.UnavailableError, True),
    # server-side, not retried (the server says retrying will not help, or the
    # outcome is known): reported as unavailable
    "ServerError": (errors.UnavailableError, False),
    "GatewayTimeout": (errors.UnavailableError, False),
    "BadGateway": (errors.UnavailableError, False),
    "Unknown": (errors.UnavailableError, False),
    "DataLoss": (errors.UnavailableError, False),
    "Aborted": (errors.UnavailableError, False),
    "Cancelled": (errors.UnavailableError, False),
    "MethodNotImplemented": (errors.ApiError, False),
    # quota
    "ResourceExhausted": (errors.QuotaError, False),
    "TooManyRequests": (errors.QuotaError, False),
    # permission
    "PermissionDenied": (errors.PermissionError_, False),
    "Forbidden": (errors.PermissionError_, False),
    "Unauthenticated": (errors.PermissionError_, False),
    "Unauthorized": (errors.PermissionError_, False),
    # the request as sent is refused
    "InvalidArgument": (errors.InvalidArgumentError, False),
    "BadRequest": (errors.InvalidArgumentError, False),
    "FailedPrecondition": (errors.InvalidArgumentError, False),
    "OutOfRange": (errors.InvalidArgumentError, False),
    "AlreadyExists": (errors.InvalidArgumentError, False),
    "Conflict": (errors.InvalidArgumentError, False),
    "PreconditionFailed": (errors.InvalidArgumentError, False),
    "LengthRequired": (errors.InvalidArgumentError, False),
    "MethodNotAllowed": (errors.InvalidArgumentError, False),
    "RequestRangeNotSatisfiable": (errors.InvalidArgumentError, False),
    "ClientError": (errors.InvalidArgumentError, False),
    "NotFound": (errors.NotFoundError, False),
    # HTTP redirects and resumable-upload errors: not expected from gRPC
    "Redirection": (errors.ApiError, False),
    "MovedPermanently": (errors.ApiError, False),
    "NotModified": (errors.ApiError, False),
    "TemporaryRedirect": (errors.ApiError, False),
    "ResumeIncomplete": (errors.ApiError, False),
    "ResumableTransferError": (errors.ApiError, False),
    "MissingStatusHeaderError": (errors.ApiError, False),
    "TransferStalledError": (errors.ApiError, False),
    "UnseekableStreamError": (errors.ApiError, False),
    "UploadCancelledError": (errors.ApiError, False),
    "GoogleAPICallError": (errors.ApiError, False),
}


def translate(exc: BaseException, *, region: str | None = None, api: str = JOB_API,
              host: str | None = None) -> errors.ApiError:
    """The vxtrain error for a google.api_core exception, with a message that says what to do
    (``api``: the service's name in it; ``host``: the host called, named as unresolved when
    a transient error says its lookup failed, so that it is retried for a bounded time only)."""
    cls, transient = _lookup(type(exc))
    message = _server_message(exc)
    text = _explain(cls, type(exc).__name__, message, exc, region, api)
    if type(exc).__name__ in ("Unauthenticated", "Unauthorized") and host and is_loopback(host):
        text = _emulator_refused(message)
    unresolved = host if transient and _UNRESOLVED.search(str(exc)) else None
    return cls(text, transient=transient, unresolved_host=unresolved,
               timed_out=any(k.__name__ == "DeadlineExceeded" for k in type(exc).__mro__))


def _lookup(exc_type: type[BaseException]) -> tuple[type[errors.ApiError], bool]:
    """First ERROR_MAP entry along the MRO (a future subclass maps like its base)."""
    for klass in exc_type.__mro__:
        if klass.__module__ == "google.api_core.exceptions" and klass.__name__ in ERROR_MAP:
            return ERROR_MAP[klass.__name__]
    return errors.ApiError, False


def _server_message(exc: BaseException) -> str:
    message = getattr(exc, "message", None)
    return str(message if message else exc).strip()


def _explain(cls: type[errors.ApiError], kind: str, message: str, exc: BaseException,
             region: str | None, api: str) -> str:
    """The user-facing sentence for each class of error."""
    where = f" in {region}" if region else ""
    if cls is errors.QuotaError:
        metric = quota_metric(exc) or "a Vertex AI quota"
        said = message if metric in message else f"{metric} ({message})"
        return (f"quota exceeded{where}: {said}; request quota ({_QUOTA_HELP}) "
                f"or try another region/machine type")
    if cls is errors.PermissionError_:
        return _permission_text(kind, message)
    if cls is errors.InvalidArgumentError:
        return f"{api} refused the request ({kind}): {message}"
    if cls is errors.NotFoundError:
        return f"not found{where}: {message} (check the job name, project and region)"
    if cls is errors.UnavailableError:
        return f"{api} is unavailable{where} ({kind}): {message}; try again later"
    if kind == "MethodNotImplemented":
        return f"the endpoint does not implement this call: {message} (is it a Vertex AI JobService?)"
    return f"{api} failed ({kind}): {message}"


def _emulator_refused(message: str) -> str:
    """UNAUTHENTICATED from a loopback endpoint (an emulator; Vertex AI is never loopback)."""
    return f"the emulator refused the call: {message} {how_to_give()}."


def _permission_text(kind: str, message: str) -> str:
    if kind in ("Unauthenticated", "Unauthorized"):
        return (f"not authenticated: {message}; run `gcloud auth application-default login` "
                f"or set GOOGLE_APPLICATION_CREDENTIALS")
    return (f"permission denied: {message}; the caller needs roles/aiplatform.user on the "
            f"project, and to run the job as a service account, iam.serviceAccounts.actAs on it "
            f"(roles/iam.serviceAccountUser): {_ACT_AS_HELP}")


def quota_metric(exc: BaseException) -> str | None:
    """The quota metric a RESOURCE_EXHAUSTED names (error details first, then the text)."""
    for detail in getattr(exc, "details", None) or ():
        metadata = getattr(detail, "metadata", None)
        if metadata and metadata.get("quota_metric"):
            return str(metadata["quota_metric"])
        for violation in getattr(detail, "violations", ()) or ():
            # google.rpc.QuotaFailure.Violation: `quota_metric` is the metric;
            # `subject` is who hit it ("project:123"), a metric only when it looks like one.
            for text in (getattr(violation, "quota_metric", ""), getattr(violation, "subject", "")):
                if text and _QUOTA_METRIC.fullmatch(str(text)):
                    return str(text)
    found = _QUOTA_METRIC.search(_server_message(exc))
    return found.group(0) if found else None


def region_of(name: str) -> str | None:
    """``projects/p/locations/us-central1/...`` → ``us-central1``."""
    found = _REGION_IN_NAME.search(name)
    return found.group(1) if found else None


# --- endpoints and the guard -------------------------------------------------

def gapic_client(client_cls: Any, transport_cls: Any, *, host: str, endpoint: str | None,
                 credentials: Any = None, token: str | None = None) -> Any:
    """A GAPIC client (JobService, LoggingServiceV2…) for ``host`` with Application
    Default Credentials, or for the emulator at ``endpoint``: a channel that sends its
    bearer token (``token``, else the one found; :func:`emulator_channel`), which the real
    client talks to unchanged."""
    if endpoint is None:
        return client_cls(credentials=credentials, client_options={"api_endpoint": host})
    channel = emulator_channel(endpoint, token)
    # The channel carries the token: the client's own credentials are never asked for one.
    anonymous = AnonymousCredentials()  # type: ignore[no-untyped-call]  # google-auth's __init__ is unannotated
    return client_cls(transport=transport_cls(channel=channel, credentials=anonymous))


def emulator_channel(endpoint: str, token: str | None = None) -> grpc.Channel:
    """A gRPC channel to the emulator at ``endpoint`` that sends ``authorization: Bearer TOKEN``
    on every call, streams included (``token``: by default the one vxtrain.backends.tokens finds
    for its port).

    The token goes through the Unix socket of this user's emulator on that port only (in the
    user's private folder, checked: tokens.own_socket), never over TCP: another user may be
    listening on the port at the other loopback address (``localhost`` may reach ``::1``
    first), or on it after the emulator stopped. Without such a socket, and for an endpoint
    that is not loopback (``--allow-remote``: reach it through ``ssh -L``, so the token never
    crosses a network), the channel is plain TCP and carries no token, which the emulator refuses.
    gRPC sends call credentials over secure or local channels only: the socket gets
    ``local_channel_credentials`` (no TLS; the kernel vouches for the peer).
    """
    host, port = split_endpoint(endpoint)
    path = own_socket(port) if is_loopback(host) else None
    if path is None:
        return grpc.insecure_channel(endpoint)
    token = token or find_token(port)
    if token is None:
        return grpc.insecure_channel(f"unix:{path}")
    credentials = grpc.composite_channel_credentials(grpc.local_channel_credentials(grpc.LocalConnectionType.UDS),
                                                     grpc.access_token_call_credentials(token))
    return grpc.secure_channel(f"unix:{path}", credentials)


def guarded(call: Callable[[], Any], *, host: str, region: str | None = None, api: str = JOB_API,
            explain: Callable[[errors.ApiError, BaseException], errors.ApiError] | None = None) -> Any:
    """Run ``call``, translating every google.api_core / google.auth error into
    vxtrain.errors (``api``: the service's name in their messages; ``explain`` rewords a
    translated API error for its service)."""
    try:
        return call()
    except gexc.GoogleAPICallError as exc:
        mapped = translate(exc, region=region, api=api, host=host)
        raise (explain(mapped, exc) if explain else mapped) from exc
    except auth_exc.DefaultCredentialsError as exc:
        raise errors.PermissionError_(
            f"no Application Default Credentials: {exc}; run `gcloud auth "
            f"application-default login` or set GOOGLE_APPLICATION_CREDENTIALS") from exc
    except auth_exc.GoogleAuthError as exc:
        raise errors.PermissionError_(f"authentication failed: {exc}") from exc


def split_endpoint(endpoint: str) -> tuple[str, int]:
    """``HOST:PORT`` (or ``[::1]:PORT``) → (host, port); a usage error otherwise."""
    host, sep, port = endpoint.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not (port.isascii() and port.isdigit()) or not 0 < int(port) < 65536:
        raise errors.UsageError(f"--endpoint takes HOST:PORT (e.g. 127.0.0.1:8471), got {endpoint!r}")
    return host, int(port)


def is_loopback(host: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_guard(host: str) -> None:
    """Refuse a non-loopback host while the test suite's guard is on."""
    # Names under .invalid never resolve (RFC 6761): the tests' stand-in for a mistyped region.
    if os.environ.get(NO_GOOGLE_ENV) == "1" and not is_loopback(host) and not host.endswith(".invalid"):
        raise GoogleEndpointBlocked(
            f"refusing to reach {host}: {NO_GOOGLE_ENV}=1 (the test suite's guard); "
            f"use the emulator on 127.0.0.1, or mark the test allow_google")


def vertex_host(region: str) -> str:
    """The regional API endpoint; Vertex AI has no global one for jobs."""
    return f"{region}-aiplatform.googleapis.com"


# --- the backend ---------------------------------------------------------------

class VertexBackend:
    """``JobBackend`` over ``aiplatform_v1.JobServiceClient`` (Vertex AI or an emulator), and
    ``PersistentResourceServiceClient`` on the same endpoint for ``get_persistent_resource``."""

    def __init__(self, region: str | None = None, *, endpoint: str | None = None,
                 timeout: float = DEFAULT_TIMEOUT, credentials: Any = None, token: str | None = None) -> None:
        if endpoint is None and not region:
            raise errors.UsageError("a region is needed to reach Vertex AI: pass --region, set "
                                    "region: in the spec, or export CLOUD_ML_REGION")
        self.region = region
        self.endpoint = endpoint
        self.emulated = endpoint is not None
        #: The emulator's token its caller handed over (``--target local``'s private one), sent
        #: instead of the one found for the port (vxtrain.backends.tokens); None: found.
        self.token = token
        #: True for `--target local`'s in-process emulator: its jobs end with this process.
        self.in_process = False
        self.timeout = timeout
        self._credentials = credentials
        self._host = split_endpoint(endpoint)[0] if endpoint else vertex_host(region or "")
        #: The GAPIC clients made so far, by service ("jobs", "resources"): one channel each.
        self._clients: dict[str, Any] = {}

    def __repr__(self) -> str:
        target = f"emulator {self.endpoint}" if self.emulated else f"Vertex AI {self._host}"
        return f"VertexBackend({target})"

    # -- plumbing

    def _client(self, service: str = "jobs") -> Any:
        if service not in self._clients:
            check_guard(self._service_host(service))
            make = {"resources": self._make_resource_client, "quotas": self._make_quotas_client}.get(
                service, self._make_client)
            self._clients[service] = self._guarded(make, self.region)
        return self._clients[service]

    def _service_host(self, service: str) -> str:
        """The host a service's client talks to: the Cloud Quotas API's global one, or the
        regional Vertex AI endpoint (an emulator serves them all on its one port)."""
        return QUOTAS_HOST if service == "quotas" and not self.emulated else self._host

    def _make_client(self) -> Any:
        return gapic_client(JobServiceClient, JobServiceGrpcTransport, host=self._host,
                            endpoint=self.endpoint, credentials=self._credentials, token=self.token)

    def _make_resource_client(self) -> Any:
        # The same regional endpoint (or emulator) serves PersistentResourceService.
        return gapic_client(PersistentResourceServiceClient, PersistentResourceServiceGrpcTransport,
                            host=self._host, endpoint=self.endpoint, credentials=self._credentials, token=self.token)

    def _make_quotas_client(self) -> Any:
        # lazy: google-cloud-quotas costs +21 ms after aiplatform; only the quota preflight and
        # `vxtrain quota` need it (status, wait, cancel, list and logs never do)
        from google.cloud.cloudquotas_v1.services.cloud_quotas import client, transports

        return gapic_client(client.CloudQuotasClient, transports.CloudQuotasGrpcTransport,
                            host=QUOTAS_HOST, endpoint=self.endpoint, credentials=self._credentials, token=self.token)

    def _guarded(self, call: Callable[[], Any], region: str | None) -> Any:
        return guarded(call, host=self._host, region=region)

    def _rpc(self, method: str, region_hint: str, metadata: Sequence[tuple[str, str]] = (), *,
             service: str = "jobs", explain: Callable[[errors.ApiError, BaseException], errors.ApiError] | None = None,
             api: str = JOB_API, **request: Any) -> Any:
        client = self._client(service)
        bound = getattr(client, method)
        region = region_of(region_hint) or self.region
        # retry=None: retries are decided by the caller (vxtrain.submission), which
        # must list by the idempotency label before re-creating.
        return guarded(lambda: bound(request=request, retry=None, timeout=self.timeout, metadata=metadata),
                       host=self._service_host(service), region=region, api=api, explain=explain)

    def _list(self, method: str, parent: str, filter_: str) -> JobList:
        request: dict[str, Any] = {"parent": parent}
        if filter_:
            request["filter"] = filter_
        pager = self._rpc(method, parent, **request)
        jobs: JobList = self._guarded(lambda: [_to_dict(job) for job in pager], region_of(parent))
        return jobs

    # -- the seam: each verb dispatched to the client's method for the job's kind

    def create(self, kind: JobKind, parent: str, job: JobDict, local: LocalRun | None = None) -> JobDict:
        """Create a job of ``kind``; see JobBackend."""
        proto = _from_dict(kind.label, job)
        # Only an emulator gets the local run: Vertex AI runs the job's containers.
        metadata = [(LOCAL_METADATA, local.to_metadata())] if local is not None and self.emulated else []
        return _to_dict(self._rpc(_method("create", kind), parent, metadata=metadata, parent=parent,
                                  **{kind.field: proto}))

    def get(self, kind: JobKind, name: str) -> JobDict:
        """The job ``name``; see JobBackend."""
        return _to_dict(self._rpc(_method("get", kind), name, name=name))

    def list(self, kind: JobKind, parent: str, filter: str = "") -> JobList:  # noqa: A002
        """Jobs of ``kind`` under ``parent`` matching ``filter``; see JobBackend."""
        return self._list(_method("list", kind), parent, filter)

    def cancel(self, kind: JobKind, name: str) -> None:
        """Request cancellation; see JobBackend."""
        self._rpc(_method("cancel", kind), name, name=name)

    def delete(self, kind: JobKind, name: str) -> None:
        """Delete (a long-running operation we do not wait for); see JobBackend."""
        self._rpc(_method("delete", kind), name, name=name)

    def get_persistent_resource(self, name: str) -> ResourceDict:
        """The persistent resource ``name``; see JobBackend."""
        return _to_dict(self._rpc("get_persistent_resource", name, service="resources",
                                  explain=_resource_not_found, name=name))

    def list_quota_infos(self, parent: str) -> QuotaInfoList:
        """Every QuotaInfo under ``parent`` (all pages); see JobBackend."""
        pager = self._rpc("list_quota_infos", parent, service="quotas", explain=_quotas_refused, api=QUOTAS_API,
                          parent=parent)
        infos: QuotaInfoList = guarded(lambda: [_to_dict(info) for info in pager], host=self._service_host("quotas"),
                                       api=QUOTAS_API, explain=_quotas_refused)
        return infos

    def close(self) -> None:
        """Close the gRPC channels (idempotent)."""
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.transport.close()

    def __enter__(self) -> VertexBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _resource_not_found(mapped: errors.ApiError, exc: BaseException) -> errors.ApiError:
    """NOT_FOUND from PersistentResourceService names a resource, not a job."""
    if not isinstance(mapped, errors.NotFoundError):
        return mapped
    where = region_of(str(exc))
    return mapped.reworded(f"persistent resource not found{f' in {where}' if where else ''}: "
                           f"{_server_message(exc)} (check its ID, the project and the region)")


def _quotas_refused(mapped: errors.ApiError, exc: BaseException) -> errors.ApiError:
    """The Cloud Quotas API's permission and not-served errors, worded for it: reading quotas
    needs ``cloudquotas.quotas.get`` (roles/cloudquotas.viewer) and the API enabled."""
    kind, message = type(exc).__name__, _server_message(exc)
    if isinstance(mapped, errors.PermissionError_) and kind not in ("Unauthenticated", "Unauthorized"):
        return mapped.reworded(f"the Cloud Quotas API refused to read the quota limits: {message}; the caller "
                               f"needs cloudquotas.quotas.get (roles/cloudquotas.viewer) on the project and the "
                               f"API cloudquotas.googleapis.com enabled: {_QUOTAS_PERMISSIONS_HELP}")
    if kind == "MethodNotImplemented":
        return mapped.reworded(f"the endpoint does not serve the Cloud Quotas API: {message}")
    return mapped


def _method(verb: str, kind: JobKind) -> str:
    """JobServiceClient's method for ``verb`` on ``kind``: the GAPIC client names them
    ``VERB_<field>`` (``list_<field>s``), e.g. ``create_custom_job``, ``list_hyperparameter_tuning_jobs``."""
    return f"list_{kind.field}s" if verb == "list" else f"{verb}_{kind.field}"


def _message_class(name: str) -> Any:
    return getattr(aiplatform_v1, name)


def _from_dict(message: str, data: JobDict) -> Any:
    """REST-JSON dict → proto-plus message (strict: unknown fields are refused)."""
    cls = _message_class(message)
    raw = cls.pb()()
    try:
        json_format.ParseDict(data, raw)
    except json_format.ParseError as exc:
        raise errors.InvalidArgumentError(f"the job is not a valid {message}: {exc}") from exc
    return cls.wrap(raw)


def _to_dict(message: Any) -> JobDict:
    """proto-plus message → REST-JSON dict (camelCase, enum names)."""
    result: JobDict = json_format.MessageToDict(type(message).pb(message))
    return result


def connect(region: str | None = None, endpoint: str | None = None, **kwargs: Any) -> VertexBackend:
    """A backend for Vertex AI in ``region``, or for the emulator at ``endpoint`` (``token=``:
    the emulator's token, when the caller has it in hand)."""
    return VertexBackend(region, endpoint=endpoint, **kwargs)
