"""A job's log lines: the query, the entries, and following them as they arrive.

Vertex AI writes what each replica prints to Cloud Logging under the
monitored resource ``ml_job``: ``resource.labels.job_id`` is the job's id,
``resource.labels.task_name`` the replica (``workerpool0-0``), or ``service``
for the lines the training service writes itself
(https://cloud.google.com/vertex-ai/docs/training/code-requirements#logging).
Reading goes through a ``LogReader`` (vxtrain.backends.cloud_logging): Cloud
Logging on Vertex AI, an emulator's LoggingServiceV2 locally.

Following (``logs --follow``, ``submit --wait``, ``wait``) tails the job with one
TailLogEntries stream (Cloud Logging's live tailing,
https://cloud.google.com/logging/docs/view/streaming-live-tailing): one call per
job instead of a ListLogEntries call every few seconds. The read quota is 60
entries.list requests per minute per project, and cannot be raised
(https://cloud.google.com/logging/quotas#api-limits). ListLogEntries still reads
what a stream cannot carry: the lines written before it opened (once its first
response says it is open), those it left out (``suppression_info``), and the
last lines once the job has ended and the stream was kept open a grace period.

When the stream is refused (a project has at most 10 tail sessions; no
permission; a server without TailLogEntries), following falls back to polling,
and says so once. A stream that breaks (UNAVAILABLE, INTERNAL…) is opened again
once, the gap read with ListLogEntries; a second break falls back to polling.
A session that ran its maximum duration (Cloud Logging ends them after an hour)
is opened again, as often as needed.

Polling reads ListLogEntries with a cursor: the last timestamp seen, minus an
overlap window, because Cloud Logging is eventually consistent (an entry may
become readable after a later one); entries are de-duplicated by ``insertId``,
whichever way they came, so a switch from the stream to polling neither loses
nor repeats a line. The interval backs off while nothing new comes and returns
to its floor when lines arrive; after the job ends the follower keeps reading
for a short grace period, for the last lines. ``VERTEX_LOGS`` polls at most
every 10 s, one sixth of the quota even when lines keep coming.
"""
from __future__ import annotations

import json
import queue
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from vxtrain import slots
from vxtrain.backends.base import ML_JOB, SERVICE_TASK, EntryDict, LogReader, LogTail, TailBatch
from vxtrain.errors import ApiError, QuotaError, UsageError
from vxtrain.model import duration_seconds
from vxtrain.vocab.callbacks import Say
from vxtrain.vocab.timestamps import format_time, parse_time



@dataclass(frozen=True)
class Entry:
    """One log line of a job."""

    replica: str
    timestamp: str  # RFC 3339, UTC, as Cloud Logging gives it
    severity: str
    text: str
    insert_id: str = ""

    def to_json(self) -> dict[str, str]:
        """The entry of ``vxtrain logs --output json``."""
        return {"replica": self.replica, "timestamp": self.timestamp, "severity": self.severity,
                "text": self.text}

    def line(self) -> str:
        """``[workerpoolK-I] text``: how every line is shown."""
        return f"[{self.replica}] {self.text}"


@dataclass(frozen=True)
class Cadence:
    """How often a follower reads: ``initial`` seconds, times ``multiplier`` while
    nothing new arrives, capped at ``maximum``; ``overlap``: how far before the
    last timestamp seen each read starts (late entries); ``grace``: how long it
    keeps reading (or its stream open) after the job ended; ``opening``: how long
    a new stream may take to answer before the lines before it are read anyway."""

    initial: float
    maximum: float
    multiplier: float = 2.0
    overlap: float = 0.0
    grace: float = 0.0
    opening: float = 5.0


#: Cloud Logging: ≤ 6 reads a minute (1/10 of the project's read quota), 60 s
#: overlap for late entries, 20 s of reading after the end.
VERTEX_LOGS = Cadence(initial=10.0, maximum=30.0, overlap=60.0, grace=20.0, opening=10.0)
#: An emulator: the lines are in before the job's state says it ended.
LOCAL_LOGS = Cadence(initial=0.1, maximum=1.0, overlap=1.0, grace=0.0, opening=5.0)
#: A stream the server ended sooner than this after it opened counts as broken
#: (Cloud Logging ends a session after an hour; one ended at once is no session).
MIN_SESSION_SECONDS = 60.0


