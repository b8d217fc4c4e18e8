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
:func:`parse_filter`), ``order_by`` "timestamp asc|desc", and paging. Every
other method answers UNIMPLEMENTED. The handler is built like the JobService's
(``common.unary_handler``: the proto-plus classes' ``serialize``/``deserialize``).
"""
from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
from google.cloud.logging_v2.types import log_entry as le
from google.cloud.logging_v2.types import logging as lg
from google.logging.type import log_severity_pb2

from vxtrain import slots
from vxtrain.backends.base import ML_JOB, SERVICE_TASK
from vxtrain.backends.emulator.common import RpcError, decode_cursor, encode_cursor, unary_handler, unquote
from vxtrain.vocab.timestamps import parse_time

SERVICE = "google.logging.v2.LoggingServiceV2"
#: ListLogEntriesRequest.page_size: "Default is 50. Maximum is 1000"
#: (https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/list).
DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 1000

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


class LogStore:
    """Log entries in memory, in the order they were written (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[_Stored] = []
        self._last = datetime.fromtimestamp(0, timezone.utc)

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


def generic_handler(store: LogStore) -> grpc.GenericRpcHandler:
    """The LoggingServiceV2 handlers (ListLogEntries); other methods answer UNIMPLEMENTED."""
    handlers = {"ListLogEntries": unary_handler(lambda request, _metadata: _list_log_entries(store, request),
                                                lg.ListLogEntriesRequest, lg.ListLogEntriesResponse.serialize)}
    return grpc.method_handlers_generic_handler(SERVICE, handlers)
