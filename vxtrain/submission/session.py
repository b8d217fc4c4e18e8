"""A session: everything one target needs, made once and carried by every call.

An HTTP client carries its per-target settings (transport, timeouts, event hooks) once
and logs through a named logger instead of taking a callback at every call; a session
does the same for a Job API. It holds:

* the target: Vertex AI's regional endpoints, the emulator at ``endpoint`` (with the
  ``token`` its calls carry), or an open ``backend`` (the in-process emulator of
  ``--target local``, which carries its private token); a backend per region is opened on
  first use and closed with the session;
* the retry and poll policy (``Backoff``: vxtrain.submission.retry), Vertex AI's or an
  emulator's unless given;
* the hooks a followed job reports to (vxtrain.submission.events.Hooks) and the logger
  its own lines go to (``vxtrain.submission``).

Its methods are the operations on one job (``get``, ``wait``, ``cancel``, ``jobs``,
``logs``); a job's whole life (vxtrain.submission.carry) and ``reconcile`` use the same
session. Nothing here imports google.cloud.aiplatform: the backend does, when it first
talks to an API.
"""
from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from types import TracebackType
from typing import TypeVar

from vxtrain import errors
from vxtrain.backends import open_backend, open_log_reader
from vxtrain.backends.base import JobBackend, JobDict
from vxtrain.joblogs import LOCAL_LOGS, VERTEX_LOGS, Entry, Follower, LogWatch, read_entries
from vxtrain.submission.events import LOGGER, Hooks
from vxtrain.submission.names import parent_of, split_name
from vxtrain.submission.retry import LOCAL_POLL, LOCAL_RETRY, VERTEX_POLL, VERTEX_RETRY, Backoff, retrying
from vxtrain.submission.views import JobView, job_cost, job_view, raise_for_state
from vxtrain.vocab.kinds import CUSTOM, TUNING, JobKind, JobState, kind_of_name

T = TypeVar("T")
#: Whether a followed job has gone far enough: its view and the seconds since following began.
Until = Callable[[JobView, float], bool]


