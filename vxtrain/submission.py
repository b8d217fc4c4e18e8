"""Submitting and following jobs: the Python API behind ``vxtrain submit``,
``status``, ``wait``, ``cancel``, ``list`` and ``logs``.

Exactly-once (README, "Submitting exactly once"): CreateCustomJob has no
request id (https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/create),
so a blind retry can create two jobs. Every job is labelled
``vxtrain_idempotency_key=<key>``; before any retry of a create whose outcome is
unknown, jobs with that label are listed and the one that exists is adopted.
With an explicit key, an existing job with that label is returned (in any
state) and none is created.

Following a job can also follow its log lines (vxtrain.joblogs): state polls and
log reads interleave in one loop, each on its own backoff, and the lines go to a
sink (the reporter on stderr, or ``vxtrain logs --follow``'s stdout).

Calls go through a ``JobBackend`` (vxtrain.backends.base); retries through
``google.api_core.retry.Retry`` on transient errors only. Nothing here imports
google.cloud.aiplatform: the backend does, when it first talks to an API.
"""
from __future__ import annotations

import collections
import hashlib
import re
import shlex
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import IO, Any, TypeVar

from vxtrain import errors
from vxtrain.backends import open_backend, open_log_reader
from vxtrain.backends.base import JobBackend, JobDict, LocalRun
from vxtrain.backends.kinds import CUSTOM, FAILED_STATES, TERMINAL_STATES, TUNING, JobKind, kind_of_job, kind_of_name, other
from vxtrain.joblogs import LOCAL_LOGS, VERTEX_LOGS, Entry, Follower, LogSink, LogWatch, read_entries

T = TypeVar("T")

#: The label that makes a create idempotent (Vertex label keys: lowercase,
#: [a-z0-9_-], ≤ 63: https://cloud.google.com/vertex-ai/docs/general/resource-labels).
# An underscore, not a hyphen: the key appears bare in list filters
# (`labels.KEY="value"`), where a hyphen is not an identifier character (AIP-160).
LABEL_KEY = "vxtrain_idempotency_key"
CONSOLE_URL = ("https://console.cloud.google.com/vertex-ai/locations/{region}/training/{id}/cpu"
               "?project={project}")
LOCAL_PROJECT = "local-project"
LOCAL_REGION = "us-central1"

_LABEL_VALUE = re.compile(r"[a-z0-9_-]{1,63}")
_NAME = re.compile(r"^projects/([^/]+)/locations/([^/]+)/(customJobs|hyperparameterTuningJobs)/([^/]+)$")

