"""Creating a job exactly once (docs/submitting.md, "Submitting exactly once").

CreateCustomJob has no request id
(https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/create),
so a blind retry can create two jobs. Every job is labelled
``vxtrain_idempotency_key=<key>``; before any retry of a create whose outcome is
unknown, jobs with that label are listed and the one that exists is adopted.
With an explicit key, an existing job with that label is returned (in any
state) and none is created.
"""
from __future__ import annotations

import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass

from vxtrain import errors
from vxtrain.backends.base import JobBackend, JobDict, LocalRun
from vxtrain.submission.events import log_say
from vxtrain.submission.names import LABEL_KEY, label_value
from vxtrain.submission.retry import Backoff, retrying
from vxtrain.vocab.callbacks import Say
from vxtrain.vocab.kinds import TERMINAL_STATES, JobKind, kind_of_job, other
from vxtrain.vocab.timestamps import time_key

def find_labelled(backend: JobBackend, kind: JobKind, parent: str, label: str,
                  extra: Mapping[str, str] | None = None) -> JobDict | None:
    """The (oldest) job under ``parent`` whose idempotency label is ``label`` (and that
    carries every label of ``extra``: a fallback rung's number), or None."""
    wanted = {LABEL_KEY: label, **(extra or {})}
    # Filter syntax `labels.key=value`: ListCustomJobsRequest.filter,
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/list
    jobs = backend.list(kind, parent, " AND ".join(f'labels.{k}="{v}"' for k, v in wanted.items()))
    # Filter here too: the filter is a convenience of the server, the labels the truth.
    mine = [j for j in jobs if all((j.get("labels") or {}).get(k) == v for k, v in wanted.items())]
    return min(mine, key=lambda j: (time_key(j.get("createTime", "")), j.get("name", ""))) if mine else None


def find_any_kind(backend: JobBackend, kind: JobKind, parent: str, label: str,
                  extra: Mapping[str, str] | None = None) -> JobDict | None:
    """The job ``label`` marks, of ``kind`` first, else of the other kind: an explicit
    key names one job whatever it is (a spec that gained a ``study:`` makes none)."""
    for each in (kind, other(kind)):
        found = find_labelled(backend, each, parent, label, extra)
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
                 backoff: Backoff, say: Say, local: LocalRun | None = None,
                 extra: Mapping[str, str] | None = None) -> None:
        self.backend, self.kind, self.parent, self.job, self.label = backend, kind, parent, job, label
        self.extra = extra
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
            existing = find_labelled(self.backend, self.kind, self.parent, self.label, self.extra)
            remaining = self.late_until - time.monotonic()
            if existing is not None or remaining <= 0:
                return existing
            if not said:
                self.say(f"no job labelled {LABEL_KEY}={self.label} yet, but a create that timed out "
                         f"can still commit: listing again for {remaining:.1f} s before creating another")
                said = True
            time.sleep(min(interval, remaining))


def adopt(backend: JobBackend, job: JobDict, *, parent: str, key: str, backoff: Backoff,
          say: Say = log_say, labels: Mapping[str, str] | None = None) -> JobDict | None:
    """The job an explicit ``key`` (and ``labels``) already names under ``parent``, of
    ``job``'s kind or the other, in whatever state; None when there is none."""
    kind, label = kind_of_job(job), label_value(key)
    return retrying(lambda: find_any_kind(backend, kind, parent, label, labels), backoff,
                    f"list jobs labelled {LABEL_KEY}={label}", say)


@dataclass(frozen=True)
class Created:
    """What ``create_once`` ends with: the key's job (the elected one: the oldest), whether
    it was adopted rather than created by this call, and the names of the other jobs of the
    key this call cancelled (duplicates made by racing submits or late-committing creates)."""

    job: JobDict
    adopted: bool
    duplicates_cancelled: tuple[str, ...] = ()


def create_once(backend: JobBackend, job: JobDict, *, parent: str, key: str,
                backoff: Backoff, say: Say = log_say,
                local: LocalRun | None = None,
                labels: Mapping[str, str] | None = None) -> Created:
    """Create ``job`` labelled with ``key`` at most once per call and leave the key one live
    job. ``local``: how an emulator runs it on its host (the spec's ``local:`` block and
    folder). ``labels``: more labels that, with the key, name the job (a fallback rung's
    number): put on the job, and required of a job to adopt. (A job an explicit key already
    names is found before, by ``adopt``: this is the create.)

    When the calls end in an error while a create's outcome is unknown, a last list
    settles it (see ``_settle``). Then the key's jobs are listed until the late-commit
    grace of this call's timed-out creates has passed (once at least): the oldest is the
    key's job, every other one still alive is cancelled (see ``elect``).
    """
    kind = kind_of_job(job)
    label = label_value(key)
    labelled = {**job, "labels": {**(job.get("labels") or {}), **(labels or {}), LABEL_KEY: label}}
    attempt = _CreateAttempt(backend, kind, parent, labelled, label, backoff, say, local, labels)
    try:
        created, adopted = retrying(attempt, backoff, f"create {kind.noun}", say)
    except errors.ApiError as exc:
        if not attempt.maybe_created:
            raise
        created, adopted = _settle(attempt, key, exc)
    return elect(backend, kind, parent, label, created, adopted=adopted, backoff=backoff, say=say,
                 extra=labels, until=attempt.late_until)


