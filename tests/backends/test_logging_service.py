"""The emulator's LoggingServiceV2 and the reading side (vxtrain.joblogs), through the
real google-cloud-logging client against the servicer served on 127.0.0.1."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from datetime import datetime, timedelta, timezone
from typing import Any

import grpc
import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud.logging_v2.services.logging_service_v2 import LoggingServiceV2Client
from google.cloud.logging_v2.services.logging_service_v2.transports import LoggingServiceV2GrpcTransport

from vxtrain import joblogs
from vxtrain.backends.base import MAX_TAIL_SESSIONS, TailBatch
from vxtrain.backends.cloud_logging import CloudLoggingReader
from vxtrain.backends.emulator.faults import FaultPlan
from vxtrain.backends.emulator.logging_service import LogStore, TailFault, generic_handler, split_line
from vxtrain.errors import (
    InvalidArgumentError, PermissionError_, QuotaError, UnavailableError, UsageError,
)

PROJECT = "test-project"


class Served:
    """A LogStore served on 127.0.0.1 with the emulator's Logging handler."""

    def __init__(self, *, take_fault: TailFault | None = None, max_tail_seconds: float = 3600.0) -> None:
        self.store = LogStore(max_tail_seconds=max_tail_seconds)
        # A tail session holds a handler thread while it is open: room for 12 of them.
        self.executor = futures.ThreadPoolExecutor(max_workers=16)
        self.server = grpc.server(self.executor, options=[("grpc.so_reuseport", 0)])
        self.server.add_generic_rpc_handlers((generic_handler(self.store, take_fault),))
        self.port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.address = f"127.0.0.1:{self.port}"

    def stop(self) -> None:
        """Stop serving, and end the handler threads: grpc never shuts down the executor it is given."""
        self.server.stop(None).wait()
        self.executor.shutdown(wait=True)


@pytest.fixture
def served() -> Iterator[Served]:
    s = Served()
    yield s
    s.stop()


@pytest.fixture
def reader(served: Served) -> Iterator[CloudLoggingReader]:
    r = CloudLoggingReader(served.address)
    yield r
    r.close()


def gapic(served: Served) -> LoggingServiceV2Client:
    """The unmodified GAPIC client on an insecure channel to the served store."""
    channel = grpc.insecure_channel(served.address)
    return LoggingServiceV2Client(transport=LoggingServiceV2GrpcTransport(
        channel=channel, credentials=AnonymousCredentials()))


def run_lines(store: LogStore, job_id: str, lines: list[str]) -> None:
    """Lines as the local runner prints them, fed as the emulator feeds them."""
    write = store.feed(PROJECT, job_id)
    for line in lines:
        write(line + "\n")


def test_lines_become_entries_shaped_as_vertex_writes_them(served: Served) -> None:
    run_lines(served.store, "42", ["[vxtrain] starting 2 replica(s)", "[workerpool0-0] hello"])
    client = gapic(served)
    entries = list(client.list_log_entries(request={
        "resource_names": [f"projects/{PROJECT}"],
        "filter": 'resource.type="ml_job" AND resource.labels.job_id="42"'}))
    assert [e.text_payload for e in entries] == ["starting 2 replica(s)", "hello"]
    chief = entries[1]
    assert chief.resource.type == "ml_job"
    assert dict(chief.resource.labels)["task_name"] == "workerpool0-0"
    assert dict(chief.resource.labels)["job_id"] == "42"
    assert dict(entries[0].resource.labels)["task_name"] == "service"
    assert chief.log_name == f"projects/{PROJECT}/logs/workerpool0-0"
    assert chief.insert_id and chief.timestamp > entries[0].timestamp