# --- the query ------------------------------------------------------------------------

def check_replica(replica: str) -> str:
    """``workerpoolK-I`` (or ``service``), else a usage error."""
    if replica != SERVICE_TASK and slots.parse_replica(replica) is None:
        raise UsageError(f"--replica takes a replica name such as workerpool0-0 or workerpool1-3, got {replica!r}")
    return replica


def log_filter(job_id: str, *, replica: str | None = None, since: str | None = None) -> str:
    """The Logging query of a job's lines (https://cloud.google.com/logging/docs/view/logging-query-language)."""
    parts = [f'resource.type="{ML_JOB}"', f'resource.labels.job_id="{job_id}"']
    if replica:
        parts.append(f'resource.labels.task_name="{check_replica(replica)}"')
    if since:
        parts.append(f'timestamp>="{since}"')
    return " AND ".join(parts)


def parse_since(text: str, now: datetime | None = None) -> str:
    """``--since``: a duration back from now (``90s``, ``10m``, ``2h``, ``1d``) or an
    RFC 3339 timestamp → the RFC 3339 UTC timestamp the query starts at."""
    text = text.strip()
    seconds = duration_seconds(text, unit_required=True)
    if seconds is not None:
        try:
            return format_time((now or datetime.now(timezone.utc)) - timedelta(seconds=seconds))
        except OverflowError:  # past timedelta's 999,999,999 days, or before the year 1
            raise UsageError(f"--since {text[:40]!r} reaches back before the year 1: give a duration such as "
                             "30s, 10m, 2h, 1d or an RFC 3339 time") from None
    try:
        return format_time(parse_time(text))
    except ValueError:
        raise UsageError(f"--since takes a duration (30s, 10m, 2h, 1d) or an RFC 3339 time "
                         f"(2024-05-01T12:00:00Z), got {text!r}") from None


# --- entries --------------------------------------------------------------------------

def entry_of(raw: dict[str, Any]) -> Entry:
    """A LogEntry (REST JSON) → Entry: the replica from the task name, the text from
    ``textPayload``, else ``jsonPayload.message``, else the JSON payload itself."""
    labels = (raw.get("resource") or {}).get("labels") or {}
    return Entry(replica=labels.get("task_name") or SERVICE_TASK, timestamp=raw.get("timestamp", ""),
                 severity=raw.get("severity", "DEFAULT"), text=_text_of(raw),
                 insert_id=raw.get("insertId", ""))


def _text_of(raw: dict[str, Any]) -> str:
    if "textPayload" in raw:
        return str(raw["textPayload"]).rstrip("\n")
    payload = raw.get("jsonPayload")
    if isinstance(payload, dict):
        if "message" in payload:
            return str(payload["message"]).rstrip("\n")
        return json.dumps(payload, sort_keys=True)
    return ""


def read_entries(reader: LogReader, project: str, job_id: str, *, replica: str | None = None,
                 since: str | None = None) -> list[Entry]:
    """Every line of the job (of ``replica``, from ``since``), oldest first, all pages."""
    query = log_filter(job_id, replica=replica, since=since)
    return [entry_of(raw) for raw in reader.list_entries(project, query, order_by="timestamp asc")]


# --- following ------------------------------------------------------------------------

