"""The fallback ladder: rung 0 (the spec), then each ``fallback:`` entry, moving on only
when the job cannot get its machines (docs/capacity.md, "The fallback ladder").

Capacity, and nothing else, moves the ladder on:

* the quota preflight (vxtrain.submission.quota, just before the create) finds a need
  above a limit: NoCapacity, nothing created;
* the create is refused RESOURCE_EXHAUSTED for quota ("The following quota metrics
  exceed quota limits: …", or the newer "The following quotas are exceeded: …");
* the job ends FAILED for capacity: ``error.code`` 8 (RESOURCE_EXHAUSTED), or a
  message that says resources are insufficient, STOCKOUT, or quota exceeded;
* with ``max_pending``, the job is still QUEUED/PENDING after that long: it is
  cancelled, and seen CANCELLED, before the next rung is created (never two alive).

A job that ended FAILED *after it started* (``startTime`` set) lost its machines
while it ran: that is not the ladder's business but recovery's
(vxtrain.submission.recovery; ``lost_outcome``), whatever its error says.

Any other end stops the ladder. Each rung's job carries the idempotency key and
its rung number (``RUNG_LABEL``), so a re-run with the same key resumes where
the last one stopped and creates nothing twice (``_resume``).

Vertex AI's own words: a job "might remain in the JOB_STATE_QUEUED state for some
time" when quota is short (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service);
the stockout text is the one users report ("Resources are insufficient in region: …").
"""
from __future__ import annotations

import re
import shlex
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from vxtrain import errors
from vxtrain.backends.base import JobBackend, JobDict, LocalRun
from vxtrain.joblogs import LogSink
from vxtrain.packaging.upload import UploadProgress
from vxtrain.model import RUNG_LABEL
from vxtrain.submission.create import find_any_kind, labelled_jobs
from vxtrain.submission.events import log_say
from vxtrain.submission.jobs import cancel, create_prepared, get, prepare, using, wait_job
from vxtrain.submission.names import bucket_name, label_value, parent_of
from vxtrain.submission.publish import Publication, images_json
from vxtrain.submission.quota import Read
from vxtrain.submission.retry import LOCAL_RETRY, VERTEX_RETRY, Backoff, default_backoff, retrying
from vxtrain.submission.views import job_view, raise_for_state
from vxtrain.vocab.callbacks import ProgressFn, Say
from vxtrain.vocab.kinds import RESOURCE_EXHAUSTED, TERMINAL_STATES, kind_of_job

if TYPE_CHECKING:
    from vxtrain.images.publish import Pushed

#: RESOURCE_EXHAUSTED texts that mean a quota, at create or in a FAILED job's error
#: (observed: "The following quota metrics exceed quota limits: aiplatform.googleapis.com/…",
#: and the Cloud Quotas wording "The following quotas are exceeded: CustomModelTraining…").
QUOTA_TEXT = re.compile(r"following quota metrics exceed quota limits|following quotas are exceeded", re.I)
#: A FAILED job's error message that says it never got its machines.
CAPACITY_TEXT = re.compile(r"resources are insufficient|stockout|quota exceeded|exceed quota limits|"
                           r"quotas are exceeded", re.I)
#: States of a job that has not started yet.
WAITING_STATES = frozenset({"JOB_STATE_QUEUED", "JOB_STATE_PENDING"})
#: What a capacity-free spec would gain from ``fallback:``, said when it ran out.
FALLBACK_HINT = ("this was capacity, not the job: a `fallback:` list in the spec (each entry an overlay, "
                 "e.g. `- region: us-east4` or another machine type) makes submit try those in turn")
#: What a spec without ``recovery:`` would gain, said when its job lost its machines after it started.
RECOVERY_HINT = ("the job lost its machines after it started (preempted, stocked out, or an internal error), "
                 "not a failure of its code: a `recovery:` block in the spec (e.g. `recovery: {max_recoveries: 3}`) "
                 "makes submit --wait start it again from its checkpoints in base_output_dir")
