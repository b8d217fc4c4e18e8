"""The emulator's REST face: the same services as its gRPC port, over HTTP/1.1 JSON.

Google serves every API twice: gRPC, and HTTP/JSON transcoded from it by each
RPC's ``google.api.http`` rule (https://cloud.google.com/endpoints/docs/grpc/transcoding):
a verb and a path template whose variables fill request fields, a body rule
(``*``: the whole request; a field name: that field), the other fields as query
parameters, every message in the proto3 JSON mapping
(https://protobuf.dev/programming-guides/json/), and errors as
``{"error": {"code", "message", "status"}}`` (https://cloud.google.com/apis/design/errors).
gcloud, curl and the GAPIC clients' REST transport speak it.

Nothing here is per method. The routes are the rules of the installed client
libraries: each GAPIC REST transport carries its service's rules
(``_get_http_options()`` in ``transports/rest_base.py``), the most faithful copy
installed (no descriptor with the ``google.api.http`` options is: proto-plus
packages ship the messages, not the services). Only Cloud Logging's
``ListLogEntries`` rule is written here: google-cloud-logging has no REST
transport (:data:`LOGGING_RULES`). Each route calls the RPC's one implementation,
the :class:`~vxtrain.backends.emulator.common.Service` the gRPC handler is built
from too, so faults, checks and the store are the same on both ports.

The HTTP status of an error is its gRPC code's, as google.api_core maps them.
A path no rule matches, or a verb no rule of the path takes, is 404 "Method not
found." as Google answers (googleapis/google-api-php-client#1870).
"""
from __future__ import annotations

import json
import re
import socket
import sys
import threading
import urllib.parse
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

import grpc
import proto
from google.api_core import exceptions as gexc
from google.cloud.aiplatform_v1.services.job_service.transports import rest_base as job_rest
from google.cloud.aiplatform_v1.services.persistent_resource_service.transports import rest_base as resource_rest
from google.cloud.cloudquotas_v1.services.cloud_quotas.transports import rest_base as quotas_rest
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor

from vxtrain.backends.emulator import auth, jobservice, logging_service, persistent_resources, quotas
from vxtrain.backends.emulator.common import Call, RpcError, Service
from vxtrain.errors import VxtrainError

#: Told the RPC name of each authorized call a route matched (the emulator's call counter).
Count = Callable[[str], None]


class Gate(Protocol):
    """Who may call: judges each call's Authorization header (None: none sent) and words the
    refusal (the emulator's token, auth.Token: one wording for the gRPC and REST ports)."""

    def authorize(self, header: str | None) -> bool:
        """Whether a call that sent ``header`` may proceed."""
        ...

    def refusal(self, header: str | None) -> str:
        """The UNAUTHENTICATED message for a call that sent ``header``."""
        ...

#: Each service's rules, from its GAPIC REST transport: the class whose ``_Base<RPC>``
#: members carry ``_get_http_options()``.
RULE_SOURCES: dict[str, Any] = {
    jobservice.SERVICE: job_rest._BaseJobServiceRestTransport,
    persistent_resources.SERVICE: resource_rest._BasePersistentResourceServiceRestTransport,
    quotas.SERVICE: quotas_rest._BaseCloudQuotasRestTransport,
}
#: LoggingServiceV2's rule, from googleapis google/logging/v2/logging.proto (``post:
#: "/v2/entries:list" body: "*"``; https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/list,
#: read 2026-11-27): google-cloud-logging ships only a gRPC transport and a hand-written
#: JSON client (``logging_v2._http``), no rule to read.
LOGGING_RULES: dict[str, list[dict[str, str]]] = {
    "ListLogEntries": [{"method": "post", "uri": "/v2/entries:list", "body": "*"}],
}
#: The gcloud API names (``api_endpoint_overrides/NAME``) of the services served here.
GCLOUD_APIS = ("aiplatform", "logging", "cloudquotas")
#: Query parameters every Google API takes besides the request's fields
#: (https://cloud.google.com/apis/docs/system-parameters); ``$alt`` is read, the rest ignored.
SYSTEM_PARAMETERS = frozenset({
    "alt", "$alt", "prettyPrint", "$prettyPrint", "fields", "$fields", "key", "access_token", "oauth_token",
    "callback", "$callback", "quotaUser", "$quotaUser", "userIp", "upload_protocol", "uploadType",
    "$.xgafv", "requestReason", "$outputDefaults"})