class Follower:
    """New lines of one job on each ``read()``; ``delay()`` says when to read next."""

    def __init__(self, reader: LogReader, project: str, job_id: str, *, replica: str | None = None,
                 since: str | None = None, cadence: Cadence = VERTEX_LOGS) -> None:
        self.reader, self.project, self.job_id = reader, project, job_id
        self.replica = check_replica(replica) if replica else None
        self.cadence = cadence
        self.reads = 0
        self._since = since
        self._cursor: datetime | None = None  # the newest timestamp seen
        self._seen: dict[str, datetime] = {}  # insertId → timestamp, within the overlap window
        self._delay = cadence.initial

    def read(self) -> list[Entry]:
        """The lines not seen yet, oldest first; the next delay backs off when there were none."""
        self.reads += 1
        query = log_filter(self.job_id, replica=self.replica, since=self._start())
        # Every page first: a page that fails must not leave the lines of the pages
        # before it marked seen, or they would never be shown.
        entries = [entry_of(raw) for raw in self.reader.list_entries(self.project, query)]
        fresh = [e for e in entries if self._is_new(e)]
        self._prune()
        self._delay = (self.cadence.initial if fresh
                       else min(self._delay * self.cadence.multiplier, self.cadence.maximum))
        return fresh

    def open_tail(self) -> LogTail:
        """A TailLogEntries stream of the job's lines (of ``replica``)."""
        return self.reader.tail(self.project, log_filter(self.job_id, replica=self.replica))

    def take(self, raws: list[EntryDict]) -> list[Entry]:
        """The entries of a stream's response not seen yet (by either way), oldest first."""
        fresh = [entry for entry in map(entry_of, raws) if self._is_new(entry)]
        self._prune()
        return fresh

    def delay(self) -> float:
        """Seconds until the next read."""
        return self._delay

    def back_off(self) -> None:
        """A read failed (quota, unavailable): wait the longest interval before the next."""
        self._delay = self.cadence.maximum

    def _start(self) -> str | None:
        if self._cursor is None:
            return self._since
        return format_time(self._cursor - timedelta(seconds=self.cadence.overlap))

    def _is_new(self, entry: Entry) -> bool:
        key = entry.insert_id or f"{entry.timestamp}|{entry.replica}|{entry.text}"
        if key in self._seen:
            return False
        try:
            when = parse_time(entry.timestamp)
        except ValueError:
            when = self._cursor or datetime.now(timezone.utc)
        self._seen[key] = when
        self._cursor = when if self._cursor is None else max(self._cursor, when)
        return True

    def _prune(self) -> None:
        """Forget ids older than the overlap window: no later read can return them."""
        if self._cursor is None:
            return
        horizon = self._cursor - timedelta(seconds=self.cadence.overlap + 1)
        self._seen = {k: t for k, t in self._seen.items() if t >= horizon}


#: Where followed lines go: the new entries of one read, oldest first.
LogSink = Callable[[list[Entry]], None]


