"""Operations on jobs: submit (create exactly once, then maybe follow), get, wait,
cancel, list, and read or follow a job's log lines.

Following a job can also follow its log lines (vxtrain.joblogs): state polls and
log reads interleave in one loop, each on its own backoff, and the lines go to a
sink (the command line's reporter on stderr, or ``vxtrain logs --follow``'s stdout).
Every call reports its retries through ``say`` (vxtrain.submission.events).
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from vxtrain import errors
from vxtrain.backends import open_backend, open_log_reader
from vxtrain.backends.base import JobBackend, JobDict, LocalRun
from vxtrain.backends.kinds import CUSTOM, TERMINAL_STATES, TUNING, kind_of_name
from vxtrain.joblogs import LOCAL_LOGS, VERTEX_LOGS, Entry, Follower, LogSink, LogWatch, read_entries
from vxtrain.submission.create import create_once
from vxtrain.submission.events import ProgressFn, Say, log_say
from vxtrain.submission.names import parent_of, split_name
from vxtrain.submission.placement import check_placement
from vxtrain.submission.quota import Read, check_quota
from vxtrain.submission.retry import (
    LOCAL_POLL, LOCAL_RETRY, VERTEX_POLL, VERTEX_RETRY, Backoff, default_backoff, retrying,
)
from vxtrain.submission.views import job_view, raise_for_state


@contextmanager
def using(backend: JobBackend | None, region: str | None, endpoint: str | None) -> Iterator[JobBackend]:
    """The given backend, or a new one for region/endpoint closed afterwards."""
    if backend is not None:
        yield backend
        return
    with open_backend(region=region, endpoint=endpoint) as own:
        yield own


def submit(custom_job: JobDict, *, project: str, region: str, backend: JobBackend | None = None,
           endpoint: str | None = None, idempotency_key: str | None = None, wait: bool = False,
           backoff: Backoff | None = None, poll: Backoff | None = None,
           progress: ProgressFn | None = None, check: bool = True,
           logs: LogSink | None = None, local: LocalRun | None = None, say: Say = log_say,
           before_create: Callable[[], object] | None = None, quota_check: bool = True,
           labels: Mapping[str, str] | None = None, explicit: bool | None = None,
           quota_reads: dict[str, Read] | None = None) -> dict[str, Any]:
    """Create the job (a CustomJob, or a HyperparameterTuningJob when it has a
    ``trialJobSpec``) exactly once and return its view; with ``wait``, follow it
    to the end (``check``: raise JobFailedError when it ends FAILED/CANCELLED/EXPIRED;
    ``logs``: where its log lines go as they arrive, see ``wait_job``; ``local``: how
    an emulator runs it on its host, see ``vxtrain.backends.base.LocalRun``; ``say``:
    where retries and notices are reported, see vxtrain.submission.events).

    ``idempotency_key``: a re-submit with the same key under the same project and
    region returns the job it labels and creates none; without one, each call
    creates a new job.

    A job with ``persistentResourceId`` is checked against that resource first
    (vxtrain.submission.placement): SpecError, and no job, when it does not fit.
    With ``quota_check``, the job's needs are set against the project's quota limits
    (vxtrain.submission.quota): NoCapacity (exit 5), and no job, when one is above a
    limit; a refused read is said through ``say`` and the submit goes on. ``quota_reads``:
    the reads of the limits already made (see vxtrain.submission.quota.preflight); the
    fallback ladder passes one for all its rungs.
    ``before_create`` runs after those checks, once a job is to be created (the API
    uploads the job's packages there). ``labels``: more labels that, with the key, name
    the job (a fallback rung's number; see vxtrain.submission.create.create_once).
    ``explicit``: whether the key is the caller's own, so the job it already labels is
    adopted (default: whether a key was given; the fallback ladder passes a key of its
    own to every rung, and says whether the user chose it).
    """
    with using(backend, region, endpoint) as api:
        retry = default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        key = idempotency_key if idempotency_key is not None else uuid.uuid4().hex
        # A job on a persistent resource must fit it: checked before anything is created
        # (a re-submit that adopts the job its key labels creates nothing, and is not checked).
        def fits() -> None:
            check_placement(api, custom_job, project=project, region=region, backoff=retry, say=say)
            if quota_check:
                check_quota(api, custom_job, project=project, region=region, say=say, reads=quota_reads)
            if before_create is not None:
                before_create()

        mine = idempotency_key is not None if explicit is None else explicit
        job, adopted = create_once(api, custom_job, parent=parent_of(project, region), key=key, explicit=mine,
                                   backoff=retry, say=say, local=local, before_create=fits, labels=labels)
        view = job_view(job, emulated=api.emulated, adopted=adopted)
        if not wait:
            return view
        final = wait_job(view["name"], backend=api, backoff=retry, poll=poll, progress=progress,
                         check=False, logs=logs, say=say)
    final = {**final, "adopted": adopted}  # also in the JobFailedError's job
    if check:
        raise_for_state(final)
    return final


def get(name: str, *, backend: JobBackend | None = None, endpoint: str | None = None,
        backoff: Backoff | None = None, say: Say = log_say) -> dict[str, Any]:
    """The view of the job ``name`` (a full resource name)."""
    with using(backend, split_name(name)[1], endpoint) as api:
        job = _get(api, name, default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY), say)
        return job_view(job, emulated=api.emulated)


def _get(api: JobBackend, name: str, backoff: Backoff, say: Say) -> JobDict:
    kind = kind_of_name(name)
    return retrying(lambda: api.get(kind, name), backoff, f"get {name}", say)


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
             since: str | None = None, say: Say = log_say,
             until: Callable[[dict[str, Any], float], bool] | None = None) -> dict[str, Any]:
    """Poll the job with backoff until it ends (or ``until(view, elapsed_seconds)`` is
    true: the fallback ladder stops at RUNNING, or at a pending too long); return its view.

    ``progress(view, elapsed_seconds)`` is called after every poll. With
    ``check``, a job that ends FAILED/CANCELLED/EXPIRED raises JobFailedError.
    ``logs(entries)`` gets the job's new log lines (of ``replica``, from ``since``)
    between polls, and its last ones after the end (vxtrain.joblogs.LogWatch). ``say``
    gets retries, the log reader's warnings, and what Ctrl-C leaves running.
    """
    with using(backend, split_name(name)[1], endpoint) as api, \
            _watching(api, name, logs, replica=replica, since=since, say=say) as watch:
        pause = watch.sleep if watch is not None else time.sleep
        retry = default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        delays = _delays(default_backoff(api, poll, LOCAL_POLL, VERTEX_POLL))
        start = time.monotonic()
        try:
            while True:
                view = job_view(_get(api, name, retry, say), emulated=api.emulated)
                elapsed = time.monotonic() - start
                ended = view["state"] in TERMINAL_STATES
                if ended and watch is not None:
                    watch.finish()  # the job's last lines before the line that says it ended
                if progress is not None:
                    progress(view, elapsed)
                if ended or (until is not None and until(view, elapsed)):
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
              since: str | None, say: Say) -> Iterator[LogWatch | None]:
    """A LogWatch over the job's lines, from Cloud Logging or from the emulator ``api`` talks to."""
    if sink is None:
        yield None
        return
    project, _, _, job_id = split_name(name)
    with open_log_reader(_log_endpoint(api)) as reader:
        follower = Follower(reader, project, job_id, replica=replica, since=since,
                            cadence=LOCAL_LOGS if api.emulated else VERTEX_LOGS)
        yield LogWatch(follower, sink, warn=lambda message: say(f"warning: {message}"))


def _log_endpoint(api: JobBackend) -> str | None:
    """An emulator serves the Logging API on its JobService port; Vertex AI's jobs log to Cloud Logging."""
    return api.endpoint if api.emulated else None


def read_logs(name: str, *, endpoint: str | None = None, replica: str | None = None,
              since: str | None = None, backoff: Backoff | None = None, say: Say = log_say) -> list[Entry]:
    """The job's log lines (of ``replica``, from ``since``), oldest first: from Cloud
    Logging, or from the emulator at ``endpoint``."""
    project, _, _, job_id = split_name(name)
    retry = backoff or (LOCAL_RETRY if endpoint else VERTEX_RETRY)
    with open_log_reader(endpoint) as reader:
        return retrying(lambda: read_entries(reader, project, job_id, replica=replica, since=since), retry,
                        f"read the logs of {name}", say)


def cancel(name: str, *, backend: JobBackend | None = None, endpoint: str | None = None,
           backoff: Backoff | None = None, say: Say = log_say) -> dict[str, Any]:
    """Ask for the job to be cancelled; return its view right after (often CANCELLING)."""
    with using(backend, split_name(name)[1], endpoint) as api:
        retry = default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        kind = kind_of_name(name)
        calls: list[None] = []

        def cancel_once() -> None:
            calls.append(None)
            api.cancel(kind, name)

        try:
            retrying(cancel_once, retry, f"cancel {name}", say)
        except errors.InvalidArgumentError:
            # A retried cancel whose first call went through (its answer lost) finds
            # the job already cancelled, and the server refuses (FAILED_PRECONDITION):
            # that is the outcome asked for, not an error.
            view = job_view(_get(api, name, retry, say), emulated=api.emulated)
            if len(calls) > 1 and view["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED"):
                return view
            raise
        return job_view(_get(api, name, retry, say), emulated=api.emulated)


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
              tuning: bool = False, backoff: Backoff | None = None, say: Say = log_say) -> list[dict[str, Any]]:
    """Views of the CustomJobs (or, with ``tuning``, HyperparameterTuningJobs) matching ``filter``."""
    kind = TUNING if tuning else CUSTOM
    with using(backend, region, endpoint) as api:
        retry = default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        jobs: list[JobDict] = retrying(lambda: api.list(kind, parent_of(project, region), filter), retry,
                                       f"list {kind.collection}", say)
        return [job_view(j, emulated=api.emulated) for j in jobs]