#: The HTTP status of a gRPC code google.api_core has no class for (UNKNOWN, DATA_LOSS):
#: google/rpc/code.proto maps both to 500.
FALLBACK_STATUS = 500
#: The most bytes of body read (and dropped) from a call refused for its token; a larger
#: one closes the connection unread (a job spec is a few KiB).
REFUSED_BODY_LIMIT = 1 << 20
#: The largest request body served: Google's API front end refuses a larger one with 400
#: INVALID_ARGUMENT "Request payload size exceeds the limit: 10485760 bytes." (the answer of
#: dataflow.googleapis.com's regional jobs endpoint quoted whole in apache/beam#18660, and of
#: other Google APIs in PsychoinformaticsLab/pliers#481). Unverified for aiplatform itself, whose
#: docs state no request size limit for the Job API; a CustomJob is a few KiB.
MAX_BODY = 10_485_760
_VARIABLE = re.compile(r"\{(?P<field>[\w.]+)(?:=(?P<template>[^}]*))?\}")


def http_rules(service: str, rpc: str) -> list[dict[str, str]]:
    """The ``google.api.http`` rules of ``service``'s ``rpc`` ([] for an RPC without one)."""
    if service == logging_service.SERVICE:
        return LOGGING_RULES.get(rpc, [])
    base = getattr(RULE_SOURCES[service], f"_Base{rpc}", None)
    return list(base._get_http_options()) if base is not None else []


# --- routes ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Route:
    """One rule of one RPC: its verb and path, the fields the path fills, its body rule, the call."""

    rpc: str
    verb: str
    path: re.Pattern[str]
    fields: tuple[str, ...]
    body: str
    request: Any
    call: Call


def routes(services: Iterable[Service]) -> list[Route]:
    """Every rule of every RPC of ``services`` (additional bindings included)."""
    found = []
    for service in services:
        for rpc, (request, call) in service.rpcs.items():
            for rule in http_rules(service.name, rpc):
                path, fields = compile_template(rule["uri"])
                found.append(Route(rpc, rule["method"].upper(), path, fields, rule.get("body", ""), request, call))
    return found