class _Pump:
    """Reads one tail stream on its own thread into a queue; the following thread takes
    the batches from it and shows the lines (the sink is only ever called there)."""

    def __init__(self, tail: LogTail) -> None:
        self.tail = tail
        self.opened = False  # its first response came: every line written from then on reaches it
        self.started = time.monotonic()
        #: A batch; an ApiError (the stream broke or was refused); None (the server ended it).
        self.items: queue.Queue[TailBatch | ApiError | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="vxtrain-log-tail", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            for batch in self.tail.batches():
                self.items.put(batch)
        except ApiError as exc:
            self.items.put(exc)
            return
        except Exception as exc:  # noqa: BLE001 - a thread's end: the follower must hear of it, or wait forever
            self.items.put(ApiError(f"the log stream failed: {exc}"))
            return
        self.items.put(None)

    def close(self) -> None:
        """End the stream and wait for its thread (closing makes ``batches`` return)."""
        self.tail.close()
        self._thread.join(timeout=10.0)


class LogWatch:
    """Reads a job's new lines into ``sink`` while the caller waits on the job's state.

    ``sleep(seconds)`` stands in for the caller's pause between two state polls. With
    ``stream``, lines come from one TailLogEntries stream as they are written (read on a
    thread of its own, shown on the caller's), falling back to polling as the module's
    docstring says; else, and after a fall back, it reads whenever the follower is due.
    A read that fails transiently (unavailable, quota) waits the longest interval; any
    other failure (no permission to read logs, say) is reported once through ``warn``
    and stops the reading, never the wait. ``close()`` ends the stream (idempotent).
    """

    def __init__(self, follower: Follower, sink: LogSink, *, warn: Say,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 stream: bool = False) -> None:
        self.follower, self.sink, self.warn = follower, sink, warn
        self._clock, self._sleep = clock, sleep
        self._due = clock()
        self.stopped = False
        self.streaming = stream  # False once it fell back to polling
        self._pump: _Pump | None = None
        self._catch_up_at: float | None = None  # when to read what the stream cannot carry
        self._reopens = 1  # a broken stream is opened again once; the next break falls back

    def sleep(self, seconds: float) -> None:
        """Pause ``seconds``, showing lines as they arrive (or reading whenever due)."""
        end = self._clock() + seconds
        if self.streaming and not self.stopped:
            self._stream_until(end)
            if self.streaming:
                return
        self._poll_until(end)

    def finish(self) -> None:
        """The job ended: keep the stream open (or read on) through ``cadence.grace``
        seconds, for the last lines Cloud Logging may still be taking in; a stream then
        closes, and one ListLogEntries read gets what it had not carried yet."""
        end = self._clock() + self.follower.cadence.grace
        if self.streaming and self._pump is not None and not self.stopped:
            self._stream_until(end)
            if self.streaming:
                self.close()
                if not self.stopped:
                    self._read()
                return
        self._poll_finish(end)

    def close(self) -> None:
        """End the stream, if one is open (idempotent)."""
        pump, self._pump = self._pump, None
        if pump is not None:
            pump.close()

    # -- streaming --

    def _stream_until(self, end: float) -> None:
        if self._pump is None:
            self._open()
        while self._pump is not None and not self.stopped:
            now = self._clock()
            if self._catch_up_at is not None and now >= self._catch_up_at:
                self._catch_up()
                continue
            if now >= end:
                return
            limit = end if self._catch_up_at is None else min(end, self._catch_up_at)
            try:
                item = self._pump.items.get(timeout=limit - now)
            except queue.Empty:
                continue
            self._take(self._pump, item)

    def _open(self) -> None:
        try:
            tail = self.follower.open_tail()
        except ApiError as exc:
            self._fall_back(f"the log stream could not be opened ({exc})")
            return
        self._pump = _Pump(tail)
        # The lines before the stream are read once it answers, or after ``opening`` anyway.
        self._catch_up_at = self._clock() + self.follower.cadence.opening

    def _take(self, pump: _Pump, item: TailBatch | ApiError | None) -> None:
        if isinstance(item, TailBatch):
            if not pump.opened:  # from now on every line reaches the stream: read the ones before
                pump.opened = True
                self._catch_up()
            fresh = self.follower.take(item.entries)
            if fresh:
                self.sink(fresh)
            if item.suppressed:  # the server left lines out of the stream: read them
                self._catch_up()
            return
        self.close()
        if item is None:
            lasted = time.monotonic() - pump.started
            if lasted >= MIN_SESSION_SECONDS:  # a session that ran its time: the next one goes on
                self._open()
            else:
                self._broke(f"the server ended it after {lasted:.0f} s")
        elif item.transient:
            self._broke(str(item))
        else:
            self._fall_back(f"the log stream was refused: {item}")

    def _broke(self, why: str) -> None:
        if self._reopens > 0:
            self._reopens -= 1
            self._open()  # its first response reads the gap
        else:
            self._fall_back(f"the log stream broke again: {why}")

    def _catch_up(self) -> None:
        """Read with ListLogEntries what the stream cannot carry (from the last line seen,
        minus the overlap); a transient failure tries again after the longest interval."""
        self._catch_up_at = None
        if not self._read():
            self._catch_up_at = self._clock() + self.follower.cadence.maximum

    def _fall_back(self, why: str) -> None:
        self.close()
        self.streaming = False
        self._catch_up_at = None
        self.warn(f"following the job's logs by polling ListLogEntries from now on: {why}")
        self._due = self._clock()  # at once: from the last line the stream gave, minus the overlap

    # -- polling --

    def _poll_until(self, end: float) -> None:
        while True:
            now = self._clock()
            if not self.stopped and now >= self._due:
                self._read()
                self._due = self._clock() + self.follower.delay()
                now = self._clock()
            if now >= end:
                return
            self._sleep(min(end, self._due) - now if not self.stopped else end - now)

    def _poll_finish(self, end: float) -> None:
        while not self.stopped:
            self._read()
            left = end - self._clock()
            if left <= 0:
                return
            self._sleep(min(self.follower.cadence.initial, left))

    def _read(self) -> bool:
        """One ListLogEntries read into the sink; False when it failed transiently."""
        try:
            entries = self.follower.read()
        except ApiError as exc:
            if exc.transient or isinstance(exc, QuotaError):
                self.follower.back_off()
                return False
            self.warn(f"cannot read the job's logs ({exc}); following its state only")
            self.stopped = True
            self.close()
            return True
        if entries:
            self.sink(entries)
        return True
