"""The emulator's ``google.logging.v2.LoggingServiceV2``: a job's log lines, as Vertex AI writes them.

Every line a replica of an emulator-run job prints becomes a LogEntry shaped
like the ones Vertex AI writes for a CustomJob
(https://cloud.google.com/vertex-ai/docs/training/code-requirements#logging):
``resource.type`` "ml_job", ``resource.labels.job_id`` the job id,
``resource.labels.task_name`` the replica ("workerpool0-0"; "service" for the
lines the service itself writes), the line in ``textPayload``. So the
unmodified google-cloud-logging client (``LoggingServiceV2Client``) reads a
local job's logs as it reads a Vertex job's.

Served: ``ListLogEntries`` with the subset of the Logging query language that
vxtrain and the usual hand-written queries use (comparisons joined by AND, see
:func:`parse_filter`), ``order_by`` "timestamp asc|desc", and paging; and
``TailLogEntries`` (live tailing, https://cloud.google.com/logging/docs/view/streaming-live-tailing):
the entries matching the same filters as they are written, pushed to the
stream by a condition variable on the store, until the client closes it or the
server stops. Like Cloud Logging it refuses an eleventh open session of a
project (RESOURCE_EXHAUSTED) and ends a session after its maximum duration
(OUT_OF_RANGE). Every other method answers UNIMPLEMENTED. The unary handler is
built like the JobService's (``common.unary_handler``: the proto-plus classes'
``serialize``/``deserialize``).
"""
from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
from google.cloud.logging_v2.types import log_entry as le
from google.cloud.logging_v2.types import logging as lg
from google.logging.type import log_severity_pb2

from vxtrain import slots
from vxtrain.backends.base import MAX_TAIL_SESSIONS, ML_JOB, SERVICE_TASK
from vxtrain.backends.emulator.common import RpcError, Service, decode_cursor, encode_cursor, unquote
from vxtrain.vocab.timestamps import parse_time

SERVICE = "google.logging.v2.LoggingServiceV2"
#: ListLogEntriesRequest.page_size: "Default is 50. Maximum is 1000"
#: (https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/list).
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000
#: Cloud Logging ends a tail session after an hour: OUT_OF_RANGE "Session has run for the
#: maximum allowed duration of 1h. To continue, start a new session with the same request."
#: (as reported in DefangLabs/defang#1339, 2025-08; the duration is not in the docs).
MAX_TAIL_SECONDS = 3600.0
#: TailLogEntriesRequest.buffer_window: "Valid values are between 0-60000 milliseconds"
#: (https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/tail).
MAX_BUFFER_WINDOW_SECONDS = 60.0

#: A line of the local runner: ``[workerpoolK-I] text``, behind ``[trial N] `` in a study.
_LINE = re.compile(rf"^(?:\[trial [^\]]+\] )?\[(?P<task>{slots.REPLICA_PATTERN})\] ?(?P<text>.*)$", re.DOTALL)
_RUNNER_LINE = re.compile(r"^(?:\[trial [^\]]+\] )?\[vxtrain\] ?(?P<text>.*)$", re.DOTALL)
_SEVERITIES: dict[str, int] = dict(log_severity_pb2.LogSeverity.items())


def _invalid(message: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, message)


# --- the store ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Stored:
    seq: int
    entry: le.LogEntry
    time: datetime
    flat: dict[str, str]  # every filterable field by its query-language path


@dataclass(eq=False)
class TailSession:
    """One open TailLogEntries stream: its projects, and the store position it has sent up to."""

    projects: frozenset[str]
    position: int
    deadline: float  # time.monotonic() when it has run its maximum duration
    ended: bool = False
    predicates: list[Predicate] = field(default_factory=list)