#: google.rpc.Code.INTERNAL: "Internal errors ... the job is restarted up to two times, then fails"
#: (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service, read 2026-11-27).
INTERNAL = 13
#: Vertex AI's words for a replica whose code exited non-zero, in a FAILED job's error.message. Not in
#: Vertex AI's docs (unverified): the form users report, e.g. "The replica workerpool0-0 exited with a
#: non-zero status of 1. Termination reason: Error." (AI Platform's older form, "The replica master 0
#: exited with a non-zero status of 1", tensorflow/models#4294, is not matched: no Vertex job has it).
EXIT_TEXT = re.compile(r"The replica workerpool\d+-\d+ exited with a non-zero status of (\d+)")


class Outcome(str, Enum):
    """What became of one rung (``attempts[].outcome``)."""

    quota = "quota"
    stockout = "stockout"
    pending_timeout = "pending-timeout"
    started = "started"  # the ladder stopped at this rung's job, alive (RUNNING under --until-running)
    succeeded = "succeeded"
    failed = "failed"
    # Lost its machines after it started (recovery's business, vxtrain.submission.recovery):
    preempted = "preempted"  # a capacity end: a Spot preemption or stockout
    internal = "internal"    # error.code 13
    exit_code = "exit-code"  # a replica exited with one of recovery.on_exit_codes


class Follow(str, Enum):
    """How far submit follows each rung's job."""

    none = "none"                    # only refusals at create move the ladder on
    until_running = "until-running"  # to RUNNING (or an end before it)
    end = "end"                      # to its end (--wait)


@dataclass
class Rung:
    """One job to try: its rung number (0: the spec), region and compiled job."""

    number: int
    project: str
    region: str
    job: JobDict
    #: How an emulator runs it on its host (vxtrain.backends.base.LocalRun).
    local: LocalRun | None = None
    #: What must be pushed and uploaded once this rung's job is to be created.
    publication: Publication | None = None
    #: The spec's staging bucket (``gs://BUCKET[/PREFIX]``): where a chosen key's lease is
    #: taken before the create (vxtrain.submission.lease).
    staging_bucket: str | None = None


@dataclass
class Attempt:
    """One rung tried: ``attempts[]`` of submit's JSON."""

    rung: int
    region: str
    name: str | None
    state: str | None
    outcome: Outcome
    #: The recovery attempt this job belongs to (0: the first; each recovery one more).
    attempt: int = 0
    #: The job's view as last seen (its times and machines price it: vxtrain.submission.recovery).
    view: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        """``{"attempt", "rung", "region", "name", "state", "outcome"}``."""
        return {"attempt": self.attempt, "rung": self.rung, "region": self.region, "name": self.name,
                "state": self.state, "outcome": self.outcome.value}


@dataclass
class Ladder:
    """Everything one climb needs besides the rungs (the options of submit)."""

    key: str
    explicit: bool
    follow: Follow = Follow.none
    max_pending: float | None = None
    backend: JobBackend | None = None
    endpoint: str | None = None
    backoff: Backoff | None = None
    poll: Backoff | None = None
    progress: ProgressFn | None = None
    logs: LogSink | None = None
    say: Say = log_say
    #: Watches each large upload of a publication (the command line draws a bar).
    upload_progress: UploadProgress | None = None
    #: Set each rung's needs against the project's quota limits before its create.
    quota_check: bool = True
    #: The limits read so far, by project: read once for the whole ladder, so an
    #: unreachable Cloud Quotas API costs its retries once, not once per rung.
    quota_reads: dict[str, Read] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)
    #: The images the rungs pushed (or found there), in the order they were published.
    pushed: list[Pushed] = field(default_factory=list)
    #: The duplicates of the key's jobs this climb cancelled (vxtrain.submission.create.elect).
    duplicates_cancelled: list[str] = field(default_factory=list)
    #: How many rungs the ladder has (set by ``climb``).
    size: int = 1
    #: Labels every job of this climb carries beside the key (and its rung): a recovery attempt's.
    labels: dict[str, str] = field(default_factory=dict)
    #: The rung this climb starts from (a recovery with ``strategy: next`` starts lower).
    first: int = 0
    #: The recovery attempt this climb makes jobs for (``Attempt.attempt``).
    attempt: int = 0
    #: Whether a job that lost its machines after it started is handed to recovery (the spec
    #: has ``recovery:``): the climb stops there with that outcome instead of failing.
    recovering: bool = False
    #: recovery.on_exit_codes: a replica's exit codes that count as lost machines.
    exit_codes: frozenset[int] = frozenset()
    #: The jobs a recovering climb adopted already ended (an earlier watcher's attempts, found
    #: on resume): judged as found, neither followed (their log lines are not read again) nor
    #: announced again (vxtrain.submission.recovery).
    found_ended: set[str] = field(default_factory=set)

    def record(self, rung: Rung, view: dict[str, Any] | None, outcome: Outcome) -> None:
        """Note what became of ``rung`` (its job's ``view``, None when none was made)."""
        name, state = (view["name"], view["state"]) if view else (None, None)
        self.attempts.append(Attempt(rung.number, rung.region, name, state, outcome, self.attempt, view))

    def moved(self, rung: Rung, why: str) -> None:
        """Say why the ladder leaves ``rung`` (a spec without ``fallback:`` says it in its error)."""
        if self.size > 1:
            after = "moving on" if rung.number < self.size - 1 else "it was the last rung"
            self.say(f"rung {rung.number} ({rung.region}): {why}; {after}")