@dataclass
class Session:
    """One target's settings, and the backends opened for it (closed with the session).

    ``endpoint``: an emulator's ``HOST:PORT`` (None: Vertex AI). ``backend``: an open
    backend that serves every region (the in-process emulator). ``token``: what the
    emulator's calls carry. ``retry``, ``poll``: the
    policies (None: Vertex AI's, or an emulator's). ``hooks``: what a followed job reports.
    """

    endpoint: str | None = None
    backend: JobBackend | None = None
    #: The emulator's token the calls carry (None: the one vxtrain.backends.tokens finds for
    #: ``endpoint``; a given ``backend`` carries its own).
    token: str | None = None
    retry: Backoff | None = None
    poll: Backoff | None = None
    hooks: Hooks = field(default_factory=Hooks)
    log: logging.Logger = LOGGER
    _stack: ExitStack = field(default_factory=ExitStack, repr=False, compare=False)
    _open: dict[str | None, JobBackend] = field(default_factory=dict, repr=False, compare=False)

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        """Close every backend this session opened (a given one stays open: its opener closes it)."""
        self._open.clear()
        self._stack.close()

    def with_hooks(self, hooks: Hooks) -> Session:
        """The same target and policies, reporting to ``hooks`` (backends of its own)."""
        return replace(self, hooks=hooks, _stack=ExitStack(), _open={})

    # --- the target -------------------------------------------------------------------

    @property
    def emulated(self) -> bool:
        """Whether the target is an emulator (its jobs are not on Vertex AI)."""
        return self.backend.emulated if self.backend is not None else self.endpoint is not None

    @property
    def in_process(self) -> bool:
        """Whether the target runs its jobs inside this process (they stop with it)."""
        return self.backend is not None and self.backend.in_process

    @property
    def retry_policy(self) -> Backoff:
        """How calls are retried: the given policy, else an emulator's or Vertex AI's."""
        return self.retry or (LOCAL_RETRY if self.emulated else VERTEX_RETRY)

    @property
    def poll_policy(self) -> Backoff:
        """How often a followed job is polled: the given policy, else an emulator's or Vertex AI's."""
        return self.poll or (LOCAL_POLL if self.emulated else VERTEX_POLL)

    def api(self, region: str | None) -> JobBackend:
        """The backend for ``region`` (one per region, opened on first use). An ``endpoint``
        with nothing listening is UnavailableError at once (see ``listening``)."""
        if self.backend is not None:
            return self.backend
        key = None if self.endpoint else region
        if key not in self._open:
            if self.endpoint is not None:
                listening(self.endpoint)
            self._open[key] = self._stack.enter_context(open_backend(region=region, endpoint=self.endpoint,
                                                                     token=self.token))
        return self._open[key]

    def call(self, fn: Callable[[], T], what: str) -> T:
        """``fn()`` retried on transient errors, each retry logged (vxtrain.submission.retry)."""
        return retrying(fn, self.retry_policy, what, self.log)

    # --- operations on one job ---------------------------------------------------------

    def fetch(self, name: str) -> JobDict:
        """The job ``name`` as the API gives it (REST JSON)."""
        api, kind = self.api(split_name(name)[1]), kind_of_name(name)
        return self.call(lambda: api.get(kind, name), f"get {name}")

    def view(self, job: JobDict, *, adopted: bool = False) -> JobView:
        """The view of a job this session's target gave."""
        return job_view(job, emulated=self.emulated, adopted=adopted)

    def get(self, name: str, *, priced: bool = False) -> JobView:
        """The view of the job ``name`` (a full resource name); ``priced``: with its ``cost``
        so far (vxtrain.submission.views.job_cost)."""
        job = self.fetch(name)
        view = self.view(job)
        return replace(view, cost=job_cost(job)) if priced else view

    def cancel_call(self, name: str) -> None:
        """One CancelJob call for ``name``, retried (FAILED_PRECONDITION, a job already ended or
        cancelled, is raised: InvalidArgumentError)."""
        api, kind = self.api(split_name(name)[1]), kind_of_name(name)
        self.call(lambda: api.cancel(kind, name), f"cancel {name}")

    def cancel(self, name: str) -> JobView:
        """Ask for the job to be cancelled; its view right after (often CANCELLING)."""
        api, kind = self.api(split_name(name)[1]), kind_of_name(name)
        calls: list[None] = []

        def cancel_once() -> None:
            calls.append(None)
            api.cancel(kind, name)

        try:
            self.call(cancel_once, f"cancel {name}")
        except errors.InvalidArgumentError:
            # A retried cancel whose first call went through (its answer lost) finds the job
            # already cancelled, and the server refuses (FAILED_PRECONDITION): that is the
            # outcome asked for, not an error.
            view = self.get(name)
            if len(calls) > 1 and view.state in (JobState.CANCELLING, JobState.CANCELLED):
                return view
            raise
        return self.get(name)

    def list_jobs(self, project: str, region: str, filter: str = "",  # noqa: A002 - the API's word
                  kind: JobKind = CUSTOM) -> list[JobDict]:
        """The jobs of ``kind`` under ``project``/``region`` matching ``filter`` (REST JSON)."""
        api = self.api(region)
        return self.call(lambda: api.list(kind, parent_of(project, region), filter), f"list {kind.collection}")

    def jobs(self, project: str, region: str, filter: str = "",  # noqa: A002 - the API's word
             tuning: bool = False) -> list[JobView]:
        """Views of the CustomJobs (or, with ``tuning``, HyperparameterTuningJobs) matching ``filter``."""
        return [self.view(j) for j in self.list_jobs(project, region, filter, TUNING if tuning else CUSTOM)]

    def logs(self, name: str, *, replica: str | None = None, since: str | None = None) -> list[Entry]:
        """The job's log lines (of ``replica``, from ``since``), oldest first: from Cloud
        Logging, or from the emulator at ``endpoint``."""
        project, _, _, job_id = split_name(name)
        token = self.backend.token if self.backend is not None else self.token
        with open_log_reader(self.endpoint, token=token) as reader:
            return self.call(lambda: read_entries(reader, project, job_id, replica=replica, since=since),
                             f"read the logs of {name}")

    def wait(self, name: str, *, timeout: float | None = None, until: Until | None = None,
             check: bool = True, priced: bool = False, replica: str | None = None,
             since: str | None = None) -> JobView:
        """Poll the job with backoff until it ends (or ``until(view, elapsed)`` holds); its view.

        The hooks get each poll's view (``progress``) and the job's new log lines (``logs``,
        of ``replica``, from ``since``). With ``check``, a job that ends FAILED, CANCELLED or
        EXPIRED raises JobFailedError; ``timeout``: give up (UnavailableError) after that many
        seconds; ``priced``: the view has the job's ``cost``.
        """
        with JobWatch(self, name, replica=replica, since=since) as watch:
            while True:
                view = watch.poll()
                if view.state.terminal or (until is not None and until(view, watch.elapsed)):
                    break
                if timeout is not None and watch.elapsed >= timeout:
                    raise errors.UnavailableError(f"{name} is still {view.state.value} after {timeout:.0f} s")
                watch.pause(None if timeout is None else max(timeout - watch.elapsed, 0.0))
        if priced:
            view = replace(view, cost=job_cost(watch.last))
        if check:
            raise_for_state(view)
        return view