def compile_template(uri: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """A path template (``/v1/{parent=projects/*/locations/*}/customJobs``, ``…:cancel``) as a
    regex with one group per variable, and the fields those groups fill. google.api_core's
    path_template validates a path, but does not say what a variable matched."""
    parts, fields, pos = [], [], 0
    for variable in _VARIABLE.finditer(uri):
        parts.append(_segments(uri[pos:variable.start()]))
        parts.append(f"({_segments(variable.group('template') or '*')})")
        fields.append(variable.group("field"))
        pos = variable.end()
    parts.append(_segments(uri[pos:]))
    return re.compile("".join(parts)), tuple(fields)


def _segments(template: str) -> str:
    """``*``: one path segment; ``**``: any number; anything else as written."""
    return "/".join("[^/]+" if s == "*" else ".+" if s == "**" else re.escape(s) for s in template.split("/"))


# --- one call -----------------------------------------------------------------------

@dataclass(frozen=True)
class Answer:
    """An HTTP answer: its status and JSON body."""

    status: int
    body: bytes


def dispatch(table: Sequence[Route], verb: str, target: str, body: bytes, headers: Mapping[str, str],
             count: Count | None = None) -> Answer:
    """Answer one HTTP request: route it, build the request message, make the call
    (``count`` is told the RPC's name once a route matched)."""
    path, _, query = target.partition("?")
    matched = [(route, found) for route in table if (found := route.path.fullmatch(path))]
    chosen = next(((route, found) for route, found in matched if route.verb == verb), None)
    if chosen is None:
        takes = sorted({route.verb for route, _ in matched})
        hint = f" ({path} takes {' or '.join(takes)}, not {verb})" if takes else ""
        return error_answer(grpc.StatusCode.NOT_FOUND, f"Method not found.{hint}")
    route, found = chosen
    if count is not None:
        count(route.rpc)
    params = urllib.parse.parse_qsl(query, keep_blank_values=True)
    try:
        request = build_request(route, found.groups(), params, body)
        response = route.call(request, {k.lower(): v for k, v in headers.items()})
    except RpcError as exc:
        return error_answer(exc.code, exc.message)
    return Answer(200, to_json(response, integer_enums="enum-encoding=int" in dict(params).get("$alt", "")))


def build_request(route: Route, values: Sequence[str], params: Sequence[tuple[str, str]], body: bytes) -> Any:
    """The request message of ``route``: its body, path variables and query parameters
    (INVALID_ARGUMENT, in Google's words, for what does not parse)."""
    message = route.request.pb()()
    if route.body:
        _merge(_body(body), message if route.body == "*" else _field(message, route.body))
    for field, value in zip(route.fields, values):
        _set(message, field, urllib.parse.unquote(value))
    query = _query_fields(message.DESCRIPTOR, [(k, v) for k, v in params if k not in SYSTEM_PARAMETERS])
    _merge(query, message)
    return route.request.wrap(message)


def _body(body: bytes) -> dict[str, Any]:
    try:
        data = json.loads(body or b"{}")
    except (ValueError, UnicodeDecodeError) as exc:
        raise _invalid(f"Invalid JSON payload received. {exc}.") from None
    except RecursionError:  # nested past the interpreter's limit: a request, not a bug of ours
        raise _invalid("Invalid JSON payload received. Nested too deeply.") from None
    if not isinstance(data, dict):
        raise _invalid(f"Invalid JSON payload received. Expected an object, got {type(data).__name__}.")
    return data


def _merge(data: Mapping[str, Any], message: Any) -> None:
    try:
        json_format.ParseDict(data, message)
    except json_format.ParseError as exc:
        raise _invalid(f"Invalid JSON payload received. {exc}") from None
    except RecursionError:  # a Struct or Value field nested past the interpreter's limit
        raise _invalid("Invalid JSON payload received. Nested too deeply.") from None


def _field(message: Any, path: str) -> Any:
    for name in path.split("."):
        message = getattr(message, name)
    return message


def _set(message: Any, path: str, value: str) -> None:
    *outer, last = path.split(".")
    setattr(_field(message, ".".join(outer)) if outer else message, last, value)


def _query_fields(descriptor: Descriptor, params: Sequence[tuple[str, str]]) -> dict[str, Any]:
    """Query parameters as the JSON of the fields they name (``pageSize=5``, ``a.b=x``,
    a repeated field once per value), for ParseDict; a name no field has is refused
    as Google refuses it."""
    out: dict[str, Any] = {}
    for name, value in params:
        level, target = descriptor, out
        *outer, last = name.split(".")
        for part in outer:
            field = _find(level, part, name)
            level, target = field.message_type, target.setdefault(field.name, {})
        field = _find(level, last, name)
        parsed: Any = value.lower() == "true" if field.type == FieldDescriptor.TYPE_BOOL else value
        if field.is_repeated:
            target.setdefault(field.name, []).append(parsed)
        else:
            target[field.name] = parsed
    return out


def _find(descriptor: Descriptor | None, part: str, name: str) -> FieldDescriptor:
    fields = {} if descriptor is None else {**descriptor.fields_by_name, **descriptor.fields_by_camelcase_name}
    if part not in fields:
        raise _invalid(f"Invalid JSON payload received. Unknown name {name!r}: Cannot bind query parameter. "
                       f"Field {part!r} could not be found in request message.")
    return fields[part]


def to_json(message: Any, integer_enums: bool = False) -> bytes:
    """A response in the proto3 JSON mapping (enums by name unless ``$alt=json;enum-encoding=int``)."""
    pb = type(message).pb(message) if isinstance(message, proto.Message) else message
    text: str = json_format.MessageToJson(pb, use_integers_for_enums=integer_enums, indent=2)
    return text.encode()


def error_answer(code: grpc.StatusCode, message: str) -> Answer:
    """``{"error": {"code", "message", "status"}}`` with the HTTP status of ``code``."""
    status = gexc.from_grpc_status(code, message).code or FALLBACK_STATUS  # type: ignore[no-untyped-call]
    body = {"error": {"code": int(status), "message": message, "status": code.name}}
    return Answer(int(status), json.dumps(body, indent=2).encode())


def _invalid(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, message)


def too_large() -> Answer:
    """400 for a body over :data:`MAX_BODY`, in the words of Google's front end."""
    return error_answer(grpc.StatusCode.INVALID_ARGUMENT, f"Request payload size exceeds the limit: {MAX_BODY} bytes.")


# --- the server ---------------------------------------------------------------------

class Open:
    """The gate of an emulator without a token: every call may proceed."""

    def authorize(self, header: str | None) -> bool:
        """Always True."""
        return True

    def refusal(self, header: str | None) -> str:
        """Never asked: no call is refused."""
        return ""


class _Handler(BaseHTTPRequestHandler):
    """One connection: HTTP/1.1 keep-alive, every verb through :func:`dispatch`."""

    protocol_version = "HTTP/1.1"
    server: _Server
    #: An idle keep-alive connection is closed after this many seconds (its thread ends).
    timeout = 60

    def setup(self) -> None:
        super().setup()
        self.server.opened(self.connection)

    def finish(self) -> None:
        self.server.closed(self.connection)
        super().finish()

    def _serve(self) -> None:
        header = self.headers.get("Authorization")
        length = self.headers.get("Content-Length") or "0"
        if not self.server.gate.authorize(header):
            # Judged before the body is read. A small body (a client that sent a wrong token)
            # is read and dropped, so the connection stays usable and the 401 reaches it; a
            # large or unsized one is never buffered for a caller without the token: the
            # connection is closed instead.
            refused = {"WWW-Authenticate": "Bearer"}
            if length.isdigit() and int(length) <= REFUSED_BODY_LIMIT and not self.headers.get("Transfer-Encoding"):
                self.rfile.read(int(length))
            else:
                self.close_connection = True
                refused["Connection"] = "close"
            self._answer(error_answer(grpc.StatusCode.UNAUTHENTICATED, self.server.gate.refusal(header)), refused)
            return
        if self.headers.get("Transfer-Encoding"):  # chunked: not read here, and it would be taken for the next request
            self.send_error(411, "A body must come with a Content-Length (no Transfer-Encoding).")
            return
        if not length.isdigit():
            self.send_error(400, f"Invalid Content-Length {length!r}.")
            return
        if int(length) > MAX_BODY:  # refused unread: the connection closes rather than buffer it
            self.close_connection = True
            self._answer(too_large(), {"Connection": "close"})
            return
        body = self.rfile.read(int(length))
        try:
            answer = dispatch(self.server.table, self.command, self.path, body, dict(self.headers.items()),
                              self.server.count)
        except Exception as exc:  # a bug of ours: answered as the gRPC port answers it (UNKNOWN)
            answer = error_answer(grpc.StatusCode.UNKNOWN, f"Exception calling application: {exc}")
        self._answer(answer)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve  # noqa: N815 (http.server's naming)

    def _answer(self, answer: Answer, headers: Mapping[str, str] = {}) -> None:
        self.send_response(answer.status)
        for name, value in {"Content-Type": "application/json; charset=UTF-8", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(answer.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(answer.body)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """What http.server refuses itself (a malformed request line, an unknown verb), in
        Google's error shape rather than its HTML page; the connection is then closed."""
        known = gexc.from_http_status(code, message or "").grpc_status_code  # type: ignore[no-untyped-call]
        status = known or (grpc.StatusCode.INVALID_ARGUMENT if 400 <= code < 500 else grpc.StatusCode.UNKNOWN)
        body = {"error": {"code": code, "message": message or HTTPStatus(code).phrase, "status": status.name}}
        self.close_connection = True
        self._answer(Answer(code, json.dumps(body, indent=2).encode()), {"Connection": "close"})

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base's name)
        pass  # the gRPC port logs no calls either


class _Server(ThreadingHTTPServer):
    daemon_threads = False  # server_close() joins the connections' threads

    def __init__(self, address: tuple[str, int], table: Sequence[Route], gate: Gate,
                 count: Count | None = None) -> None:
        super().__init__(address, _Handler)
        self.table = table
        self.gate = gate
        self.count = count
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()

    def opened(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.add(connection)

    def closed(self, connection: socket.socket) -> None:
        with self._lock:
            self._open.discard(connection)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """One line on stderr for a connection dropped midway (a client that hung up, reset, or
        went quiet past the timeout), never a traceback: the emulator keeps serving the others."""
        exc = sys.exc_info()[1]
        why = f"{type(exc).__name__}: {exc}" if exc is not None else "unknown error"
        where = client_address[0] if isinstance(client_address, tuple) and client_address else "a client"
        print(f"vxtrain emulator: REST: dropped the connection from {where}: {why}", file=sys.stderr, flush=True)

    def hang_up(self) -> None:
        """End every open connection, so a keep-alive client's idle thread returns now."""
        with self._lock:
            for connection in self._open:
                try:
                    connection.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # closed by the client meanwhile


class _Server6(_Server):
    address_family = socket.AF_INET6


class RestServer:
    """The REST port: one HTTP server per address of the host, all on one port."""

    def __init__(self, servers: list[_Server]) -> None:
        self._servers = servers
        self._threads = [threading.Thread(target=s.serve_forever, name="vxtrain-emulator-rest", daemon=True)
                         for s in servers]
        for thread in self._threads:
            thread.start()

    @property
    def port(self) -> int:
        """The port served on."""
        return int(self._servers[0].server_address[1])

    def stop(self) -> None:
        """Stop accepting, end the open connections, and join every thread (idempotent)."""
        for server in self._servers:
            server.shutdown()
            server.hang_up()
            server.server_close()
        for thread in self._threads:
            thread.join()


def serve(services: Iterable[Service], addresses: Sequence[str], port: int,
          gate: Gate | None = None, count: Count | None = None) -> RestServer:
    """Serve ``services`` over HTTP/JSON on ``port`` (0: any free port) of every address;
    VxtrainError when the port is taken. ``gate`` judges each call's Authorization header
    (None: every call may proceed); ``count`` is told the RPC of each call served."""
    gate = gate or Open()
    table = routes(services)
    servers: list[_Server] = []
    try:
        for address in addresses:
            kind = _Server6 if ":" in address else _Server
            servers.append(kind((address, servers[0].server_address[1] if servers else port), table, gate,
                                count))
    except OSError as exc:
        for server in servers:
            server.server_close()
        raise VxtrainError(f"cannot serve REST on port {port} of {address}: {exc.strerror or exc}; pick another "
                           "with --http-port, or --http-port 0 for any free port") from None
    return RestServer(servers)


def gcloud_environment(url: str, token_file: str | None = None) -> dict[str, str]:
    """gcloud's settings for the REST port at ``url`` as environment variables: each API's
    endpoint override, and the file gcloud reads the token from (``auth/access_token_file``;
    None: the token was given in the environment, and gcloud has no setting that takes it
    as a value)."""
    env = {f"CLOUDSDK_API_ENDPOINT_OVERRIDES_{api.upper()}": url for api in GCLOUD_APIS}
    if token_file is not None:
        env[auth.GCLOUD_TOKEN_FILE_ENV] = token_file
    return env