def test_entries_per_replica_in_order(served: Served, reader: CloudLoggingReader) -> None:
    lines = [f"[workerpool{k}-{i}] line {n}" for n in range(5) for k, i in ((0, 0), (1, 0), (1, 1))]
    run_lines(served.store, "7", lines)
    run_lines(served.store, "8", ["[workerpool0-0] another job"])
    got = joblogs.read_entries(reader, PROJECT, "7")
    assert [e.line() for e in got] == lines
    for replica in ("workerpool0-0", "workerpool1-0", "workerpool1-1"):
        mine = [e.text for e in got if e.replica == replica]
        assert mine == [f"line {n}" for n in range(5)]
    assert {e.severity for e in got} == {"INFO"}
    ts = [joblogs.parse_time(e.timestamp) for e in got]
    assert ts == sorted(ts)


def test_replica_filter(served: Served, reader: CloudLoggingReader) -> None:
    run_lines(served.store, "9", ["[workerpool0-0] a", "[workerpool1-0] b", "[workerpool0-0] c"])
    got = joblogs.read_entries(reader, PROJECT, "9", replica="workerpool0-0")
    assert [e.text for e in got] == ["a", "c"]
    with pytest.raises(UsageError, match="--replica"):
        joblogs.read_entries(reader, PROJECT, "9", replica="chief")


def test_since_filter(served: Served, reader: CloudLoggingReader) -> None:
    run_lines(served.store, "10", ["[workerpool0-0] old"])
    cut = joblogs.format_time(datetime.now(timezone.utc))
    run_lines(served.store, "10", ["[workerpool0-0] new"])
    assert [e.text for e in joblogs.read_entries(reader, PROJECT, "10", since=cut)] == ["new"]
    assert [e.text for e in joblogs.read_entries(reader, PROJECT, "10", since=joblogs.parse_since("1h"))] == [
        "old", "new"]


def test_paging_over_many_lines(served: Served, reader: CloudLoggingReader) -> None:
    lines = [f"[workerpool{n % 2}-0] step {n}" for n in range(2500)]
    run_lines(served.store, "11", lines)
    got = joblogs.read_entries(reader, PROJECT, "11")
    assert [e.line() for e in got] == lines
    assert reader.calls == 3  # pages of 1000

    client = gapic(served)
    pager = client.list_log_entries(request={"resource_names": [f"projects/{PROJECT}"],
                                             "filter": 'resource.labels.job_id="11"', "page_size": 7})
    assert sum(1 for _ in pager) == 2500
    default = next(iter(client.list_log_entries(request={
        "resource_names": [f"projects/{PROJECT}"], "filter": 'resource.labels.job_id="11"'}).pages))
    assert len(default.entries) == 50  # Cloud Logging's default page size


def test_newest_first_and_the_query_subset(served: Served) -> None:
    run_lines(served.store, "12", ["[workerpool0-0] a", "[workerpool0-0] b", "[workerpool1-0] c"])
    client = gapic(served)

    def texts(filter_: str, order_by: str = "") -> list[str]:
        return [e.text_payload for e in client.list_log_entries(request={
            "resource_names": [f"projects/{PROJECT}"], "filter": filter_, "order_by": order_by})]

    assert texts('resource.labels.job_id="12"', "timestamp desc") == ["c", "b", "a"]
    assert texts('resource.labels.job_id="12" resource.labels.task_name!="workerpool0-0"') == ["c"]
    assert texts('resource.labels.job_id="12" AND textPayload:"b"') == ["b"]
    assert texts('resource.labels.job_id="12" AND severity>=ERROR') == []
    assert texts('logName="projects/test-project/logs/workerpool1-0"') == ["c"]
    for bad in ('resource.labels.job_id="12" OR severity=INFO', "jsonPayload.x=1", 'timestamp>="yesterday"'):
        with pytest.raises(gexc.InvalidArgument):
            texts(bad)
    with pytest.raises(gexc.InvalidArgument, match="order_by"):
        texts("", "severity")
    assert [e.text_payload for e in client.list_log_entries(request={
        "resource_names": ["projects/elsewhere"], "filter": ""})] == []


def test_errors_are_translated(served: Served, reader: CloudLoggingReader) -> None:
    with pytest.raises(InvalidArgumentError, match="Cloud Logging"):
        list(reader.list_entries(PROJECT, "OR"))