class LogStore:
    """Log entries in memory, in the order they were written (thread-safe); open tail
    sessions wait on its condition variable for the next entry."""

    def __init__(self, *, max_tail_seconds: float = MAX_TAIL_SECONDS) -> None:
        self._lock = threading.Lock()
        self._written = threading.Condition(self._lock)  # notified on each entry and each session's end
        self._entries: list[_Stored] = []
        self._last = datetime.fromtimestamp(0, timezone.utc)
        self._sessions: list[TailSession] = []
        self.max_tail_seconds = max_tail_seconds
        #: The most sessions open at once, all projects together (None: no such limit). Each
        #: holds one of the gRPC server's worker threads while it is open, so the server sets
        #: it below its pool's size: else open streams alone would take every worker and
        #: every other call (the state polls of the very jobs being followed) would hang.
        self.max_sessions: int | None = None

    def append(self, *, project: str, job_id: str, task_name: str, text: str,
               severity: str = "INFO", timestamp: datetime | None = None) -> le.LogEntry:
        """Store one line of ``task_name`` of job ``job_id`` as Vertex AI writes it."""
        with self._lock:
            # Timestamps strictly increase: "oldest first" is the order lines were printed.
            when = max(timestamp or datetime.now(timezone.utc), self._last + timedelta(microseconds=1))
            self._last = when
            seq = len(self._entries)
            entry = le.LogEntry(
                log_name=f"projects/{project}/logs/{task_name}",
                resource={"type": ML_JOB, "labels": {"job_id": job_id, "task_name": task_name,
                                                     "project_id": project}},
                text_payload=text, timestamp=when, receive_timestamp=when,
                severity=_SEVERITIES[severity], insert_id=f"{seq:012d}")
            self._entries.append(_Stored(seq, entry, when, _flatten(entry, project, job_id, task_name, severity)))
            self._written.notify_all()
            return entry

    def feed(self, project: str, job_id: str, severity: str = "INFO") -> Callable[[str], None]:
        """An output for the local runner: each ``[workerpoolK-I] text`` line becomes an
        entry of that replica; the runner's own ``[vxtrain] …`` lines the service's."""
        def write(line: str) -> None:
            for one in line.splitlines() or [""]:
                task, text = split_line(one)
                self.append(project=project, job_id=job_id, task_name=task, text=text, severity=severity)
        return write

    def entries(self) -> list[le.LogEntry]:
        """Every stored entry, oldest first (copies)."""
        with self._lock:
            return [le.LogEntry.deserialize(le.LogEntry.serialize(s.entry)) for s in self._entries]

    def list(self, resource_names: Sequence[str], filter_: str, order_by: str, page_size: int,
             page_token: str) -> tuple[list[le.LogEntry], str]:
        """One page of ListLogEntries: the matching entries in ``order_by`` order after ``page_token``."""
        projects = _projects(resource_names)
        predicates = parse_filter(filter_)
        descending = _descending(order_by)
        size = _page_size(page_size)
        after = decode_cursor("after", page_token)
        with self._lock:
            stored = list(self._entries)
        ordered: Iterable[_Stored] = reversed(stored) if descending else stored
        page: list[_Stored] = []
        more = False
        for item in ordered:
            if after is not None and (item.seq >= after if descending else item.seq <= after):
                continue
            if item.flat["project"] not in projects or not all(p(item) for p in predicates):
                continue
            if len(page) == size:
                more = True
                break
            page.append(item)
        token = encode_cursor("after", page[-1].seq) if more else ""
        return [s.entry for s in page], token


    # -- live tailing --

    def open_tail(self, resource_names: Sequence[str], filter_: str) -> TailSession:
        """A session sent every entry written from now on that matches ``filter_``;
        RESOURCE_EXHAUSTED when a project already has :data:`MAX_TAIL_SESSIONS` open."""
        projects = frozenset(_projects(resource_names))
        predicates = parse_filter(filter_)
        with self._lock:
            if self.max_sessions is not None and len(self._sessions) >= self.max_sessions:
                raise RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                               f"There are too many tail sessions open: this emulator serves at most "
                               f"{self.max_sessions} at once (half its worker threads), whatever the project.")
            for project in sorted(projects):
                if sum(project in s.projects for s in self._sessions) >= MAX_TAIL_SESSIONS:
                    # Cloud Logging's own wording is not published; gcloud says "There are
                    # too many tail sessions open." for this code (googlecloudsdk tailing.py).
                    raise RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                                   f"There are too many tail sessions open: projects/{project} has "
                                   f"{MAX_TAIL_SESSIONS}, the most a project may have.")
            session = TailSession(projects, len(self._entries), time.monotonic() + self.max_tail_seconds,
                                  predicates=predicates)
            self._sessions.append(session)
            return session

    def end_tail(self, session: TailSession) -> None:
        """The session's client went away (or the server stops): wake its stream to end it."""
        with self._lock:
            session.ended = True
            self._written.notify_all()

    def close_tail(self, session: TailSession) -> None:
        """Forget the session (it no longer counts against its projects' limit)."""
        with self._lock:
            session.ended = True
            if session in self._sessions:
                self._sessions.remove(session)

    def tail_sessions(self, project: str) -> int:
        """How many tail sessions of ``project`` are open."""
        with self._lock:
            return sum(project in s.projects for s in self._sessions)

    def next_entries(self, session: TailSession) -> Sequence[le.LogEntry] | None:
        """Block until entries matching the session were written, and return them;
        None once the session ended; OUT_OF_RANGE once it ran its maximum duration."""
        with self._written:
            while not session.ended:
                fresh = self._entries[session.position:]
                session.position = len(self._entries)
                matching = [s.entry for s in fresh
                            if s.flat["project"] in session.projects and all(p(s) for p in session.predicates)]
                if matching:
                    return matching
                left = session.deadline - time.monotonic()
                if left <= 0:
                    raise RpcError(grpc.StatusCode.OUT_OF_RANGE,
                                   f"Session has run for the maximum allowed duration of "
                                   f"{_duration(self.max_tail_seconds)}. To continue, start a new session "
                                   "with the same request.")
                self._written.wait(left)  # woken by append() and end_tail(); the timeout is the session's end
            return None


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:g}h" if seconds >= 3600 else f"{seconds:g}s"


