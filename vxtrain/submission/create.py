"""Creating a job exactly once (docs/submitting.md, "Submitting exactly once").

CreateCustomJob has no request id
(https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/create),
so a blind retry can create two jobs. Every job is labelled
``vxtrain_idempotency_key=<key>`` (and, beside it, its rung and attempt); before any
retry of a create whose outcome is unknown, jobs with those labels are listed and the
one that exists is adopted. Then the label protocol's judgement (``elect``): the oldest
job of the labels is the one, every other one still alive is cancelled.
"""
from __future__ import annotations

import shlex
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from vxtrain import errors
from vxtrain.backends.base import JobBackend, JobDict, LocalRun
from vxtrain.submission.names import LABEL_KEY, label_value
from vxtrain.submission.session import Session
from vxtrain.vocab.kinds import JobKind, JobState, kind_of_job
from vxtrain.vocab.timestamps import time_key


@dataclass(frozen=True)
class Request:
    """One job to create once: under ``parent``, for ``key``, with ``labels`` beside the key
    (a fallback rung's number, a recovery attempt's) that name it among the key's jobs;
    ``local``: how an emulator runs it on its host."""

    job: JobDict
    parent: str
    key: str
    labels: Mapping[str, str] = field(default_factory=dict)
    local: LocalRun | None = None

    @property
    def kind(self) -> JobKind:
        """The job's kind (a CustomJob, or a HyperparameterTuningJob)."""
        return kind_of_job(self.job)

    @property
    def label(self) -> str:
        """The key as a label value."""
        return label_value(self.key)

    @property
    def labelled(self) -> JobDict:
        """The job as sent: its own labels, the key's and ``labels``."""
        return {**self.job, "labels": {**(self.job.get("labels") or {}), **self.labels, LABEL_KEY: self.label}}

    def jobs(self, session: Session) -> list[JobDict]:
        """Every job under ``parent`` that carries the key and ``labels``."""
        api = session.api(self.parent.split("/")[3])
        return labelled_jobs(api, self.kind, self.parent, self.label, self.labels)


def labelled_jobs(backend: JobBackend, kind: JobKind, parent: str, label: str,
                  extra: Mapping[str, str] | None = None) -> list[JobDict]:
    """Every job under ``parent`` whose labels carry the key ``label`` (and ``extra``)."""
    wanted = {LABEL_KEY: label, **(extra or {})}
    # Filter syntax `labels.key=value`: ListCustomJobsRequest.filter,
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/list
    jobs = backend.list(kind, parent, " AND ".join(f'labels.{k}="{v}"' for k, v in wanted.items()))
    # Filter here too: the filter is a convenience of the server, the labels the truth.
    return [j for j in jobs if all((j.get("labels") or {}).get(k) == v for k, v in wanted.items())]


def oldest(jobs: list[JobDict]) -> JobDict | None:
    """The oldest of ``jobs`` (create time, then name), or None."""
    return min(jobs, key=_order) if jobs else None


class _CreateAttempt:
    """One create; on every attempt after the first (the previous outcome is
    unknown), adopt the job that carries the labels instead of creating another.

    After a create that timed out (DEADLINE_EXCEEDED), the server may still
    commit it: one empty list proves nothing, so the labels are listed again until
    the retry policy's ``commit_grace`` seconds have passed before creating again.
    """

    def __init__(self, session: Session, request: Request) -> None:
        self.session, self.request = session, request
        self.api = session.api(request.parent.split("/")[3])
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
        request = self.request
        try:
            created: JobDict = self.api.create(request.kind, request.parent, request.labelled, local=request.local)
        except errors.ApiError as exc:
            self.maybe_created = exc.transient  # a transient error leaves the outcome unknown
            if exc.transient and exc.timed_out:
                self.late_until = time.monotonic() + self.session.retry_policy.commit_grace
            raise
        return created, False

    def find(self) -> JobDict | None:
        """The job the labels mark; within the grace after a timed-out create, list again
        (every few tenths of a second on an emulator, seconds on Vertex) until it shows up."""
        policy = self.session.retry_policy
        interval = min(policy.maximum, max(policy.initial * 4, 0.2))
        said = False
        while True:
            existing = oldest(self.request.jobs(self.session))
            remaining = self.late_until - time.monotonic()
            if existing is not None or remaining <= 0:
                return existing
            if not said:
                self.session.log.warning(
                    "no job labelled %s=%s yet, but a create that timed out can still commit: listing again "
                    "for %.1f s before creating another", LABEL_KEY, self.request.label, remaining)
                said = True
            time.sleep(min(interval, remaining))


@dataclass(frozen=True)
class Created:
    """What ``create_once`` ends with: the key's job (the elected one: the oldest), whether
    it was adopted rather than created by this call, and the names of the other jobs of the
    key this call cancelled (duplicates made by racing submits or late-committing creates)."""

    job: JobDict
    adopted: bool
    duplicates_cancelled: tuple[str, ...] = ()