ProgressFn = Callable[[JobDict, float], None]


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial`` seconds, times ``multiplier``, capped at ``maximum``;
    ``deadline`` bounds a whole retried call (None: no bound).

    ``unresolved``: how long a host name that does not resolve is retried (a
    mistyped region makes one: ``us-centrl1-aiplatform.googleapis.com``).
    ``commit_grace``: after a create ended in DEADLINE_EXCEEDED, how long to keep
    listing for its idempotency label before creating again (the create may
    still commit after its caller gave up on it).
    """

    initial: float
    maximum: float
    multiplier: float = 2.0
    deadline: float | None = None
    unresolved: float = 30.0
    commit_grace: float = 0.0


#: Retrying API calls on Vertex AI: gentle, and patient for five minutes. A create
#: that timed out (60 s, vxtrain.backends.vertex.DEFAULT_TIMEOUT) gets 30 s more to show up.
VERTEX_RETRY = Backoff(initial=1.0, maximum=30.0, deadline=300.0, unresolved=30.0, commit_grace=30.0)
#: Retrying API calls on an emulator on loopback: fast. Its slowest commit is the
#: ``create:deadline-commit-late`` fault's 2 s.
LOCAL_RETRY = Backoff(initial=0.05, maximum=1.0, deadline=20.0, unresolved=5.0, commit_grace=4.0)
#: Polling a job on Vertex AI (jobs take minutes to start).
VERTEX_POLL = Backoff(initial=1.0, maximum=30.0)
#: Polling a job on an emulator (jobs take seconds).
LOCAL_POLL = Backoff(initial=0.1, maximum=1.0)


# --- names, labels, views -------------------------------------------------------

def parent_of(project: str, region: str) -> str:
    """``projects/P/locations/R``: where jobs are created and listed."""
    return f"projects/{project}/locations/{region}"


def label_value(key: str) -> str:
    """``key`` as a Vertex label value: itself when label-safe, else a readable slug plus a hash."""
    if _LABEL_VALUE.fullmatch(key):
        return key
    slug = re.sub(r"[^a-z0-9_-]+", "-", key.lower()).strip("-")[:40]
    digest = hashlib.sha256(key.encode()).hexdigest()[:20]
    return f"{slug}-{digest}" if slug else digest


def resolve_name(name: str, *, project: str | None = None, region: str | None = None,
                 kind: JobKind = CUSTOM) -> str:
    """A full resource name from a full name or a bare id plus project and region."""
    if _NAME.match(name):
        return name
    if "/" in name:
        raise errors.UsageError(f"not a job name: {name!r}; expected "
                                f"projects/P/locations/R/customJobs/ID or a bare ID")
    if not project or not region:
        raise errors.UsageError(f"a bare job id ({name}) needs --project and --region "
                                f"(or GOOGLE_CLOUD_PROJECT and CLOUD_ML_REGION)")
    return f"{parent_of(project, region)}/{kind.collection}/{name}"


def split_name(name: str) -> tuple[str, str, str, str]:
    """(project, region, collection, id) of a full resource name."""
    found = _NAME.match(name)
    if not found:
        raise errors.UsageError(f"not a job resource name: {name!r}")
    project, region, collection, job_id = found.groups()
    return project, region, collection, job_id


def console_url(name: str) -> str:
    """The Cloud console page of a job (the SDK uses the "training" page for both kinds)."""
    project, region, _, job_id = split_name(name)
    return CONSOLE_URL.format(region=region, id=job_id, project=project)


def job_view(job: JobDict, *, emulated: bool = False, adopted: bool = False) -> dict[str, Any]:
    """What submit/status/wait print: name, state, console_url, display_name, create_time, …"""
    view: dict[str, Any] = {
        "name": job.get("name", ""),
        "state": job.get("state", "JOB_STATE_UNSPECIFIED"),
        "console_url": console_url(job["name"]) if job.get("name") else None,
        "display_name": job.get("displayName", ""),
        "create_time": job.get("createTime"),
        "adopted": adopted,
        "emulated": emulated,
    }
    for source, target in (("endTime", "end_time"), ("error", "error")):
        if job.get(source):
            view[target] = job[source]
    key = (job.get("labels") or {}).get(LABEL_KEY)
    if key:
        view["idempotency_key"] = key
    if "trialJobSpec" in job or "studySpec" in job:  # a HyperparameterTuningJob: its trials, the best one
        from vxtrain.runtime.study import study_fields  # lazy: only tuning jobs need it (~15 ms)

        view.update(study_fields(job))
    return view


# --- retries -------------------------------------------------------------------

def _is_transient(exc: Exception) -> bool:
    return isinstance(exc, errors.ApiError) and exc.transient


def say(line: str) -> None:
    """Report on stderr as it happens (the CLI's progress and log lines go there too)."""
    sys.stderr.write(f"vxtrain: {line}\n")
    sys.stderr.flush()


class _RetryReport:
    """Decides and reports each retry of one call: what failed, the attempt, the
    wait before the next, so a slow failure never looks like a hang."""

    def __init__(self, what: str, backoff: Backoff, say: Callable[[str], None]) -> None:
        self.what, self.backoff, self.say = what, backoff, say
        self.start = time.monotonic()
        self.attempt = 0
        self.last: Exception | None = None
        self.unresolved: str | None = None  # the host given up on

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def should_retry(self, exc: Exception) -> bool:
        """Transient errors only; a host that does not resolve for ``backoff.unresolved`` s."""
        if not _is_transient(exc):
            return False
        host = getattr(exc, "unresolved_host", None)
        if host and self.elapsed() >= self.backoff.unresolved:
            self.unresolved = host
            return False
        return True

    def failed(self, exc: Exception) -> None:
        """google.api_core.retry's ``on_error``: a retryable failure happened."""
        self.attempt += 1
        self.last = exc

    def delays(self) -> Iterator[float]:
        """The backoff's waits (with jitter), each reported as it is chosen; the wait
        before the retry that the deadline forbids is not (the call ends instead)."""
        from google.api_core.retry import exponential_sleep_generator

        b = self.backoff
        for delay in exponential_sleep_generator(b.initial, b.maximum, b.multiplier):
            if getattr(self.last, "unresolved_host", None):
                delay = max(0.0, min(delay, b.unresolved - self.elapsed()))
            if b.deadline is None or self.elapsed() + delay <= b.deadline:
                failure = str(self.last).removesuffix("; try again later")
                self.say(f"{self.what}: attempt {self.attempt} failed: {failure}; "
                         f"retrying in {delay:.1f} s")
            yield delay


def retrying(call: Callable[[], T], backoff: Backoff, what: str = "the call",
             say: Callable[[str], None] = say) -> T:
    """Run ``call`` under google.api_core.retry, retrying transient ApiErrors only and
    reporting every retry through ``say`` (stderr); ``what`` names the call in reports."""
    # Lazy: google.api_core costs start-up time, and only a call to an API retries.
    from google.api_core import exceptions as gexc
    from google.api_core.retry import retry_target

    report = _RetryReport(what, backoff, say)
    try:
        return retry_target(call, report.should_retry, report.delays(), timeout=backoff.deadline,
                            on_error=report.failed)
    except gexc.RetryError as exc:
        raise errors.UnavailableError(
            f"{exc.cause} (still failing after retrying for {backoff.deadline:.0f} s)") from exc
    except errors.ApiError as exc:
        if report.unresolved is None:
            raise
        raise errors.UnavailableError(
            f"cannot reach {report.unresolved}: the host name does not resolve (retried for "
            f"{report.elapsed():.0f} s); {_unresolved_hint(report.unresolved)}") from exc


def _unresolved_hint(host: str) -> str:
    """What to check when ``host`` does not resolve: the region it was built from, or --endpoint."""
    suffix = "-aiplatform.googleapis.com"
    if host.endswith(suffix):
        return (f"is the region {host[:-len(suffix)]!r} spelled right? (Vertex AI regions: "
                "https://cloud.google.com/vertex-ai/docs/general/locations)")
    return "check the host in --endpoint"


def _default_backoff(backend: JobBackend, backoff: Backoff | None, local: Backoff,
                     vertex: Backoff) -> Backoff:
    if backoff is not None:
        return backoff
    return local if backend.emulated else vertex


@contextmanager
def _using(backend: JobBackend | None, region: str | None, endpoint: str | None) -> Iterator[JobBackend]:
    """The given backend, or a new one for region/endpoint closed afterwards."""
    if backend is not None:
        yield backend
        return
    with open_backend(region=region, endpoint=endpoint) as own:
        yield own


# --- exactly-once create ----------------------------------------------------------

_TIMESTAMP = re.compile(r"^(?P<seconds>[^.Z]*)(?:\.(?P<fraction>\d+))?Z?$")


def _time_key(timestamp: str) -> tuple[str, str]:
    """An RFC 3339 timestamp as the API writes it (0, 3, 6 or 9 fractional digits,
    none when zero) in a form that sorts by time: "…:05Z" before "…:05.1Z"."""
    found = _TIMESTAMP.match(timestamp)
    if not found:
        return timestamp, ""
    return found.group("seconds"), (found.group("fraction") or "").ljust(9, "0")


def find_labelled(backend: JobBackend, kind: JobKind, parent: str, label: str) -> JobDict | None:
    """The (oldest) job under ``parent`` whose idempotency label is ``label``, or None."""
    # Filter syntax `labels.key=value`: ListCustomJobsRequest.filter,
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/list
    jobs = backend.list(kind, parent, f'labels.{LABEL_KEY}="{label}"')
    # Filter here too: the filter is a convenience of the server, the label the truth.
    mine = [j for j in jobs if (j.get("labels") or {}).get(LABEL_KEY) == label]
    return min(mine, key=lambda j: (_time_key(j.get("createTime", "")), j.get("name", ""))) if mine else None


def _find_any_kind(backend: JobBackend, kind: JobKind, parent: str, label: str) -> JobDict | None:
    """The job ``label`` marks, of ``kind`` first, else of the other kind: an explicit
    key names one job whatever it is (a spec that gained a ``study:`` makes none)."""
    for each in (kind, other(kind)):
        found = find_labelled(backend, each, parent, label)
        if found is not None:
            return found
    return None


class _CreateAttempt:
    """One create; on every attempt after the first (the previous outcome is
    unknown), adopt the job that carries the label instead of creating another.

    After a create that timed out (DEADLINE_EXCEEDED), the server may still
    commit it: one empty list proves nothing, so the label is listed again until
    ``backoff.commit_grace`` seconds have passed before creating again.
    """

    def __init__(self, backend: JobBackend, kind: JobKind, parent: str, job: JobDict, label: str,
                 backoff: Backoff, say: Callable[[str], None], local: LocalRun | None = None) -> None:
        self.backend, self.kind, self.parent, self.job, self.label = backend, kind, parent, job, label
        self.backoff, self.say, self.local = backoff, say, local
        self.attempts = 0
        #: True while a create whose outcome is unknown may have made the job.
        self.maybe_created = False
        #: Until when (time.monotonic()) a create that timed out may still commit.
        self.late_until = 0.0

    def __call__(self) -> tuple[JobDict, bool]:
        self.attempts += 1
        if self.attempts > 1:
            existing = self.find()
            if existing is not None:
                return existing, True
            self.maybe_created = False  # the earlier attempts made nothing
        try:
            created: JobDict = self.backend.create(self.kind, self.parent, self.job, local=self.local)
        except errors.ApiError as exc:
            self.maybe_created = exc.transient  # a transient error leaves the outcome unknown
            if exc.transient and exc.timed_out:
                self.late_until = time.monotonic() + self.backoff.commit_grace
            raise
        return created, False

    def find(self) -> JobDict | None:
        """The job the label marks; within the grace after a timed-out create, list again
        (every few tenths of a second on an emulator, seconds on Vertex) until it shows up."""
        interval = min(self.backoff.maximum, max(self.backoff.initial * 4, 0.2))
        said = False
        while True:
            existing = find_labelled(self.backend, self.kind, self.parent, self.label)
            remaining = self.late_until - time.monotonic()
            if existing is not None or remaining <= 0:
                return existing
            if not said:
                self.say(f"no job labelled {LABEL_KEY}={self.label} yet, but a create that timed out "
                         f"can still commit: listing again for {remaining:.1f} s before creating another")
                said = True
            time.sleep(min(interval, remaining))


def create_once(backend: JobBackend, job: JobDict, *, parent: str, key: str, explicit: bool,
                backoff: Backoff, say: Callable[[str], None] = say,
                local: LocalRun | None = None) -> tuple[JobDict, bool]:
    """Create ``job`` labelled with ``key`` at most once; return (job, adopted). ``local``:
    how an emulator runs it on its host (the spec's ``local:`` block and folder).

    When the calls end in an error while a create's outcome is unknown, a last
    list settles it (see ``_settle``). A job just created is checked against the
    others with its label (see ``_keep_oldest``).
    """
    kind = kind_of_job(job)
    label = label_value(key)
    if explicit:
        existing = retrying(lambda: _find_any_kind(backend, kind, parent, label), backoff,
                            f"list jobs labelled {LABEL_KEY}={label}", say)
        if existing is not None:
            return existing, True
    labelled = {**job, "labels": {**(job.get("labels") or {}), LABEL_KEY: label}}
    attempt = _CreateAttempt(backend, kind, parent, labelled, label, backoff, say, local)
    try:
        created, adopted = retrying(attempt, backoff, f"create {kind.noun}", say)
    except errors.ApiError as exc:
        if not attempt.maybe_created:
            raise
        return _settle(attempt, key, exc)
    if adopted:
        return created, True
    return _keep_oldest(backend, kind, parent, label, created, backoff, say)


def _keep_oldest(backend: JobBackend, kind: JobKind, parent: str, label: str, created: JobDict,
                 backoff: Backoff, say: Callable[[str], None]) -> tuple[JobDict, bool]:
    """Two submits with one key at the same moment both list nothing and both create.
    So, once created, list the label: when an older job carries it, cancel the one
    just made and adopt the older (each racer keeps the same one: the oldest). When
    this list fails, the job just created stands (the check is a safeguard, not a step).
    """
    try:
        oldest = find_labelled(backend, kind, parent, label)
    except errors.ApiError:
        return created, False
    if oldest is None or _order(oldest) >= _order(created):
        return created, False
    say(f"{oldest.get('name')} already carries {LABEL_KEY}={label} (a submit with the same key "
        f"at the same moment): cancelling {created.get('name')}, just created, and adopting the older job")
    try:
        name = str(created.get("name"))
        retrying(lambda: backend.cancel(kind, name), backoff, f"cancel {name}", say)
    except errors.ApiError as exc:
        say(f"could not cancel {created.get('name')}: {exc}; cancel it yourself")
    return oldest, True


def _order(job: JobDict) -> tuple[tuple[str, str], str]:
    """Jobs in creation order: create time, then name (as find_labelled picks the oldest)."""
    return _time_key(job.get("createTime", "")), job.get("name", "")


def _settle(attempt: _CreateAttempt, key: str, exc: errors.ApiError) -> tuple[JobDict, bool]:
    """The calls ended in ``exc`` while a create's outcome was unknown: a last list
    (within the grace of a timed-out create, as long as it lasts) adopts the job if it
    was made, re-raises ``exc`` if it was not, and when even that list fails, raises
    ``exc`` saying the job may exist and which key adopts it."""
    try:
        existing = attempt.find()
    except errors.ApiError:
        raise type(exc)(
            f"{exc}; the job may have been created all the same (labelled {LABEL_KEY}={attempt.label}): "
            f"submit again with --idempotency-key {shlex.quote(key)} to adopt it rather than "
            f"create another") from exc
    if existing is None:
        raise exc
    return existing, True


# --- the Python API ---------------------------------------------------------------

def submit(custom_job: JobDict, *, project: str, region: str, backend: JobBackend | None = None,
           endpoint: str | None = None, idempotency_key: str | None = None, wait: bool = False,
           backoff: Backoff | None = None, poll: Backoff | None = None,
           progress: ProgressFn | None = None, check: bool = True,
           logs: LogSink | None = None, local: LocalRun | None = None) -> dict[str, Any]:
    """Create the job (a CustomJob, or a HyperparameterTuningJob when it has a
    ``trialJobSpec``) exactly once and return its view; with ``wait``, follow it
    to the end (``check``: raise JobFailedError when it ends FAILED/CANCELLED/EXPIRED;
    ``logs``: where its log lines go as they arrive, see ``wait_job``; ``local``: how
    an emulator runs it on its host, see ``vxtrain.backends.base.LocalRun``).

    ``idempotency_key``: a re-submit with the same key under the same project and
    region returns the job it labels and creates none; without one, each call
    creates a new job.
    """
    with _using(backend, region, endpoint) as api:
        retry = _default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        key = idempotency_key if idempotency_key is not None else uuid.uuid4().hex
        job, adopted = create_once(api, custom_job, parent=parent_of(project, region), key=key,
                                   explicit=idempotency_key is not None, backoff=retry, local=local)
        view = job_view(job, emulated=api.emulated, adopted=adopted)
        if not wait:
            return view
        final = wait_job(view["name"], backend=api, backoff=retry, poll=poll, progress=progress,
                         check=False, logs=logs)
    final = {**final, "adopted": adopted}  # also in the JobFailedError's job
    if check:
        raise_for_state(final)
    return final


def get(name: str, *, backend: JobBackend | None = None, endpoint: str | None = None,
        backoff: Backoff | None = None) -> dict[str, Any]:
    """The view of the job ``name`` (a full resource name)."""
    with _using(backend, split_name(name)[1], endpoint) as api:
        job = _get(api, name, _default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY))
        return job_view(job, emulated=api.emulated)