def split_line(line: str) -> tuple[str, str]:
    """(task name, text) of one line of the local runner's output."""
    line = line.rstrip("\r\n")
    found = _LINE.match(line)
    if found:
        return found.group("task"), found.group("text")
    runner = _RUNNER_LINE.match(line)
    return SERVICE_TASK, runner.group("text") if runner else line


def _flatten(entry: le.LogEntry, project: str, job_id: str, task_name: str, severity: str) -> dict[str, str]:
    return {"project": project, "logName": entry.log_name, "resource.type": ML_JOB,
            "resource.labels.job_id": job_id, "resource.labels.task_name": task_name,
            "resource.labels.project_id": project, "severity": severity,
            "textPayload": entry.text_payload, "insertId": entry.insert_id}


def _projects(resource_names: Sequence[str]) -> set[str]:
    if not resource_names:
        raise _invalid("resource_names is required: e.g. projects/PROJECT_ID.")
    projects = set()
    for name in resource_names:
        found = re.fullmatch(r"projects/([^/]+)", name)
        if not found:
            raise _invalid(f"Invalid resource name {name!r}: the emulator serves projects/PROJECT_ID.")
        projects.add(found.group(1))
    return projects


def _descending(order_by: str) -> bool:
    words = order_by.split()
    if not words:
        return False
    if words[0] != "timestamp" or len(words) > 2 or (len(words) == 2 and words[1] not in ("asc", "desc")):
        raise _invalid(f"Invalid order_by {order_by!r}: use \"timestamp asc\" or \"timestamp desc\".")
    return words[1:] == ["desc"]


def _page_size(size: int) -> int:
    if size < 0:
        raise _invalid(f"Invalid page_size {size}.")
    return min(size or DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)


# --- the query language subset ----------------------------------------------------------

Predicate = Callable[[_Stored], bool]

_TERM = re.compile(r'\s*(?P<field>[A-Za-z_][\w.\-/]*)\s*(?P<op>>=|<=|!=|=|>|<|:)\s*'
                   r'(?P<value>"(?:[^"\\]|\\.)*"|[^\s"()]+)\s*')
_AND = re.compile(r"(?:AND\s+)?")
_FIELDS = ("logName", "resource.type", "severity", "textPayload", "insertId", "timestamp")


def parse_filter(text: str) -> list[Predicate]:
    """Comparisons joined by AND (or by a space, which means AND too):
    ``resource.type``, ``resource.labels.KEY``, ``logName``, ``textPayload``,
    ``insertId`` with ``=``, ``!=`` or ``:`` (contains); ``severity`` and
    ``timestamp`` also with ``>=``, ``>``, ``<=``, ``<``
    (https://cloud.google.com/logging/docs/view/logging-query-language).
    OR, NOT and parentheses are not emulated: INVALID_ARGUMENT."""
    return [_predicate(term, text) for term in _terms(text.strip())] if text.strip() else []


def _terms(text: str) -> Iterator[re.Match[str]]:
    pos = 0
    while pos < len(text):
        term = _TERM.match(text, pos)
        if term is None or term.group("field") in ("OR", "NOT"):
            raise _invalid(f"Unsupported filter {text!r}: the emulator reads comparisons such as "
                           'resource.labels.job_id="123" or timestamp>="2024-01-01T00:00:00Z" joined by AND.')
        yield term
        joiner = _AND.match(text, term.end())  # "AND " or nothing: a space means AND too
        pos = joiner.end() if joiner else term.end()


def _predicate(term: re.Match[str], whole: str) -> Predicate:
    field, op, value = term.group("field"), term.group("op"), unquote(term.group("value"))
    if field == "timestamp":
        try:
            moment = parse_time(value)
        except ValueError:
            raise _invalid(f"Invalid timestamp {value!r} in {whole!r}: use RFC 3339, e.g. "
                           "2024-01-01T00:00:00Z.") from None
        return _ordered(lambda s: s.time, op, moment)
    if field == "severity":
        if value not in _SEVERITIES:
            raise _invalid(f"Invalid severity {value!r} in {whole!r}.")
        return _ordered(lambda s: _SEVERITIES[s.flat["severity"]], op, _SEVERITIES[value])
    if field in _FIELDS or field.startswith("resource.labels."):
        if op not in ("=", "!=", ":"):
            raise _invalid(f"{field} compares with =, != or : in {whole!r}.")
        return _text(field, op, value)
    raise _invalid(f"Unsupported filter field {field!r} in {whole!r}: use resource.type, resource.labels.KEY, "
                   "logName, severity, timestamp, textPayload or insertId.")