def create_once(session: Session, request: Request) -> Created:
    """Create the request's job at most once per call and leave its labels one live job.

    When the calls end in an error while a create's outcome is unknown, a last list
    settles it (see ``_settle``). Then the labels' jobs are listed until the late-commit
    grace of this call's timed-out creates has passed (once at least): the oldest is the
    key's job, every other one still alive is cancelled (see ``elect``).
    """
    attempt = _CreateAttempt(session, request)
    try:
        created, adopted = session.call(attempt, f"create {request.kind.noun}")
    except errors.ApiError as exc:
        if not attempt.maybe_created:
            raise
        created, adopted = _settle(attempt, exc)
    return elect(session, request, created, adopted=adopted, until=attempt.late_until)


def elect(session: Session, request: Request, found: JobDict, *, adopted: bool, until: float = 0.0) -> Created:
    """The label protocol's judgement (docs/submitting.md, "Submitting exactly once"): list
    the request's labels, once and then again until ``until`` (time.monotonic(): the grace of
    a create that timed out, which may still commit), elect the oldest (create time, then
    name) and cancel every other job of the labels that is still alive, this call's own late
    commit included. Racers all elect the same job: a job that becomes visible after a
    racer's list committed after it, so it is younger than the one elected.

    ``found``: the job this call created or adopted (it stands when a list fails: the
    judgement is a safeguard, and a failing list says so)."""
    policy = session.retry_policy
    interval = min(policy.maximum, max(policy.initial * 4, 0.2))
    elected, cancelled = found, list[str]()
    jobs: list[JobDict] = []
    said = False
    label = f"{LABEL_KEY}={request.label}"
    while True:
        try:
            jobs = session.call(lambda: request.jobs(session), f"list jobs labelled {label}")
        except errors.ApiError as exc:
            session.log.warning("could not list the jobs labelled %s to cancel duplicates: %s; "
                                "`vxtrain list --label %s` shows them", label, exc, label)
            break
        first = min([*jobs, elected], key=_order)
        if first.get("name") != elected.get("name"):
            session.log.warning("%s carries %s too and is older than %s: it is the key's job",
                                first.get("name"), label, elected.get("name"))
            elected = first
        for other_job in sorted(jobs, key=_order):
            name = str(other_job.get("name"))
            if name == elected.get("name") or name in cancelled or not _alive(other_job):
                continue
            if cancel_duplicate(session, name, str(elected.get("name")), label):
                cancelled.append(name)
        remaining = until - time.monotonic()
        if remaining <= 0:
            break
        if not said:
            session.log.warning("a create that timed out can still commit: listing %s for %.1f s more to "
                                "cancel a late duplicate", label, remaining)
            said = True
        time.sleep(min(interval, remaining))
    by_name = {j.get("name"): j for j in jobs}
    final = by_name.get(elected.get("name"), elected)
    mine = found.get("name") == final.get("name")
    return Created(final, adopted=adopted or not mine, duplicates_cancelled=tuple(cancelled))


def _alive(job: JobDict) -> bool:
    """Not ended and not being cancelled (a job without a state, as a fake lists it, is alive)."""
    return JobState.of(job.get("state", JobState.UNSPECIFIED)).alive


def cancel_duplicate(session: Session, name: str, elected: str, label: str) -> bool:
    """Cancel ``name``, a younger job of the key than ``elected``; whether this call cancelled it
    (a job another racer cancelled first, or that ended meanwhile, is refused: not ours)."""
    session.log.warning("%s also carries %s (a submit with the same key at the same moment, or a create "
                        "that committed late): cancelling it; %s is the key's job", name, label, elected)
    try:
        session.cancel_call(name)
    except errors.InvalidArgumentError:
        return False  # FAILED_PRECONDITION: already ended or cancelled
    except errors.ApiError as exc:
        session.log.warning("could not cancel %s: %s; cancel it yourself (`vxtrain cancel %s`)", name, exc, name)
        return False
    return True


def _order(job: JobDict) -> tuple[tuple[str, str], str]:
    """Jobs in creation order: create time, then name (as ``oldest`` picks)."""
    return time_key(job.get("createTime", "")), job.get("name", "")


def _settle(attempt: _CreateAttempt, exc: errors.ApiError) -> tuple[JobDict, bool]:
    """The calls ended in ``exc`` while a create's outcome was unknown: a last list
    (within the grace of a timed-out create, as long as it lasts) adopts the job if it
    was made, re-raises ``exc`` if it was not, and when even that list fails, raises
    ``exc`` saying the job may exist and which key adopts it."""
    try:
        existing = attempt.find()
    except errors.ApiError:
        raise exc.reworded(
            f"{exc}; the job may have been created all the same (labelled {LABEL_KEY}={attempt.request.label}): "
            f"submit again with --idempotency-key {shlex.quote(attempt.request.key)} to adopt it rather than "
            f"create another") from exc
    if existing is None:
        raise exc
    return existing, True