def _get(api: JobBackend, name: str, backoff: Backoff) -> JobDict:
    kind = kind_of_name(name)
    return retrying(lambda: api.get(kind, name), backoff, f"get {name}")


def _delays(poll: Backoff) -> Iterator[float]:
    """Polling intervals: initial, doubling, capped (no jitter: polls are not retries)."""
    delay = poll.initial
    while True:
        yield delay
        delay = min(delay * poll.multiplier, poll.maximum)


def wait_job(name: str, *, backend: JobBackend | None = None, endpoint: str | None = None,
             backoff: Backoff | None = None, poll: Backoff | None = None,
             progress: ProgressFn | None = None, timeout: float | None = None,
             check: bool = True, logs: LogSink | None = None, replica: str | None = None,
             since: str | None = None) -> dict[str, Any]:
    """Poll the job with backoff until it ends; return its view.

    ``progress(view, elapsed_seconds)`` is called after every poll. With
    ``check``, a job that ends FAILED/CANCELLED/EXPIRED raises JobFailedError.
    ``logs(entries)`` gets the job's new log lines (of ``replica``, from ``since``)
    between polls, and its last ones after the end (vxtrain.joblogs.LogWatch).
    """
    with _using(backend, split_name(name)[1], endpoint) as api, \
            _watching(api, name, logs, replica=replica, since=since) as watch:
        pause = watch.sleep if watch is not None else time.sleep
        retry = _default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        delays = _delays(_default_backoff(api, poll, LOCAL_POLL, VERTEX_POLL))
        start = time.monotonic()
        try:
            while True:
                view = job_view(_get(api, name, retry), emulated=api.emulated)
                elapsed = time.monotonic() - start
                ended = view["state"] in TERMINAL_STATES
                if ended and watch is not None:
                    watch.finish()  # the job's last lines before the line that says it ended
                if progress is not None:
                    progress(view, elapsed)
                if ended:
                    break
                if timeout is not None and elapsed >= timeout:
                    raise errors.UnavailableError(f"{name} is still {view['state']} after {timeout:.0f} s")
                delay = next(delays)
                # The last poll comes at the timeout, not up to a whole backoff step past it.
                pause(delay if timeout is None else min(delay, max(timeout - elapsed, 0.0)))
        except KeyboardInterrupt:
            # Ctrl-C stops the following, not the job (unless this process runs it).
            if not api.in_process:
                say(f"stopped following {name}; the job keeps running: `vxtrain cancel {name}` stops it")
            raise
    if check:
        raise_for_state(view)
    return view