class JobWatch:
    """Following one job: a poll (Get) at a time, the polls backing off (no jitter: polls
    are not retries), the job's log lines read between them (one TailLogEntries stream,
    polling as its fallback: vxtrain.joblogs), each poll's view to the progress hook.
    ``quiet``: neither (a job being cancelled is followed to its end in silence)."""

    def __init__(self, session: Session, name: str, *, quiet: bool = False, replica: str | None = None,
                 since: str | None = None) -> None:
        self.session, self.name, self.quiet = session, name, quiet
        self.replica, self.since = replica, since
        self.last: JobDict = {}
        self._start = time.monotonic()
        self._delays = _delays(session.poll_policy)
        self._logs: LogWatch | None = None
        self._stack = ExitStack()

    @property
    def elapsed(self) -> float:
        """Seconds since following began."""
        return time.monotonic() - self._start

    def __enter__(self) -> JobWatch:
        sink = self.session.hooks.logs
        if sink is not None and not self.quiet:
            self._logs = self._stack.enter_context(self._reading(sink))
        self._start = time.monotonic()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._stack.close()
        if kind is KeyboardInterrupt and not self.session.in_process:
            # Ctrl-C stops the following, not the job (unless this process runs it).
            self.session.log.warning("stopped following %s; the job keeps running: `vxtrain cancel %s` "
                                     "stops it", self.name, self.name)

    def poll(self) -> JobView:
        """Get the job once; its view (after the job's last lines when it has ended)."""
        self.last = self.session.fetch(self.name)
        view = self.session.view(self.last)
        if view.state.terminal and self._logs is not None:
            self._logs.finish()  # the job's last lines before the line that says it ended
        progress = self.session.hooks.progress
        if progress is not None and not self.quiet:
            progress(view, self.elapsed)
        return view

    def pause(self, at_most: float | None = None) -> None:
        """Wait the next poll interval (at most ``at_most`` seconds), showing log lines meanwhile."""
        delay = next(self._delays)
        delay = delay if at_most is None else min(delay, at_most)
        (self._logs.sleep if self._logs is not None else time.sleep)(delay)

    @contextmanager
    def _reading(self, sink: Callable[[list[Entry]], None]) -> Iterator[LogWatch]:
        """A LogWatch over the job's lines, from Cloud Logging or from the emulator."""
        project, _, _, job_id = split_name(self.name)
        session = self.session
        api = session.api(split_name(self.name)[1])
        with open_log_reader(api.endpoint if api.emulated else None, token=api.token) as reader:
            follower = Follower(reader, project, job_id, replica=self.replica, since=self.since,
                                cadence=LOCAL_LOGS if api.emulated else VERTEX_LOGS)
            watch = LogWatch(follower, sink, warn=lambda message: session.log.warning("warning: %s", message),
                             stream=True)
            try:
                yield watch
            finally:
                watch.close()  # the stream and its thread end with the following, however it ends


#: Hosts that are this machine (an emulator's usual home).
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def listening(endpoint: str, timeout: float = 2.0) -> None:
    """UnavailableError at once when a TCP connection to ``endpoint`` (HOST:PORT) is refused:
    no request can have reached anything, so nothing was created and retrying for a deadline
    would only hide the cause (an emulator not started, a wrong port). A host that does not
    resolve, or a connection that times out, is left to the call's own retries."""
    host, _, port = endpoint.rpartition(":")
    if not host or not port.isdecimal():
        return  # not HOST:PORT: the backend says what is wrong with it
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
            return
    except ConnectionRefusedError:
        hint = (f"start one with `vxtrain emulator --port {port}` (or give the port it printed)"
                if host in LOOPBACK else "check the host and port in --endpoint")
        raise errors.UnavailableError(f"nothing listens at {endpoint} (connection refused): no request was sent, "
                                      f"so nothing was created; {hint}") from None
    except OSError:
        return  # unresolved, unreachable, slow: the call's retries report it


def _delays(poll: Backoff) -> Iterator[float]:
    """Polling intervals: initial, doubling, capped."""
    delay = poll.initial
    while True:
        yield delay
        delay = min(delay * poll.multiplier, poll.maximum)
