"""The job store: what JobService does, over plain proto-plus messages (no gRPC here).

Jobs get decimal ids and ``projects/P/locations/L/customJobs/ID`` names like
Vertex's; each walks QUEUED → PENDING → RUNNING → SUCCEEDED / FAILED /
CANCELLED on its own thread, which hands the running part to
:class:`~vxtrain.backends.emulator.runs.JobRunner`. Every RPC goes through the
fault plan first (:mod:`vxtrain.backends.emulator.faults`).
"""
from __future__ import annotations

import itertools
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import grpc
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.longrunning import operations_pb2
from google.rpc import status_pb2

from vxtrain.backends.emulator import filters
from vxtrain.backends.emulator.checks import check_name, invalid_argument, job_problems, parse_parent
from vxtrain.backends.emulator.common import (
    CANCELLING, FAILED, PENDING, QUEUED, RUNNING, SUCCEEDED, TERMINAL_STATES, RpcError, copy, decode_cursor,
    done_operation, encode_cursor, now, operation_id, spec_of,
)
from vxtrain.backends.emulator.faults import LATE_COMMIT_SECONDS, Fault, FaultPlan, fault_error
from vxtrain.backends.emulator.logging_service import LogStore
from vxtrain.backends.emulator.persistent_resources import ResourceStore
from vxtrain.backends.emulator.quotas import QuotaLimit, QuotaStore
from vxtrain.backends.emulator.runs import JobRunner, Outcome, cancelled
from vxtrain.backends.emulator.stockouts import Preemptions, Shortage, Stockouts, stockout_message
from vxtrain.model import LocalSpec
from vxtrain.runtime.gpus import GpuOptions
from vxtrain.vocab.kinds import RESOURCE_EXHAUSTED, JobKind

#: Pause between the states of a job that really runs, so a poller can see them.
STEP_SECONDS = 0.05


@dataclass
class Record:
    """One stored job, its cancel switch and its lifecycle thread (a ``runs.RunningJob``)."""

    kind: JobKind
    job: Any
    seq: int = 0            # creation order: lists are newest first, page tokens name a seq
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    history: list[JobState] = field(default_factory=list)
    #: The capacity its region lacked when it was created (None: it gets its machines).
    shortage: Shortage | None = None
    #: Seconds it may run before it loses its machines (``--preempt``; None: it keeps them).
    preempt_after: float | None = None
    #: Set when it lost them: its run was stopped, and it ends FAILED for capacity.
    preempted: bool = False
    #: Set once it is in a terminal state (what a ``--preempt`` timer waits on).
    ended: threading.Event = field(default_factory=threading.Event)


@dataclass(frozen=True)
class _Seen:
    """What a list filter reads of a job (vxtrain.backends.emulator.filters), as it was when
    the list came: taken under the lock, judged outside it."""

    display_name: str
    labels: dict[str, str]
    state: JobState
    #: The job's create time (a proto-plus DatetimeWithNanoseconds), for ``create_time`` filters.
    create_time: Any