@contextmanager
def _watching(api: JobBackend, name: str, sink: LogSink | None, *, replica: str | None,
              since: str | None) -> Iterator[LogWatch | None]:
    """A LogWatch over the job's lines, from Cloud Logging or from the emulator ``api`` talks to."""
    if sink is None:
        yield None
        return
    project, _, _, job_id = split_name(name)
    with open_log_reader(_log_endpoint(api)) as reader:
        follower = Follower(reader, project, job_id, replica=replica, since=since,
                            cadence=LOCAL_LOGS if api.emulated else VERTEX_LOGS)
        yield LogWatch(follower, sink, warn=_warn)


def _log_endpoint(api: JobBackend) -> str | None:
    """An emulator serves the Logging API on its JobService port; Vertex AI's jobs log to Cloud Logging."""
    return api.endpoint if api.emulated else None


def _warn(message: str) -> None:
    sys.stderr.write(f"vxtrain: warning: {message}\n")
    sys.stderr.flush()


def read_logs(name: str, *, endpoint: str | None = None, replica: str | None = None,
              since: str | None = None, backoff: Backoff | None = None) -> list[Entry]:
    """The job's log lines (of ``replica``, from ``since``), oldest first: from Cloud
    Logging, or from the emulator at ``endpoint``."""
    project, _, _, job_id = split_name(name)
    retry = backoff or (LOCAL_RETRY if endpoint else VERTEX_RETRY)
    with open_log_reader(endpoint) as reader:
        return retrying(lambda: read_entries(reader, project, job_id, replica=replica, since=since), retry,
                        f"read the logs of {name}")