def test_split_line() -> None:
    assert split_line("[workerpool1-2] x [y]") == ("workerpool1-2", "x [y]")
    assert split_line("[trial 3] [workerpool0-0] loss=1") == ("workerpool0-0", "loss=1")
    assert split_line("[vxtrain] succeeded: ok") == ("service", "succeeded: ok")
    assert split_line("bare") == ("service", "bare")


# --- the reading side, with no server -----------------------------------------------------

def test_filter_and_since() -> None:
    assert joblogs.log_filter("5") == 'resource.type="ml_job" AND resource.labels.job_id="5"'
    assert joblogs.log_filter("5", replica="workerpool2-1", since="2024-01-01T00:00:00.000000Z") == (
        'resource.type="ml_job" AND resource.labels.job_id="5" AND '
        'resource.labels.task_name="workerpool2-1" AND timestamp>="2024-01-01T00:00:00.000000Z"')
    now = datetime(2024, 5, 1, 12, 0, tzinfo=timezone.utc)
    assert joblogs.parse_since("10m", now) == "2024-05-01T11:50:00.000000Z"
    assert joblogs.parse_since("2024-05-01T14:00:00+02:00") == "2024-05-01T12:00:00.000000Z"
    assert joblogs.parse_since("2024-05-01T12:00:00.123456789Z") == "2024-05-01T12:00:00.123456Z"
    with pytest.raises(UsageError, match="--since"):
        joblogs.parse_since("yesterday")


def test_entry_text_from_json_payload() -> None:
    e = joblogs.entry_of({"resource": {"labels": {"task_name": "workerpool1-0"}}, "severity": "ERROR",
                          "timestamp": "2024-01-01T00:00:00Z", "jsonPayload": {"message": "boom\n", "x": 1}})
    assert e.to_json() == {"replica": "workerpool1-0", "timestamp": "2024-01-01T00:00:00Z",
                           "severity": "ERROR", "text": "boom"}
    assert joblogs.entry_of({"jsonPayload": {"a": 1}}).text == '{"a": 1}'
    assert joblogs.entry_of({}).line() == "[service] "


class FakeReader:
    """A LogReader that replays a list (entries may turn up late, as in Cloud Logging)."""

    emulated = True

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []
        self.filters: list[str] = []

    def add(self, seconds: float, text: str, insert_id: str) -> None:
        when = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=seconds)
        self.entries.append({"resource": {"labels": {"task_name": "workerpool0-0"}}, "textPayload": text,
                             "timestamp": joblogs.format_time(when), "insertId": insert_id})

    def list_entries(self, project: str, filter: str, *, order_by: str = "timestamp asc",  # noqa: A002
                     page_size: int = 1000) -> Iterator[dict[str, Any]]:
        self.filters.append(filter)
        start = filter.split('timestamp>="')[1].rstrip('"') if "timestamp>=" in filter else ""
        for raw in sorted(self.entries, key=lambda r: r["timestamp"]):
            if raw["timestamp"] >= start:
                yield raw

    def close(self) -> None:
        pass


def test_follower_reads_each_line_once_and_late_ones_within_the_overlap() -> None:
    fake = FakeReader()
    cadence = joblogs.Cadence(initial=1.0, maximum=8.0, overlap=30.0, grace=2.0)
    follower = joblogs.Follower(fake, PROJECT, "1", cadence=cadence)
    assert follower.read() == [] and follower.delay() == 2.0  # nothing yet: backs off
    fake.add(10, "a", "i1")
    fake.add(11, "b", "i2")
    assert [e.text for e in follower.read()] == ["a", "b"] and follower.delay() == 1.0
    fake.add(9, "late", "i0")  # readable only now, stamped before the cursor
    fake.add(12, "c", "i3")
    assert [e.text for e in follower.read()] == ["late", "c"]
    assert "timestamp>=\"2023-12-31T23:59:41" in fake.filters[-1]
    assert follower.read() == []
    assert [follower.read() or follower.delay() for _ in range(4)][-1] == 8.0  # capped
    follower.back_off()
    assert follower.delay() == 8.0