def climb(rungs: Sequence[Rung], ladder: Ladder) -> dict[str, Any]:
    """Try ``rungs`` in order until one's job gets its machines; return that job's view
    with ``attempts`` (and ``images``, what the climb pushed, when a rung has images to
    publish). Raises NoCapacity when every rung ran out of capacity (a spec with
    ``fallback:``), JobFailedError when a job failed for another reason (under a follow),
    and the ApiError of a create refused for anything but capacity.

    A single rung (no ``fallback:``) keeps the earlier contract: a quota refusal is
    the QuotaError (exit 4) and a stockout the JobFailedError (exit 3), each saying
    it was capacity and what ``fallback:`` would do.
    """
    view = {**_climb(rungs, ladder), "duplicates_cancelled": list(ladder.duplicates_cancelled)}
    if any(rung.publication is not None and rung.publication.images for rung in rungs):
        view["images"] = images_json(ladder.pushed)
    return view


def _climb(rungs: Sequence[Rung], ladder: Ladder) -> dict[str, Any]:
    ladder.size = len(rungs)
    start = _resume(rungs, ladder) if ladder.explicit and len(rungs) > 1 else ladder.first
    if isinstance(start, dict):
        return start  # the live (or succeeded) job of a rung already tried
    last: Exception | None = None
    for rung in rungs[start:]:
        if rung.number > 0 and ladder.attempts:
            ladder.say(f"trying fallback rung {rung.number} of {len(rungs) - 1} in {rung.region}")
        try:
            view, last = _try(rung, ladder, labelled=len(rungs) > 1)
        except errors.ApiError as stopped:  # not capacity: the ladder ends, saying what the rungs before did
            raise stopped.with_attempts(_attempts(ladder)) from stopped
        except KeyboardInterrupt:
            if len(rungs) > 1 and not ladder.explicit:
                _interrupted(rung, ladder)
            raise
        if view is not None:
            return view
    return _out_of_capacity(rungs, ladder, last)


def _try(rung: Rung, ladder: Ladder, *, labelled: bool) -> tuple[dict[str, Any] | None, Exception | None]:
    """Create and follow one rung: (its final view, None) when the ladder stops here,
    (None, why) when capacity moves it on."""
    with using(ladder.backend, rung.region, ladder.endpoint) as api:
        try:
            view = _create(api, rung, ladder, _labels(rung, ladder) if labelled else (ladder.labels or None))
        except errors.NoCapacity as short:  # the quota preflight: a need above a limit
            ladder.record(rung, None, Outcome.quota)
            ladder.moved(rung, str(short))  # its message says nothing was created
            return None, short
        except errors.QuotaError as refused:
            if not QUOTA_TEXT.search(str(refused)):
                raise  # RESOURCE_EXHAUSTED that is not a quota (a rate limit): not capacity
            ladder.record(rung, None, Outcome.quota)
            ladder.moved(rung, f"the create was refused for quota ({refused}); nothing created")
            return None, refused
        return _after_create(rung, ladder, api, view)


def _labels(rung: Rung, ladder: Ladder) -> dict[str, str]:
    """The labels that, with the key, name ``rung``'s job in this climb: its rung number and the
    climb's own (a recovery attempt's number)."""
    return {RUNG_LABEL: str(rung.number), **ladder.labels}