def raise_for_state(view: Mapping[str, Any]) -> None:
    """Raise JobFailedError when the job ended FAILED, CANCELLED or EXPIRED."""
    if view.get("state") in FAILED_STATES:
        reason = (view.get("error") or {}).get("message") or "no error message"
        raise errors.JobFailedError(f"{view['name']} ended {view['state']}: {reason}", job=dict(view))


def cancel(name: str, *, backend: JobBackend | None = None, endpoint: str | None = None,
           backoff: Backoff | None = None) -> dict[str, Any]:
    """Ask for the job to be cancelled; return its view right after (often CANCELLING)."""
    with _using(backend, split_name(name)[1], endpoint) as api:
        retry = _default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        kind = kind_of_name(name)
        calls: list[None] = []

        def cancel_once() -> None:
            calls.append(None)
            api.cancel(kind, name)

        try:
            retrying(cancel_once, retry, f"cancel {name}")
        except errors.InvalidArgumentError:
            # A retried cancel whose first call went through (its answer lost) finds
            # the job already cancelled, and the server refuses (FAILED_PRECONDITION):
            # that is the outcome asked for, not an error.
            view = job_view(_get(api, name, retry), emulated=api.emulated)
            if len(calls) > 1 and view["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"):
                return view
            raise
        return job_view(_get(api, name, retry), emulated=api.emulated)