def test_watch_reads_while_waiting_and_through_the_grace_period() -> None:
    fake = FakeReader()
    follower = joblogs.Follower(fake, PROJECT, "1", cadence=joblogs.Cadence(1.0, 4.0, grace=2.5))
    clock = [0.0]
    got: list[str] = []

    def sleep(seconds: float) -> None:
        clock[0] += seconds
        fake.add(clock[0], f"t{clock[0]}", f"id{clock[0]}")

    watch = joblogs.LogWatch(follower, lambda entries: got.extend(e.text for e in entries),
                             warn=got.append, clock=lambda: clock[0], sleep=sleep)
    watch.sleep(3.0)  # reads at 0 (nothing: the next in 2 s), 2 and 3 (lines came: every 1 s)
    assert got == ["t2.0", "t3.0"] and follower.reads == 3 and clock[0] == 3.0
    watch.finish()  # once at the end, then on through the 2.5 s of grace
    assert got == ["t2.0", "t3.0", "t4.0", "t5.0", "t5.5"]


class FailingReader(FakeReader):
    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def list_entries(self, project: str, filter: str, *, order_by: str = "timestamp asc",  # noqa: A002
                     page_size: int = 1000) -> Iterator[dict[str, Any]]:
        self.filters.append(filter)
        raise self.error