def _create(api: JobBackend, rung: Rung, ladder: Ladder, labels: dict[str, str] | None) -> dict[str, Any]:
    """The rung's job, adopted or created exactly once after its checks and its publication
    (vxtrain.submission.jobs.prepare); what the publication pushed is recorded first, so it
    is reported even when the create is then refused."""
    retry = default_backoff(api, ladder.backoff, LOCAL_RETRY, VERTEX_RETRY)
    ready = prepare(api, rung.job, project=rung.project, region=rung.region, key=ladder.key,
                    explicit=ladder.explicit, backoff=retry, say=ladder.say, labels=labels,
                    quota_check=ladder.quota_check, quota_reads=ladder.quota_reads,
                    publication=rung.publication, upload_progress=ladder.upload_progress)
    ladder.pushed += ready.pushed
    made = create_prepared(api, ready, rung.job, parent=parent_of(rung.project, rung.region),
                           key=ladder.key, backoff=retry, say=ladder.say, local=rung.local,
                           labels=labels, lease_bucket=bucket_name(rung.staging_bucket) if ladder.explicit else None)
    ladder.duplicates_cancelled += made.duplicates_cancelled
    return job_view(made.job, emulated=api.emulated, adopted=made.adopted)


def _after_create(rung: Rung, ladder: Ladder, api: JobBackend, view: dict[str, Any]) -> tuple[
        dict[str, Any] | None, Exception | None]:
    """Follow a rung's job as far as ``ladder.follow`` says and judge how it ended."""
    if ladder.follow is Follow.none:  # no following: the job as the create (or adopt) left it
        return _stop(rung, ladder, view, _as_is(view)), None
    if ladder.recovering and view.get("adopted") and view["state"] in TERMINAL_STATES:
        ladder.found_ended.add(view["name"])  # an earlier attempt a resumed watch walks past
        return _judge(rung, ladder, view)
    final = _follow(api, view, ladder)
    if final["state"] in WAITING_STATES:  # pending too long: cancel, and see it end
        final = _cancel_pending(api, final, ladder)
        if final["state"] == "JOB_STATE_CANCELLED":
            ladder.record(rung, final, Outcome.pending_timeout)
            ladder.moved(rung, f"{final['name']} was still waiting for machines after "
                               f"{ladder.max_pending:g} s; cancelled it")
            return None, errors.JobFailedError(f"{final['name']} waited too long for machines", final)
    return _judge(rung, ladder, final)


def _judge(rung: Rung, ladder: Ladder, final: dict[str, Any]) -> tuple[
        dict[str, Any] | None, Exception | None]:
    """The outcome of a followed job: stop here, or (capacity) move on."""
    state = final["state"]
    capacity = left_for_capacity(final)
    if capacity is Outcome.pending_timeout:  # cancelled before it ran: another submit of the key left it
        ladder.record(rung, final, capacity)
        ladder.moved(rung, f"{final['name']} was cancelled before it ran (left for capacity: a submit "
                           "with the same key waited too long for its machines)")
        return None, errors.JobFailedError(f"{final['name']} was cancelled before it ran", final)
    if capacity is not None:
        ladder.record(rung, final, capacity)
        why = (final.get("error") or {}).get("message", "")
        ladder.moved(rung, f"{final['name']} ended {state} for capacity ({why})")
        return None, errors.JobFailedError(f"{final['name']} ended {state}: {why}", final)
    if state == "JOB_STATE_SUCCEEDED":
        return _stop(rung, ladder, final, Outcome.succeeded), None
    lost = lost_outcome(final, ladder.exit_codes)
    if lost is not None and ladder.recovering:  # recovery decides what comes next
        return _stop(rung, ladder, final, lost), None
    if state in TERMINAL_STATES:
        _stop(rung, ladder, final, lost or Outcome.failed)
        if lost is not None:  # no recovery: block; say what one would have done
            why = (final.get("error") or {}).get("message") or "no error message"
            raise errors.JobFailedError(f"{final['name']} ended {state}: {why}; {RECOVERY_HINT}",
                                        job={**final, "attempts": _attempts(ladder)})
        raise_for_state({**final, "attempts": _attempts(ladder)})
    return _stop(rung, ladder, final, Outcome.started), None