def build_filter(filter_: str | None = None, labels: Mapping[str, str] | None = None,
                 state: str | None = None) -> str:
    """One list filter: the raw one AND each ``labels.k="v"`` AND ``state=...``."""
    parts = [f"({filter_})"] if filter_ else []
    parts += [f'labels.{k}="{_quoted(v)}"' for k, v in (labels or {}).items()]
    if state:
        parts.append(f'state="{normalize_state(state)}"')
    return " AND ".join(parts)


def _quoted(value: str) -> str:
    """``value`` escaped for a double-quoted AIP-160 string."""
    return value.replace("\\", "\\\\").replace('"', '\\"')


def normalize_state(state: str) -> str:
    """``running`` / ``RUNNING`` / ``JOB_STATE_RUNNING`` → ``JOB_STATE_RUNNING``."""
    upper = state.strip().upper()
    return upper if upper.startswith("JOB_STATE_") else f"JOB_STATE_{upper}"


def list_jobs(*, project: str, region: str, backend: JobBackend | None = None,
              endpoint: str | None = None, filter: str = "",  # noqa: A002 - the API's word
              tuning: bool = False, backoff: Backoff | None = None) -> list[dict[str, Any]]:
    """Views of the CustomJobs (or, with ``tuning``, HyperparameterTuningJobs) matching ``filter``."""
    kind = TUNING if tuning else CUSTOM
    with _using(backend, region, endpoint) as api:
        retry = _default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        jobs: list[JobDict] = retrying(lambda: api.list(kind, parent_of(project, region), filter), retry,
                                       f"list {kind.collection}")
        return [job_view(j, emulated=api.emulated) for j in jobs]