def elect(backend: JobBackend, kind: JobKind, parent: str, label: str, found: JobDict, *, adopted: bool,
          backoff: Backoff, say: Say, extra: Mapping[str, str] | None = None, until: float = 0.0) -> Created:
    """The label protocol's judgement (docs/submitting.md, "Submitting exactly once"): list
    the key's jobs, once and then again until ``until`` (time.monotonic(): the grace of a
    create that timed out, which may still commit), elect the oldest (create time, then
    name) and cancel every other job of the key that is still alive, this call's own late
    commit included. Racers with one key all elect the same job: a job that becomes visible
    after a racer's list committed after it, so it is younger than the one elected.

    ``found``: the job this call created or adopted (it stands when a list fails: the
    judgement is a safeguard, and a failing list says so through ``say``)."""
    interval = min(backoff.maximum, max(backoff.initial * 4, 0.2))
    elected, cancelled = found, list[str]()
    jobs: list[JobDict] = []
    said = False
    while True:
        try:
            jobs = retrying(lambda: labelled_jobs(backend, kind, parent, label, extra), backoff,
                            f"list jobs labelled {LABEL_KEY}={label}", say)
        except errors.ApiError as exc:
            say(f"could not list the jobs labelled {LABEL_KEY}={label} to cancel duplicates: {exc}; "
                f"`vxtrain list --label {LABEL_KEY}={label}` shows them")
            break
        oldest = min([*jobs, elected], key=_order)
        if oldest.get("name") != elected.get("name"):
            say(f"{oldest.get('name')} carries {LABEL_KEY}={label} too and is older than "
                f"{elected.get('name')}: it is the key's job")
            elected = oldest
        for other_job in sorted(jobs, key=_order):
            name = str(other_job.get("name"))
            if name == elected.get("name") or name in cancelled or not _alive(other_job):
                continue
            if _cancel_duplicate(backend, kind, name, elected, label, backoff, say):
                cancelled.append(name)
        remaining = until - time.monotonic()
        if remaining <= 0:
            break
        if not said:
            say(f"a create that timed out can still commit: listing {LABEL_KEY}={label} for "
                f"{remaining:.1f} s more to cancel a late duplicate")
            said = True
        time.sleep(min(interval, remaining))
    by_name = {j.get("name"): j for j in jobs}
    final = by_name.get(elected.get("name"), elected)
    mine = found.get("name") == final.get("name")
    return Created(final, adopted=adopted or not mine, duplicates_cancelled=tuple(cancelled))


def labelled_jobs(backend: JobBackend, kind: JobKind, parent: str, label: str,
              extra: Mapping[str, str] | None) -> list[JobDict]:
    """Every job under ``parent`` whose labels carry the key ``label`` (and ``extra``)."""
    wanted = {LABEL_KEY: label, **(extra or {})}
    jobs = backend.list(kind, parent, " AND ".join(f'labels.{k}="{v}"' for k, v in wanted.items()))
    return [j for j in jobs if all((j.get("labels") or {}).get(k) == v for k, v in wanted.items())]


def _alive(job: JobDict) -> bool:
    """Not ended and not being cancelled (a job without a state, as a fake lists it, is alive)."""
    return job.get("state") not in (*TERMINAL_STATES, "JOB_STATE_CANCELLING")


def _cancel_duplicate(backend: JobBackend, kind: JobKind, name: str, elected: JobDict, label: str,
                      backoff: Backoff, say: Say) -> bool:
    """Cancel ``name``, a younger job of the key than ``elected``; whether this call cancelled it
    (a job another racer cancelled first, or that ended meanwhile, is refused: not ours)."""
    say(f"{name} also carries {LABEL_KEY}={label} (a submit with the same key at the same moment, "
        f"or a create that committed late): cancelling it; {elected.get('name')} is the key's job")
    try:
        retrying(lambda: backend.cancel(kind, name), backoff, f"cancel {name}", say)
    except errors.InvalidArgumentError:
        return False  # FAILED_PRECONDITION: already ended or cancelled
    except errors.ApiError as exc:
        say(f"could not cancel {name}: {exc}; cancel it yourself (`vxtrain cancel {name}`)")
        return False
    return True


def _order(job: JobDict) -> tuple[tuple[str, str], str]:
    """Jobs in creation order: create time, then name (as find_labelled picks the oldest)."""
    return time_key(job.get("createTime", "")), job.get("name", "")


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