def _text(field: str, op: str, value: str) -> Predicate:
    if op == ":":
        return lambda s: value in s.flat.get(field, "")
    if op == "!=":
        return lambda s: s.flat.get(field) != value
    return lambda s: s.flat.get(field) == value


def _ordered(get: Callable[[_Stored], Any], op: str, value: Any) -> Predicate:
    compare: dict[str, Callable[[Any, Any], bool]] = {
        "=": lambda a, b: a == b, "!=": lambda a, b: a != b, ":": lambda a, b: a == b,
        ">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b, "<": lambda a, b: a < b}
    test = compare[op]
    return lambda s: test(get(s), value)


# --- gRPC wiring --------------------------------------------------------------------

def _list_log_entries(store: LogStore, request: lg.ListLogEntriesRequest) -> lg.ListLogEntriesResponse:
    entries, token = store.list(list(request.resource_names), request.filter, request.order_by,
                                request.page_size, request.page_token)
    return lg.ListLogEntriesResponse(entries=entries, next_page_token=token)


def service(store: LogStore) -> Service:
    """LoggingServiceV2's unary RPCs over ``store`` (ListLogEntries), as gRPC and REST both serve them."""
    return Service(SERVICE, {"ListLogEntries": (lg.ListLogEntriesRequest,
                                                lambda request, _metadata: _list_log_entries(store, request))})


def _buffer_window(request: lg.TailLogEntriesRequest) -> None:
    if "buffer_window" not in request:
        return
    seconds = request.buffer_window.total_seconds()
    if not 0 <= seconds <= MAX_BUFFER_WINDOW_SECONDS:
        raise _invalid(f"Invalid buffer_window {seconds:g}s: valid values are between 0-60000 milliseconds.")


#: The next tail session's fault (``FaultPlan.take_tail``: faults sit beside this module, not
#: below it): None, or its error and True when it breaks the open stream after its first
#: entries, False when it refuses the session.
TailFault = Callable[[], tuple[RpcError, bool] | None]


def _tail_log_entries(store: LogStore, take_fault: TailFault | None, requests: Iterator[lg.TailLogEntriesRequest],
                      context: grpc.ServicerContext) -> Iterator[lg.TailLogEntriesResponse]:
    """One TailLogEntries session: an empty first response once the session is open (the
    client then knows every later entry reaches it), then the matching entries as they
    are written. The emulator's entries are in order as written, so ``buffer_window``
    (Cloud Logging's wait for late entries) is checked but nothing is held back."""
    request = next(requests, None)
    if request is None:  # the client closed before asking anything
        return
    _buffer_window(request)
    fault = take_fault() if take_fault is not None else None
    if fault is not None and not fault[1]:
        raise fault[0]
    session = store.open_tail(list(request.resource_names), request.filter)
    try:
        # Called when the client cancels or the server stops: ends the wait at once.
        if not context.add_callback(lambda: store.end_tail(session)):
            return
        yield lg.TailLogEntriesResponse()
        while (entries := store.next_entries(session)) is not None:
            yield lg.TailLogEntriesResponse(entries=entries)
            if fault is not None:  # ``tail:unavailable``: the stream breaks after its first entries
                raise fault[0]
    finally:
        store.close_tail(session)


def _tail_handler(store: LogStore, take_fault: TailFault | None) -> grpc.RpcMethodHandler:
    def handle(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        try:
            yield from _tail_log_entries(store, take_fault, requests, context)
        except RpcError as exc:
            context.abort(exc.code, exc.message)
    return grpc.stream_stream_rpc_method_handler(handle, request_deserializer=lg.TailLogEntriesRequest.deserialize,
                                                 response_serializer=lg.TailLogEntriesResponse.serialize)


def generic_handler(store: LogStore, take_fault: TailFault | None = None) -> grpc.GenericRpcHandler:
    """The LoggingServiceV2 handlers: the unary ones of :func:`service`, and TailLogEntries
    (a bidi stream, gRPC only; ``take_fault``: the fault plan's ``tail`` faults, which refuse
    or break sessions). Other methods answer UNIMPLEMENTED."""
    handlers = service(store).handlers()
    handlers["TailLogEntries"] = _tail_handler(store, take_fault)
    return grpc.method_handlers_generic_handler(SERVICE, handlers)