# --- progress on stderr -------------------------------------------------------------

#: Lines of each replica kept for the tail shown when a job fails.
TAIL_LINES = 10
_REPLICA_IN_ERROR = re.compile(r"workerpool\d+-\d+")


class _Tails:
    """The last lines of each replica, for the tail of the one that failed."""

    def __init__(self) -> None:
        self.tails: dict[str, collections.deque[str]] = {}

    def keep(self, entries: list[Entry]) -> None:
        for entry in entries:
            self.tails.setdefault(entry.replica, collections.deque(maxlen=TAIL_LINES)).append(entry.text)

    def failure_tail(self, view: Mapping[str, Any]) -> tuple[str, list[str]] | None:
        """(replica, its last lines) for a failed job whose error names a replica
        ("The replica workerpool0-0 exited with a non-zero status of 1."), else None."""
        message = (view.get("error") or {}).get("message") or ""
        found = _REPLICA_IN_ERROR.search(message)
        if view.get("state") not in FAILED_STATES or not found or not self.tails.get(found.group(0)):
            return None
        return found.group(0), list(self.tails[found.group(0)])


class PlainProgress(_Tails):
    """One line per state change, and the job's log lines, on a stream that is not a terminal."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        super().__init__()
        self.stream = stream or sys.stderr
        self.state: str | None = None

    def __call__(self, view: JobDict, elapsed: float) -> None:
        if view["state"] != self.state:
            self.state = view["state"]
            self.stream.write(f"vxtrain: {view['name']}: {self.state} after {elapsed:.1f} s\n")
            self.stream.flush()

    def log(self, entries: list[Entry]) -> None:
        """``[workerpoolK-I] text`` lines (a LogSink)."""
        self.keep(entries)
        self.stream.write("".join(entry.line() + "\n" for entry in entries))
        self.stream.flush()

    def say(self, text: str) -> None:
        """One line of vxtrain's own."""
        self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        """Nothing to release."""


