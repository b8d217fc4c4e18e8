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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vxtrain import errors
from vxtrain.backends import open_backend, open_log_reader
from vxtrain.backends.base import JobBackend, JobDict, LocalRun
from vxtrain.packaging.upload import UploadProgress
from vxtrain.joblogs import LOCAL_LOGS, VERTEX_LOGS, Entry, Follower, LogSink, LogWatch, read_entries
from vxtrain.submission.create import Created, adopt, create_once, elect
from vxtrain.submission.events import log_say
from vxtrain.submission.names import bucket_name, label_value, parent_of, split_name
from vxtrain.submission.placement import check_placement
from vxtrain.submission.publish import Publication, images_json, publish
from vxtrain.submission.quota import Read, check_quota
from vxtrain.submission.retry import (
    LOCAL_POLL, LOCAL_RETRY, VERTEX_POLL, VERTEX_RETRY, Backoff, default_backoff, retrying,
)
from vxtrain.submission.views import job_cost, job_view, raise_for_state
from vxtrain.vocab.callbacks import ProgressFn, Say
from vxtrain.vocab.kinds import CUSTOM, TERMINAL_STATES, TUNING, kind_of_job, kind_of_name

if TYPE_CHECKING:
    from vxtrain.images.publish import Pushed


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
           publication: Publication | None = None, upload_progress: UploadProgress | None = None,
           quota_check: bool = True, labels: Mapping[str, str] | None = None, explicit: bool | None = None,
           quota_reads: dict[str, Read] | None = None, staging_bucket: str | None = None) -> dict[str, Any]:
    """Create the job (a CustomJob, or a HyperparameterTuningJob when it has a
    ``trialJobSpec``) exactly once and return its view; with ``wait``, follow it
    to the end (``check``: raise JobFailedError when it ends FAILED/CANCELLED/EXPIRED;
    ``logs``: where its log lines go as they arrive, see ``wait_job``; ``local``: how
    an emulator runs it on its host, see ``vxtrain.backends.base.LocalRun``; ``say``:
    where retries and notices are reported, see vxtrain.submission.events).

    ``idempotency_key``: a re-submit with the same key under the same project and
    region returns the job it labels and creates none; without one, each call
    creates a new job. ``explicit``: whether the key is the caller's own, so the job it
    already labels is adopted (default: whether a key was given; the fallback ladder
    passes a key of its own to every rung, and says whether the user chose it).
    ``labels``: more labels that, with the key, name the job (a fallback rung's number;
    see vxtrain.submission.create.create_once).

    Before a create, in this order (see ``prepare``): a job with ``persistentResourceId``
    is checked against that resource (SpecError, and no job, when it does not fit); with
    ``quota_check``, its needs are set against the project's quota limits (NoCapacity,
    exit 5, and no job, when one is above a limit; a refused read is said through ``say``
    and the submit goes on; ``quota_reads``: the reads already made, see
    vxtrain.submission.quota.preflight); then ``publication`` is published
    (vxtrain.submission.publish; ``upload_progress`` watches large uploads). With images
    to publish, the view has ``images``: what this submit pushed or found there.

    ``staging_bucket`` (``gs://BUCKET[/PREFIX]``): with a key the caller chose, the create
    is taken under a lease in BUCKET, so submits racing with one key create one job
    (vxtrain.submission.lease); the view's ``duplicates_cancelled`` names the jobs of the
    key this submit cancelled (vxtrain.submission.create.elect).
    """
    with using(backend, region, endpoint) as api:
        retry = default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        key = idempotency_key if idempotency_key is not None else uuid.uuid4().hex
        mine = idempotency_key is not None if explicit is None else explicit
        ready = prepare(api, custom_job, project=project, region=region, key=key, explicit=mine, backoff=retry,
                        say=say, labels=labels, quota_check=quota_check, quota_reads=quota_reads,
                        publication=publication, upload_progress=upload_progress)
        made = create_prepared(api, ready, custom_job, parent=parent_of(project, region), key=key,
                               backoff=retry, say=say, local=local, labels=labels,
                               lease_bucket=bucket_name(staging_bucket) if mine else None)
        adopted = made.adopted
        view = job_view(made.job, emulated=api.emulated, adopted=adopted)
        view["duplicates_cancelled"] = list(made.duplicates_cancelled)
        if publication is not None and publication.images:
            view["images"] = images_json(ready.pushed)
        if not wait:
            return view
        final = wait_job(view["name"], backend=api, backoff=retry, poll=poll, progress=progress,
                         check=False, logs=logs, say=say)
    final = {**final, "adopted": adopted, "duplicates_cancelled": view["duplicates_cancelled"]}  # also in the JobFailedError's job
    if check:
        raise_for_state(final)
    return final


@dataclass(frozen=True)
class Prepared:
    """Where a submit stands just before its create: the job its explicit key already names
    (adopted, so nothing is checked, published or created), else what was pushed for the
    job about to be created."""

    existing: JobDict | None = None
    pushed: tuple[Pushed, ...] = ()