def _as_is(view: dict[str, Any]) -> Outcome:
    """The outcome of a job not followed: alive (``started``), or the end it already had."""
    if view["state"] not in TERMINAL_STATES:
        return Outcome.started
    if view["state"] == "JOB_STATE_SUCCEEDED":
        return Outcome.succeeded
    return lost_outcome(view) or left_for_capacity(view) or Outcome.failed


def _stop(rung: Rung, ladder: Ladder, view: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """The view the ladder ends with, its attempts included."""
    ladder.record(rung, view, outcome)
    return {**view, "attempts": _attempts(ladder)}


def _attempts(ladder: Ladder) -> list[dict[str, Any]]:
    return [a.to_json() for a in ladder.attempts]


def capacity_outcome(view: dict[str, Any]) -> Outcome | None:
    """``quota`` or ``stockout`` for a job that ended FAILED because it could not get its
    machines (``error.code`` 8, or a message saying so), else None."""
    if view.get("state") != "JOB_STATE_FAILED":
        return None
    error = view.get("error") or {}
    message = str(error.get("message", ""))
    if QUOTA_TEXT.search(message):
        return Outcome.quota
    if error.get("code") == RESOURCE_EXHAUSTED or CAPACITY_TEXT.search(message):
        return Outcome.stockout
    return None


def left_for_capacity(view: dict[str, Any]) -> Outcome | None:
    """The one judgement of a rung's job the ladder leaves, followed or found on resume:
    ``quota`` or ``stockout`` when it ended FAILED for capacity; ``pending-timeout`` when it
    was CANCELLED before it ever ran (a ladder with its key waited too long for machines;
    a job cancelled while running is not capacity); else None."""
    if view.get("state") == "JOB_STATE_CANCELLED" and not view.get("start_time"):
        return Outcome.pending_timeout
    if view.get("start_time"):  # it got its machines: losing them later is recovery's (lost_outcome)
        return None
    return capacity_outcome(view)


def lost_outcome(view: dict[str, Any], exit_codes: Collection[int] = ()) -> Outcome | None:
    """How a job that had started (``start_time`` set) and ended FAILED lost its machines:
    ``preempted`` for a capacity end (``capacity_outcome``: Spot preemption, stockout),
    ``internal`` for ``error.code`` 13, ``exit-code`` for Vertex's "The replica
    workerpoolK-I exited with a non-zero status of N" with N in ``exit_codes``; else None
    (a failure of the code, a cancel, an end before start, or a success)."""
    if view.get("state") != "JOB_STATE_FAILED" or not view.get("start_time"):
        return None
    if capacity_outcome(view) is not None:
        return Outcome.preempted
    error = view.get("error") or {}
    if error.get("code") == INTERNAL:
        return Outcome.internal
    found = EXIT_TEXT.search(str(error.get("message", "")))
    if found is not None and int(found.group(1)) in exit_codes:
        return Outcome.exit_code
    return None


def _follow(api: JobBackend, view: dict[str, Any], ladder: Ladder) -> dict[str, Any]:
    """Poll the job until it ends, or RUNNING (under until-running), or it has waited
    QUEUED/PENDING ``max_pending`` seconds (counted from when this submit followed it)."""
    def enough(now: dict[str, Any], elapsed: float) -> bool:
        if ladder.follow is Follow.until_running and now["state"] == "JOB_STATE_RUNNING":
            return True
        return ladder.max_pending is not None and now["state"] in WAITING_STATES and elapsed >= ladder.max_pending

    final = wait_job(view["name"], backend=api, backoff=ladder.backoff, poll=ladder.poll,
                     progress=ladder.progress, check=False, say=ladder.say, until=enough,
                     logs=ladder.logs if ladder.follow is Follow.end else None)
    return {**final, "adopted": view.get("adopted", False)}


def _cancel_pending(api: JobBackend, view: dict[str, Any], ladder: Ladder) -> dict[str, Any]:
    """Cancel a job still waiting for machines and follow it until it has ended: the next
    rung is created only once this one is seen CANCELLED (never two rungs alive)."""
    ladder.say(f"{view['name']} is still {view['state']} after {ladder.max_pending:g} s "
               "(--max-pending): cancelling it")
    try:
        cancel(view["name"], backend=api, backoff=ladder.backoff, say=ladder.say)
    except errors.InvalidArgumentError:
        # It ended between the last poll and the cancel (a stockout, say), and Vertex AI
        # refuses to cancel an ended job (FAILED_PRECONDITION): judge it as it ended.
        if get(view["name"], backend=api, backoff=ladder.backoff, say=ladder.say)["state"] not in TERMINAL_STATES:
            raise
    final = wait_job(view["name"], backend=api, backoff=ladder.backoff, poll=ladder.poll,
                     check=False, say=ladder.say)
    return {**final, "adopted": view.get("adopted", False)}


def _interrupted(rung: Rung, ladder: Ladder) -> None:
    """Ctrl-C on a ladder whose key vxtrain made up: say the key, so the run can be resumed
    (`--idempotency-key KEY` goes on where it stopped, creating nothing twice), and cancel
    the job of this rung that is still waiting for machines, so no rung is left pending
    behind the user's back (a resume counts it as left for capacity). A job already
    running is left running, as a plain submit's Ctrl-C leaves it."""
    ladder.say(f"interrupted on rung {rung.number} ({rung.region}): resume this ladder with "
               f"--idempotency-key {shlex.quote(ladder.key)}")
    label = label_value(ladder.key)
    with using(ladder.backend, rung.region, ladder.endpoint) as api:
        retry = default_backoff(api, ladder.backoff, LOCAL_RETRY, VERTEX_RETRY)
        kind, parent = kind_of_job(rung.job), parent_of(rung.project, rung.region)
        try:
            jobs = retrying(lambda: labelled_jobs(api, kind, parent, label, _labels(rung, ladder)),
                            retry, f"list the jobs of rung {rung.number}", ladder.say)
            for job in jobs:
                if job.get("state") not in WAITING_STATES:
                    continue
                cancel(str(job["name"]), backend=api, backoff=retry, say=ladder.say)
                ladder.say(f"cancelled {job['name']}, still {job.get('state')}: the interrupted ladder "
                           "leaves no job waiting for machines")
        except errors.ApiError as exc:
            ladder.say(f"could not cancel what rung {rung.number} left waiting ({exc}): "
                       f"`vxtrain list --label {RUNG_LABEL}={rung.number}` shows it")


def _out_of_capacity(rungs: Sequence[Rung], ladder: Ladder, last: Exception | None) -> dict[str, Any]:
    """Every rung ran out: NoCapacity with the attempts (a ladder), else the last rung's own
    error, saying it was capacity and what ``fallback:`` would do."""
    if len(rungs) > 1:
        raise errors.NoCapacity(
            f"no capacity on any of the {len(rungs)} rungs (the spec and its {len(rungs) - 1} "
            f"fallback {'entry' if len(rungs) == 2 else 'entries'}): " + "; ".join(f"rung {a.rung} {a.region}: {a.outcome.value}"
                                              for a in ladder.attempts)
            + "; try other regions or machines in `fallback:`, request quota, or submit later",
            attempts=_attempts(ladder))
    if isinstance(last, errors.JobFailedError):
        raise errors.JobFailedError(f"{last}; {FALLBACK_HINT}",
                                    job={**last.job, "attempts": _attempts(ladder)}) from None
    if isinstance(last, errors.ApiError):
        raise type(last)(f"{last}; {FALLBACK_HINT}") from last
    if isinstance(last, errors.NoCapacity):  # the preflight's finding: exit 5, its report kept
        raise errors.NoCapacity(f"{last}; {FALLBACK_HINT}", last.report) from None
    assert last is not None  # a rung that moved on says why
    raise last


# --- resuming a ladder an earlier submit with the same key began ---------------------------

def _resume(rungs: Sequence[Rung], ladder: Ladder) -> int | dict[str, Any]:
    """Where a re-run with the same key goes on: the view of the highest rung's job when
    it is alive or succeeded (adopted, then followed as asked), or the number of the rung
    after one whose job ran out of capacity (0 when none was tried). A highest job that
    failed for another reason is the answer too (as a plain re-submit adopts its job)."""
    found = list(_jobs_of(rungs[ladder.first:], ladder))
    if not found:
        return ladder.first
    _record_below(rungs[ladder.first:], found, ladder)
    rung, job = found[-1]
    with using(ladder.backend, rung.region, ladder.endpoint) as api:
        view = job_view(job, emulated=api.emulated, adopted=True)
        left = left_for_capacity(view)
        if left is not None:
            ladder.record(rung, view, left)
            ladder.say(f"{view['name']} (rung {rung.number}, same key) ran out of capacity: "
                       f"going on from rung {rung.number + 1}")
            return rungs.index(rung) + 1
        ladder.say(f"adopting {view['name']} (rung {rung.number}, same key): nothing new is created")
        terminal = view["state"] in TERMINAL_STATES and ladder.follow is not Follow.none
        if terminal and ladder.recovering:
            ladder.found_ended.add(view["name"])  # as _after_create notes one
        final, _ = _judge(rung, ladder, view) if terminal else _after_create(rung, ladder, api, view)
        if final is None:  # it ran out of capacity while followed: the ladder goes on
            return rungs.index(rung) + 1
        return final


def _record_below(rungs: Sequence[Rung], found: Sequence[tuple[Rung, JobDict]], ladder: Ladder) -> None:
    """The attempts of the rungs below the highest one with a job: each was left for capacity.
    One without a job was left before any was created, which only a quota does (the
    preflight's finding or a refusal at create): ``quota``, with no name."""
    jobs = {rung.number: job for rung, job in found}
    for rung in rungs[:rungs.index(found[-1][0])]:
        job = jobs.get(rung.number)
        if job is None:
            ladder.record(rung, None, Outcome.quota)
            continue
        view = job_view(job, emulated=False)
        ladder.record(rung, view, left_for_capacity(view) or Outcome.pending_timeout)


def _jobs_of(rungs: Sequence[Rung], ladder: Ladder) -> Iterator[tuple[Rung, JobDict]]:
    """Each rung's job that carries the key, in rung order (rungs without one left out)."""
    label = label_value(ladder.key)
    for rung in rungs:
        with using(ladder.backend, rung.region, ladder.endpoint) as api:
            retry = default_backoff(api, ladder.backoff, LOCAL_RETRY, VERTEX_RETRY)
            job = retrying(lambda: _job_of(api, rung, label, ladder), retry, f"list the jobs of rung {rung.number}",
                           ladder.say)
        if job is not None:
            yield rung, job


def _job_of(api: JobBackend, rung: Rung, label: str, ladder: Ladder) -> JobDict | None:
    """The job of ``rung`` that carries the key. Rung 0's may carry no rung label: the job of a
    submit made before the spec had ``fallback:`` (what the exit-3/4 hint invites) is the
    spec's own, and is not created again."""
    kind, parent = kind_of_job(rung.job), parent_of(rung.project, rung.region)
    job = find_any_kind(api, kind, parent, label, _labels(rung, ladder))
    if job is not None or rung.number > 0:
        return job
    older = find_any_kind(api, kind, parent, label, ladder.labels or None)
    return older if older is not None and RUNG_LABEL not in (older.get("labels") or {}) else None


def job_without(rungs: Sequence[Rung], ladder: Ladder, label: str) -> str | None:
    """The name of a job of the key, in any rung's region, that lacks the label ``label``:
    the job of a submit made before the spec asked for that label (``recovery:``'s attempt
    number). Such a job is the key's, and is not created again beside it."""
    for job in _key_jobs(rungs, ladder, None):
        if label not in (job.get("labels") or {}):
            return str(job["name"])
    return None


def job_with(rungs: Sequence[Rung], ladder: Ladder, labels: dict[str, str]) -> str | None:
    """The name of a job of the key, in any rung's region, that carries ``labels`` (e.g. a
    recovery attempt's number), or None when there is none yet."""
    return next((str(job["name"]) for job in _key_jobs(rungs, ladder, labels)), None)


def _key_jobs(rungs: Sequence[Rung], ladder: Ladder, labels: dict[str, str] | None) -> Iterator[JobDict]:
    """The jobs of the key (with ``labels``), region by region of ``rungs``."""
    key = label_value(ladder.key)
    for region in dict.fromkeys(rung.region for rung in rungs):
        rung = next(r for r in rungs if r.region == region)
        with using(ladder.backend, region, ladder.endpoint) as api:
            retry = default_backoff(api, ladder.backoff, LOCAL_RETRY, VERTEX_RETRY)
            kind, parent = kind_of_job(rung.job), parent_of(rung.project, region)
            jobs = retrying(lambda: labelled_jobs(api, kind, parent, key, labels), retry,
                            f"list the jobs of the key in {region}", ladder.say)
        yield from jobs