#: Replica prefixes on a terminal: one colour per replica, in the order they first speak.
_COLOURS = ("cyan", "magenta", "green", "yellow", "blue", "bright_red", "bright_cyan", "bright_magenta")


class RichProgress(_Tails):
    """A live status line (spinner, state, elapsed time) on a terminal; state changes
    and the job's log lines (a colour per replica) as lines above it."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        super().__init__()
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                                 TimeElapsedColumn(), console=Console(stderr=True), transient=True)
        self.task = self.progress.add_task("submitting", total=None)
        self.state: str | None = None
        self.colours: dict[str, str] = {}
        self.progress.start()

    def __call__(self, view: JobDict, elapsed: float) -> None:
        short = view["name"].rsplit("/", 1)[-1]
        self.progress.update(self.task, description=f"{short}: {view['state']}")
        if view["state"] != self.state:
            self.state = view["state"]
            self.progress.console.print(f"{view['name']}: {self.state} after {elapsed:.1f} s",
                                        highlight=False)

    def log(self, entries: list[Entry]) -> None:
        """``[workerpoolK-I] text`` lines, the prefix in the replica's colour (a LogSink)."""
        from rich.text import Text

        self.keep(entries)
        for entry in entries:
            colour = self.colours.setdefault(entry.replica, _COLOURS[len(self.colours) % len(_COLOURS)])
            self.progress.console.print(Text.assemble((f"[{entry.replica}]", colour), " ", entry.text),
                                        highlight=False, soft_wrap=True)

    def say(self, text: str) -> None:
        """One line of vxtrain's own."""
        from rich.text import Text

        self.progress.console.print(Text(text), highlight=False, soft_wrap=True)

    def close(self) -> None:
        """Stop the live display."""
        self.progress.stop()


#: What ``stderr_progress`` gives: a ProgressFn with ``log`` (a LogSink), ``say`` and ``failure_tail``.
Reporter = PlainProgress | RichProgress


@contextmanager
def stderr_progress() -> Iterator[Reporter]:
    """A progress callback for ``wait_job``: rich on a terminal, plain lines otherwise."""
    reporter: Reporter = RichProgress() if sys.stderr.isatty() else PlainProgress()
    try:
        yield reporter
    finally:
        reporter.close()


#: ``vxtrain.submission.wait(name)`` reads like the CLI; ``submit(wait=True)`` needs the other name.
wait = wait_job

__all__ = sorted([
    "Backoff", "FAILED_STATES", "LABEL_KEY", "LOCAL_POLL", "LOCAL_RETRY", "TERMINAL_STATES",
    "VERTEX_POLL", "VERTEX_RETRY", "build_filter", "cancel", "console_url", "create_once",
    "find_labelled", "get", "job_view", "label_value", "list_jobs", "parent_of",
    "raise_for_state", "read_logs", "resolve_name", "retrying", "split_name", "stderr_progress", "submit",
    "wait", "wait_job",
])