def test_watch_backs_off_on_quota_and_stops_reading_without_permission() -> None:
    from vxtrain.errors import PermissionError_, QuotaError

    clock = [0.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    quota = FailingReader(QuotaError("read quota"))
    watch = joblogs.LogWatch(joblogs.Follower(quota, PROJECT, "1", cadence=joblogs.Cadence(1.0, 8.0)),
                             lambda e: None, warn=pytest.fail, clock=lambda: clock[0], sleep=sleep)
    watch.sleep(20.0)
    assert len(quota.filters) == 3  # at 0, 8, 16: the longest interval after each failure
    denied = FailingReader(PermissionError_("no roles/logging.viewer"))
    warned: list[str] = []
    watch = joblogs.LogWatch(joblogs.Follower(denied, PROJECT, "1", cadence=joblogs.Cadence(1.0, 8.0)),
                             lambda e: None, warn=warned.append, clock=lambda: clock[0], sleep=sleep)
    watch.sleep(20.0)
    watch.finish()
    assert len(denied.filters) == 1 and len(warned) == 1 and "following its state only" in warned[0]


class SecondPageFails(FakeReader):
    """Yields the first entry (page one), then fails once (page two is unavailable)."""

    def __init__(self) -> None:
        super().__init__()
        self.failed = False

    def list_entries(self, project: str, filter: str, *, order_by: str = "timestamp asc",  # noqa: A002
                     page_size: int = 1000) -> Iterator[dict[str, Any]]:
        pages = super().list_entries(project, filter, order_by=order_by, page_size=page_size)
        yield next(pages)
        if not self.failed:
            self.failed = True
            raise UnavailableError("page two")
        yield from pages


def test_a_read_that_fails_on_a_later_page_loses_no_line() -> None:
    fake = SecondPageFails()
    fake.add(1, "a", "i1")
    fake.add(2, "b", "i2")
    follower = joblogs.Follower(fake, PROJECT, "1", cadence=joblogs.Cadence(1.0, 8.0, overlap=30.0))
    with pytest.raises(UnavailableError, match="page two"):
        follower.read()
    assert [e.text for e in follower.read()] == ["a", "b"]


# --- live tailing (TailLogEntries) ----------------------------------------------------------

class Tailing:
    """A tail stream read on a thread, as vxtrain.joblogs reads it."""

    def __init__(self, reader: CloudLoggingReader, filter_: str = "") -> None:
        self.tail = reader.tail(PROJECT, filter_)
        self.batches: list[Any] = []
        self.error: Exception | None = None
        self.thread = threading.Thread(target=self._run)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.batches.extend(self.tail.batches())
        except Exception as exc:  # noqa: BLE001 - the test reads what ended the stream
            self.error = exc

    def texts(self) -> list[str]:
        return [e["textPayload"] for b in self.batches for e in b.entries]

    def close(self) -> None:
        self.tail.close()
        self.thread.join(5)


def until(check: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_tail_sends_the_matching_entries_as_they_are_written(served: Served, reader: CloudLoggingReader) -> None:
    run_lines(served.store, "20", ["[workerpool0-0] before the stream"])
    tailing = Tailing(reader, 'resource.labels.job_id="20" AND resource.labels.task_name="workerpool0-0"')
    until(lambda: served.store.tail_sessions(PROJECT) == 1 and tailing.batches)  # the empty first response
    run_lines(served.store, "20", ["[workerpool0-0] a", "[workerpool1-0] not this replica", "[workerpool0-0] b"])
    run_lines(served.store, "21", ["[workerpool0-0] not this job"])
    until(lambda: tailing.texts() == ["a", "b"])
    tailing.close()
    assert tailing.error is None and not tailing.thread.is_alive()
    until(lambda: served.store.tail_sessions(PROJECT) == 0)  # the client's close ended the session
    assert reader.tails == 1


def test_an_eleventh_tail_session_is_refused(served: Served, reader: CloudLoggingReader) -> None:
    open_ = [Tailing(reader) for _ in range(MAX_TAIL_SESSIONS)]
    until(lambda: served.store.tail_sessions(PROJECT) == MAX_TAIL_SESSIONS)
    eleventh = Tailing(reader)
    eleventh.thread.join(5)
    assert isinstance(eleventh.error, QuotaError) and "too many tail sessions" in str(eleventh.error)
    assert served.store.tail_sessions(PROJECT) == MAX_TAIL_SESSIONS
    open_[0].close()
    until(lambda: served.store.tail_sessions(PROJECT) == MAX_TAIL_SESSIONS - 1)
    twelfth = Tailing(reader)
    until(lambda: served.store.tail_sessions(PROJECT) == MAX_TAIL_SESSIONS)
    reader.close()  # closing the reader ends every stream it opened
    for tailing in [*open_, twelfth]:
        tailing.thread.join(5)
        assert not tailing.thread.is_alive() and tailing.error is None


@pytest.mark.slow
def test_tail_faults_refuse_or_break_a_session_and_a_session_ends_after_its_time() -> None:
    plan = FaultPlan(["tail:permission:1", "tail:unavailable:1"])
    s = Served(take_fault=plan.take_tail, max_tail_seconds=0.5)
    r = CloudLoggingReader(s.address)
    try:
        refused = Tailing(r)
        refused.thread.join(5)
        assert isinstance(refused.error, PermissionError_) and refused.batches == []
        broken = Tailing(r)
        until(lambda: broken.batches)
        run_lines(s.store, "1", ["[workerpool0-0] x", "[workerpool0-0] y"])
        broken.thread.join(5)
        assert isinstance(broken.error, UnavailableError) and broken.texts() == ["x", "y"]
        timed = Tailing(r)
        timed.thread.join(5)  # OUT_OF_RANGE after 0.5 s: the iteration ends (open another to go on)
        assert not timed.thread.is_alive() and timed.error is None
        with pytest.raises(gexc.InvalidArgument, match="buffer_window"):  # the GAPIC method waits for an answer
            gapic(s).tail_log_entries(requests=iter([{"resource_names": [f"projects/{PROJECT}"],
                                                       "buffer_window": {"seconds": 61}}]))
    finally:
        r.close()
        s.stop()


def test_stopping_the_server_ends_its_streams(reader: CloudLoggingReader, served: Served) -> None:
    tailing = Tailing(reader)
    until(lambda: served.store.tail_sessions(PROJECT) == 1)
    started = time.monotonic()
    served.stop()
    tailing.thread.join(5)
    assert not tailing.thread.is_alive() and time.monotonic() - started < 3
    assert isinstance(tailing.error, UnavailableError)


class FakeTail:
    """A LogTail whose responses ``script`` yields; it then stays open (quiet) until closed."""

    def __init__(self, script: Callable[[], Iterator[TailBatch]]) -> None:
        self.script = script
        self._closed = threading.Event()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    def batches(self) -> Iterator[TailBatch]:
        yield from self.script()
        self._closed.wait(5)

    def close(self) -> None:
        self._closed.set()


class TailingReader(FakeReader):
    """A FakeReader that also tails; ``read_once`` is set after its first ListLogEntries."""

    def __init__(self) -> None:
        super().__init__()
        self.read_once = threading.Event()
        self.opened: list[FakeTail] = []
        self.script: Callable[[], Iterator[TailBatch]] = lambda: iter(())

    def list_entries(self, project: str, filter: str, *, order_by: str = "timestamp asc",  # noqa: A002
                     page_size: int = 1000) -> Iterator[dict[str, Any]]:
        yield from super().list_entries(project, filter, order_by=order_by, page_size=page_size)
        self.read_once.set()

    def tail(self, project: str, filter: str) -> FakeTail:  # noqa: A002
        self.opened.append(FakeTail(self.script))
        return self.opened[-1]


def sleep_until(watch: joblogs.LogWatch, done: Callable[[], bool], limit: float = 10.0) -> None:
    """``watch.sleep`` in short steps until ``done()`` (a loaded machine may take longer than a
    fixed pause), failing after ``limit`` seconds."""
    deadline = time.monotonic() + limit
    while not done():
        assert time.monotonic() < deadline, "the watch did not get there"
        watch.sleep(0.05)


def test_a_stream_that_left_lines_out_is_caught_up_by_a_read() -> None:
    fake = TailingReader()
    fake.add(0, "line 0", "i0")

    def script() -> Iterator[TailBatch]:
        yield TailBatch([])  # open: the follower reads what came before (line 0)
        assert fake.read_once.wait(5)
        for n in (1, 2, 3):
            fake.add(n, f"line {n}", f"i{n}")
        yield TailBatch([fake.entries[-1]], suppressed=2)  # lines 1 and 2 left out (rate limit)

    fake.script = script
    got: list[str] = []
    follower = joblogs.Follower(fake, PROJECT, "1", cadence=joblogs.Cadence(1.0, 8.0, overlap=30.0))
    watch = joblogs.LogWatch(follower, lambda entries: got.extend(e.text for e in entries), warn=pytest.fail,
                             stream=True)
    sleep_until(watch, lambda: len(got) >= 4)
    watch.close()
    assert got == ["line 0", "line 3", "line 1", "line 2"]  # the left-out lines, read after the suppression
    assert follower.reads == 2 and len(fake.opened) == 1 and fake.opened[0].closed and watch.streaming


def test_a_stream_slow_to_answer_does_not_hold_back_the_lines_before_it() -> None:
    fake = TailingReader()
    fake.add(0, "before the stream", "i0")

    def script() -> Iterator[TailBatch]:
        assert fake.read_once.wait(5)  # no answer yet: the lines before it were read after `opening`
        fake.add(1, "while it opened", "i1")
        yield TailBatch([])  # open at last: read again, for what came in between

    fake.script = script
    got: list[str] = []
    follower = joblogs.Follower(fake, PROJECT, "1", cadence=joblogs.Cadence(1.0, 8.0, overlap=30.0, opening=0.05))
    watch = joblogs.LogWatch(follower, lambda entries: got.extend(e.text for e in entries), warn=pytest.fail,
                             stream=True)
    sleep_until(watch, lambda: len(got) >= 2)
    watch.sleep(0.2)  # a third read, were there one, would come now
    watch.close()
    assert got == ["before the stream", "while it opened"] and follower.reads == 2