class Emulator:
    """The JobService's behaviour over plain proto-plus messages (no gRPC here).

    ``simulate_seconds``: instead of running jobs, walk every job through the
    states on a timer (spread over that many seconds) and succeed.
    ``workdir``: where relative commands of jobs run (default: the current
    directory at start). ``seed``: seeds the random search of studies. ``quotas``: the
    quota limits it serves (Cloud Quotas API) and enforces at create (``METRIC:REGION=N``).
    ``gpus``: how the jobs' replicas share this host's GPUs (vxtrain.runtime.gpus).
    ``stockouts``: the regions without capacity (see vxtrain.backends.emulator.stockouts).
    ``preemptions``: the regions whose running jobs lose their machines (``--preempt``, same module).
    """

    def __init__(self, *, faults: Iterable[Fault | str] = (), simulate_seconds: float | None = None,
                 workdir: str | Path | None = None, out: TextIO | None = None, seed: int | None = None,
                 quotas: Iterable[QuotaLimit | str] = (), gpus: GpuOptions | None = None,
                 stockouts: Stockouts | None = None, preemptions: Preemptions | None = None) -> None:
        self.faults = FaultPlan()
        #: Regions where running jobs lose their machines (changeable while serving).
        self.preemptions = preemptions or Preemptions()
        #: Regions where jobs stock out or stay PENDING (changeable while serving).
        self.stockouts = stockouts or Stockouts()
        for fault in faults:
            self.faults.add(fault)
        self._lock = threading.RLock()
        #: Every line the jobs print, as Cloud Logging entries (served by logging_service).
        self.logs = LogStore()
        #: The persistent resources (served by persistent_resources).
        self.resources = ResourceStore()
        #: The quota limits (served by quotas, enforced by create).
        self.quotas = QuotaStore(quotas)
        self.runner = JobRunner(self._lock, simulate_seconds=simulate_seconds, workdir=workdir, out=out,
                                seed=seed, logs=self.logs, gpus=gpus)
        self._records: dict[str, Record] = {}
        self._threads: list[threading.Thread] = []  # every lifecycle thread, deleted jobs' too
        self._seq = itertools.count(1)
        self._closed = False

    # -- public helpers for tests and --target local --

    def add_fault(self, fault: Fault | str) -> None:
        """Inject a fault at runtime (``"create:quota:1"`` or a Fault)."""
        self.faults.add(fault)

    def register_local(self, labels: Mapping[str, str], local: LocalSpec | None,
                       base_dir: str | Path | None = None) -> None:
        """Run jobs whose labels include ``labels`` with ``local`` (``local.command`` etc.),
        relative paths from ``base_dir`` (the spec's folder) when this host has it.

        The compiled CustomJob has no ``local:`` block, so vxtrain's submit tells the
        emulator out of band (``vxtrain.backends.base.LOCAL_METADATA``).
        """
        self.runner.register_local(labels, local, base_dir)

    def jobs(self, kind: str = "custom") -> list[Any]:
        """Copies of the stored jobs of ``kind`` ("custom" or "hpt"), oldest first."""
        with self._lock:
            return [copy(r.job) for r in self._records.values() if r.kind.key == kind]

    def job(self, name: str) -> Any:
        """A copy of the stored job called ``name`` (KeyError when absent)."""
        with self._lock:
            return copy(self._records[name].job)

    def history(self, name: str) -> list[JobState]:
        """Every state job ``name`` has been in, in order."""
        with self._lock:
            return list(self._records[name].history)

    def wait(self, name: str, timeout: float = 30.0) -> Any:
        """Block until job ``name`` is in a terminal state; return a copy of it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(name)
            if job.state in TERMINAL_STATES:
                return job
            time.sleep(0.01)
        raise TimeoutError(f"{name} did not finish within {timeout} s")

    def close(self, timeout: float = 10.0) -> None:
        """Cancel every unfinished job and wait for their threads (and so their
        processes: the local runner stops them before it returns). Creates
        after this are refused, so no thread can start behind it."""
        with self._lock:
            self._closed = True
            records, threads = list(self._records.values()), list(self._threads)
        for record in records:
            record.stop.set()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- the RPCs --

    def call(self, method: str, action: Callable[[], Any], job: Any = None) -> Any:
        """Run one RPC's ``action`` under the fault plan of ``method``."""
        fault = self.faults.take(method)
        if fault is not None and fault.before_commit:
            raise fault_error(fault, job)
        if fault is not None and fault.commits_late:
            self._later(LATE_COMMIT_SECONDS, action)
            raise fault_error(fault, job)
        result = action()
        if fault is not None:
            raise fault_error(fault, job)
        return result

    def _later(self, seconds: float, action: Callable[[], Any]) -> None:
        """Run ``action`` in ``seconds`` on a thread ``close()`` joins (an RPC answered
        already, committed late); its errors have no caller to reach, so they are dropped."""
        def commit() -> None:
            time.sleep(seconds)
            try:
                action()
            except RpcError:
                pass  # e.g. the emulator closed meanwhile: nothing is stored

        self._spawn(commit, "late-commit")

    def create(self, kind: JobKind, parent: str, job: Any) -> Any:
        """Validate and store ``job``, start its lifecycle; return the stored copy."""
        project, location = parse_parent(parent)
        problems = job_problems(kind, job, location)
        if problems:
            raise invalid_argument(problems)
        self.quotas.check_create(job, location)  # RESOURCE_EXHAUSTED, as Vertex AI refuses a job above a limit
        job = copy(job)
        with self._lock:
            if self._closed:
                raise RpcError(grpc.StatusCode.UNAVAILABLE, "The service is shutting down.")
            job.name = f"projects/{project}/locations/{location}/{kind.collection}/{self._new_id()}"
            # Read at create: a region given capacity back later does not rescue the job.
            record = Record(kind, job, seq=next(self._seq), shortage=self.stockouts.of(job.name))
            if record.shortage is None:  # a job that never gets machines cannot lose them
                record.preempt_after = self.preemptions.claim(job.name)
            self._records[job.name] = record
            self._set_state(record, QUEUED, created=True)
            answer = copy(job)
            self._start(record)  # under the lock: close() sees every thread it must join
        return answer

    def get(self, kind: JobKind, name: str) -> Any:
        """A copy of the stored job ``name``."""
        with self._lock:
            return copy(self._record(kind, name).job)

    def list(self, kind: JobKind, parent: str, filter_: str, page_size: int, page_token: str) -> tuple[list[Any], str]:
        """One page of the jobs under ``parent`` matching ``filter_``, newest first.

        The filter is applied outside the lock, to what the jobs were when the call came (a
        snapshot of the fields it reads): however slow a filter, every other call goes on.
        """
        parse_parent(parent)
        keep = filters.parse_filter(filter_)
        before = decode_cursor("before", page_token)
        size = page_size if page_size > 0 else filters.DEFAULT_PAGE_SIZE
        prefix = f"{parent}/{kind.collection}/"
        with self._lock:
            records = [r for r in sorted(self._records.values(), key=lambda r: r.seq, reverse=True)
                       if r.kind is kind and r.job.name.startswith(prefix) and (before is None or r.seq < before)]
            if keep is None:  # no filter to run: the page at once, no snapshot
                return _page(records, size)
            candidates = [(r, _Seen(r.job.display_name, dict(r.job.labels), r.job.state, r.job.create_time))
                          for r in records]
        matched = [record for record, seen in candidates if keep(seen)]
        with self._lock:
            return _page(matched, size)

    def cancel(self, kind: JobKind, name: str) -> None:
        """Ask a job to stop: CANCELLING now, CANCELLED once its processes ended."""
        with self._lock:
            record = self._record(kind, name)
            if record.job.state in TERMINAL_STATES:
                raise RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                               f"Cannot cancel {kind.label} {name}: it is already in state "
                               f"{record.job.state.name}.")
            if record.job.state != CANCELLING:  # a repeated cancel changes nothing
                self._set_state(record, CANCELLING)
            record.stop.set()

    def delete(self, kind: JobKind, name: str) -> operations_pb2.Operation:
        """Remove a finished job; the answer is an already-done long-running operation."""
        with self._lock:
            record = self._record(kind, name)
            if record.job.state not in TERMINAL_STATES:
                raise RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                               f"{kind.label} {name} is in state {record.job.state.name}; "
                               "cancel it and wait for it to end before deleting it.")
            del self._records[name]
        return done_operation(f"{name}/operations/{operation_id()}")

    def cancel_jobs_on(self, resource: str) -> None:
        """Cancel the unfinished jobs that run on the persistent resource ``resource``
        (``projects/P/locations/L/persistentResources/ID``), as deleting it does on Vertex AI."""
        parent, _, resource_id = resource.rpartition("/persistentResources/")
        with self._lock:
            for name, record in self._records.items():
                on_it = spec_of(record.job).persistent_resource_id == resource_id and name.startswith(f"{parent}/")
                if on_it and record.job.state not in TERMINAL_STATES:
                    self.cancel(record.kind, name)

    # -- internals --

    def _new_id(self) -> int:
        """A unique decimal id shaped like Vertex's (19 digits)."""
        while True:
            candidate = 10**18 + secrets.randbelow(9 * 10**18)
            if not any(n.endswith(f"/{candidate}") for n in self._records):
                return candidate

    def _record(self, kind: JobKind, name: str) -> Record:
        check_name(kind, name)
        record = self._records.get(name)
        if record is None or record.kind is not kind:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"The {kind.label} {name} does not exist.")
        return record

    def _set_state(self, record: Record, state: JobState, *, created: bool = False) -> None:
        stamp = now()
        job = record.job
        job.state = state
        job.update_time = stamp
        record.history.append(state)
        if created:
            job.create_time = stamp
        if state == RUNNING:
            job.start_time = stamp

    def _advance(self, record: Record, state: JobState) -> bool:
        """Move to ``state`` unless a cancel came first; False when cancelled."""
        with self._lock:
            if record.stop.is_set():
                return False
            self._set_state(record, state)
            return True

    def _finish(self, record: Record, outcome: Outcome) -> None:
        with self._lock:
            self._set_state(record, outcome.state)
            record.job.end_time = record.job.update_time
            if outcome.state != SUCCEEDED:
                record.job.error = status_pb2.Status(code=outcome.code, message=outcome.message)
            record.ended.set()

    def _start(self, record: Record) -> None:
        thread = threading.Thread(target=self._lifecycle, args=(record,), daemon=True,
                                  name=f"vxtrain-emulator-{record.job.name.rsplit('/', 1)[-1]}")
        record.thread = thread
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _lifecycle(self, record: Record) -> None:
        """QUEUED → PENDING → RUNNING → (run or simulate) → terminal state."""
        simulate = self.runner.simulate_seconds
        step = (simulate or 0) / 4 if simulate else STEP_SECONDS
        if record.shortage is not None:
            self._short(record, record.shortage, step)
            return
        for state in (PENDING, RUNNING):
            if record.stop.wait(step) or not self._advance(record, state):
                self._finish(record, cancelled(record.kind))
                return
        if record.preempt_after is not None:
            self._spawn(lambda: self._preempt(record), "preempt")
        try:
            outcome = self.runner.execute(record, step)
        except Exception as exc:  # noqa: BLE001 - a job thread must always end its job
            outcome = Outcome(FAILED, 13, f"The emulator could not run the job: {exc}")
        with self._lock:  # a cancel that came before the end wins, as it does for a stockout
            if record.preempted and record.job.state != CANCELLING:
                outcome = Outcome(FAILED, RESOURCE_EXHAUSTED, stockout_message(record.job.name))
            self._finish(record, outcome)

    def _preempt(self, record: Record) -> None:
        """After ``preempt_after`` seconds RUNNING, take the job's machines: stop its run (its
        replicas get SIGTERM, then SIGKILL, as for a cancel) and mark it preempted; a job that
        ended or was cancelled first keeps its end."""
        assert record.preempt_after is not None  # only started for a job that has one
        if record.ended.wait(record.preempt_after):
            return
        with self._lock:
            if record.stop.is_set() or record.job.state != RUNNING:
                return
            record.preempted = True
            record.stop.set()
        self.runner.note(record, f"[vxtrain] preempted after {record.preempt_after:g} s RUNNING (--preempt): "
                                 "the job lost its machines; every replica is stopped\n")

    def _spawn(self, target: Callable[[], None], what: str) -> None:
        """Run ``target`` on a thread ``close()`` joins."""
        thread = threading.Thread(target=target, name=f"vxtrain-emulator-{what}", daemon=True)
        with self._lock:  # started under the lock: close() must never join a thread not started yet
            self._threads.append(thread)
            thread.start()


    def _short(self, record: Record, shortage: Shortage, step: float) -> None:
        """A job in a region without capacity: PENDING, then FAILED for capacity after
        ``stockouts.after`` seconds (a stockout), or until cancelled (pending)."""
        if record.stop.wait(step) or not self._advance(record, PENDING):
            self._finish(record, cancelled(record.kind))
            return
        wait = self.stockouts.after if shortage is Shortage.stockout else None
        cancel = record.stop.wait(wait)
        with self._lock:  # a cancel that came as the wait ended wins: the caller asked first
            failed = Outcome(FAILED, RESOURCE_EXHAUSTED, stockout_message(record.job.name))
            self._finish(record, cancelled(record.kind) if cancel or record.stop.is_set() else failed)


def _page(records: Sequence[Record], size: int) -> tuple[list[Any], str]:
    """The first ``size`` of ``records`` (copies: the caller holds the store's lock) and the
    cursor after them ("" when none is left)."""
    more = len(records) > size
    return [copy(r.job) for r in records[:size]], encode_cursor("before", records[size - 1].seq) if more else ""