def prepare(api: JobBackend, custom_job: JobDict, *, project: str, region: str, key: str, explicit: bool,
            backoff: Backoff, say: Say, labels: Mapping[str, str] | None = None, quota_check: bool = True,
            quota_reads: dict[str, Read] | None = None, publication: Publication | None = None,
            upload_progress: UploadProgress | None = None) -> Prepared:
    """Everything before a create, in order: adopt the job an explicit key names; else the
    placement check (a persistent resource the job must fit), the quota check, and the
    publication (images pushed, packages uploaded). What a check raises stops the submit
    with nothing created or pushed."""
    parent = parent_of(project, region)
    if explicit:
        existing = adopt(api, custom_job, parent=parent, key=key, backoff=backoff, say=say, labels=labels)
        if existing is not None:
            return Prepared(existing)
    check_placement(api, custom_job, project=project, region=region, backoff=backoff, say=say)
    if quota_check:
        check_quota(api, custom_job, project=project, region=region, say=say, reads=quota_reads)
    return Prepared(pushed=tuple(publish(publication, project, say, upload_progress)))


def create_prepared(api: JobBackend, ready: Prepared, custom_job: JobDict, *, parent: str, key: str,
                    backoff: Backoff, say: Say, local: LocalRun | None = None,
                    labels: Mapping[str, str] | None = None, lease_bucket: str | None = None) -> Created:
    """The prepared submit's job: the one adopted, else ``custom_job`` created exactly once
    (vxtrain.submission.create.create_once); with whether it was adopted and the duplicates
    of its key cancelled (an adopted job's key is listed once more, and any live job of the
    key but the oldest cancelled: vxtrain.submission.create.elect). ``lease_bucket``: the
    bucket whose lease makes the create one for the key however many submit it at once
    (vxtrain.submission.lease; given for a key the caller chose)."""
    if ready.existing is not None:
        return elect(api, kind_of_job(ready.existing), parent, label_value(key), ready.existing, adopted=True,
                     backoff=backoff, say=say, extra=labels)
    if lease_bucket is not None:
        # lazy: the lease brings google-cloud-storage and google.api_core (~300 ms, -X importtime),
        # for a submit with a key the caller chose and a bucket alone
        from vxtrain.submission.lease import create_leased

        return create_leased(api, custom_job, parent=parent, key=key, bucket=lease_bucket, backoff=backoff,
                             say=say, local=local, labels=labels)
    return create_once(api, custom_job, parent=parent, key=key, backoff=backoff, say=say, local=local,
                       labels=labels)


def get(name: str, *, backend: JobBackend | None = None, endpoint: str | None = None,
        backoff: Backoff | None = None, say: Say = log_say, priced: bool = False) -> dict[str, Any]:
    """The view of the job ``name`` (a full resource name); ``priced``: with its ``cost`` so far
    (vxtrain.submission.views.job_cost)."""
    with using(backend, split_name(name)[1], endpoint) as api:
        job = _get(api, name, default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY), say)
        return _priced(job, job_view(job, emulated=api.emulated), priced)


def _priced(job: JobDict, view: dict[str, Any], priced: bool) -> dict[str, Any]:
    """``view`` with the job's ``cost`` when ``priced``."""
    return {**view, "cost": job_cost(job)} if priced else view


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
             until: Callable[[dict[str, Any], float], bool] | None = None, priced: bool = False) -> dict[str, Any]:
    """Poll the job with backoff until it ends (or ``until(view, elapsed_seconds)`` is
    true: the fallback ladder stops at RUNNING, or at a pending too long); return its view.

    ``progress(view, elapsed_seconds)`` is called after every poll. With
    ``check``, a job that ends FAILED/CANCELLED/EXPIRED raises JobFailedError.
    ``logs(entries)`` gets the job's new log lines (of ``replica``, from ``since``)
    between polls, and its last ones after the end (vxtrain.joblogs.LogWatch). ``say``
    gets retries, the log reader's warnings, and what Ctrl-C leaves running. ``priced``: the
    view has the job's ``cost`` (vxtrain.submission.views.job_cost).
    """
    with using(backend, split_name(name)[1], endpoint) as api, \
            _watching(api, name, logs, replica=replica, since=since, say=say) as watch:
        pause = watch.sleep if watch is not None else time.sleep
        retry = default_backoff(api, backoff, LOCAL_RETRY, VERTEX_RETRY)
        delays = _delays(default_backoff(api, poll, LOCAL_POLL, VERTEX_POLL))
        start = time.monotonic()
        try:
            while True:
                job = _get(api, name, retry, say)
                view = job_view(job, emulated=api.emulated)
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
    view = _priced(job, view, priced)
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
    with open_log_reader(_log_endpoint(api), token=api.token) as reader:
        follower = Follower(reader, project, job_id, replica=replica, since=since,
                            cadence=LOCAL_LOGS if api.emulated else VERTEX_LOGS)
        # One TailLogEntries stream per job, polling only as its fall back (vxtrain.joblogs).
        watch = LogWatch(follower, sink, warn=lambda message: say(f"warning: {message}"), stream=True)
        try:
            yield watch
        finally:
            watch.close()  # the stream and its thread end with the following, however it ends


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
