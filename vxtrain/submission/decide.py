"""A key's whole life as one pure function: ``decide(plan, jobs, now) -> Decision``.

Given the plan (vxtrain.submission.plan: the rungs as sent, the recovery policy) and
every job of the key as observed (all attempts and rungs, with their states and times,
and what this observer did to them), it returns the next steps: create attempt A on
rung R, cancel these jobs, send this event, say this line, wait for this job (until T),
or finish with an outcome. ``submit``, ``submit --wait``, a re-run with the key and
``vxtrain reconcile`` are this function plus I/O (vxtrain.submission.carry): observe,
decide, act, again. No clock, no network, no environment: tests feed it histories
(tests/submission/test_decide.py).

The rules, in the order a life meets them (docs/capacity.md, docs/recovery.md):

* an attempt climbs the rungs: rung 0 (the spec), then each ``fallback:`` entry, moving
  on only for capacity: a refusal before any job (the quota preflight, a quota refusal at
  create), a job that ended FAILED for capacity before it started (``error.code`` 8, or
  the words), or one cancelled before it started because it waited too long
  (``--max-pending``, counted from its create time, so racing watchers agree);
* a job that ended FAILED after it started lost its machines (``lost_outcome``): with
  ``recovery:`` and a watch that follows to the end, the next attempt starts on the rung
  the strategy table says (``STRATEGIES``), until ``max_recoveries`` is spent;
* anything else ends the life: success, a failure of the code, a cancel by hand;
* never two jobs of the key alive: a create waits until every job of the key has ended,
  and every live job but the one followed is cancelled (a racer's duplicate, a late
  commit); nothing is created after the plan finished.

Vertex AI's own words: a job "might remain in the JOB_STATE_QUEUED state for some time"
when quota is short (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service);
the stockout text is the one users report ("Resources are insufficient in region: …").
"""
from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Literal

from vxtrain.backends.base import JobDict
from vxtrain.model import ATTEMPT_ENV, ATTEMPT_LABEL, RUNG_LABEL
from vxtrain.submission.plan import Plan
from vxtrain.submission.views import JobView
from vxtrain.vocab.kinds import RESOURCE_EXHAUSTED, JobState, job_spec_of, kind_of_job, with_pool_env
from vxtrain.vocab.timestamps import parse_time, time_key

if TYPE_CHECKING:
    from vxtrain.submission.views import TriedJson

#: RESOURCE_EXHAUSTED texts that mean a quota, at create or in a FAILED job's error
#: (observed: "The following quota metrics exceed quota limits: aiplatform.googleapis.com/…",
#: and the Cloud Quotas wording "The following quotas are exceeded: CustomModelTraining…").
QUOTA_TEXT = re.compile(r"following quota metrics exceed quota limits|following quotas are exceeded", re.I)
#: A FAILED job's error message that says it never got its machines.
CAPACITY_TEXT = re.compile(r"resources are insufficient|stockout|quota exceeded|exceed quota limits|"
                           r"quotas are exceeded", re.I)
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


class Outcome(StrEnum):
    """What became of one rung of one attempt (``attempts[].outcome``)."""

    quota = "quota"
    stockout = "stockout"
    pending_timeout = "pending-timeout"
    started = "started"  # the watch stopped at this job, alive (RUNNING under --until-running)
    succeeded = "succeeded"
    failed = "failed"
    cancelled = "cancelled"  # cancelled after it started, or by hand before (not by a watcher)
    # Lost its machines after it started (recovery's business):
    preempted = "preempted"  # a capacity end: a Spot preemption or stockout
    internal = "internal"    # error.code 13
    exit_code = "exit-code"  # a replica exited with one of recovery.on_exit_codes


#: Words for each lost outcome in messages.
WHY_LOST = {Outcome.preempted: "lost its machines (preempted or stocked out)",
            Outcome.internal: "ended with an internal error (code 13)",
            Outcome.exit_code: "had a replica exit with a code listed in recovery.on_exit_codes"}


class Follow(StrEnum):
    """How far a watch follows the key's jobs."""

    none = "none"                    # only refusals at create move the ladder on
    until_running = "until-running"  # to RUNNING (or an end before it)
    end = "end"                      # to its end (--wait, reconcile): recovery acts


#: The recovery strategies: the rung the next attempt starts from, given the rung that lost
#: its machines (``recovery.strategy``; validation's enum is this table's keys).
STRATEGIES: dict[str, Callable[[int], int]] = {}


def strategy(name: str) -> Callable[[Callable[[int], int]], Callable[[int], int]]:
    """Register a recovery strategy under ``name``."""
    def register(rule: Callable[[int], int]) -> Callable[[int], int]:
        STRATEGIES[name] = rule
        return rule
    return register


@strategy("same")
def _same(rung: int) -> int:
    """Retry the rung that ran."""
    return rung


@strategy("next")
def _next(rung: int) -> int:
    """Go on down the fallback ladder."""
    return rung + 1


# --- what the observer knows --------------------------------------------------------------

@dataclass(frozen=True)
class Watch:
    """What the observer asks of the life: how far it follows, how long a job may wait for
    machines (seconds; None: for ever), whether the key is the caller's own."""

    follow: Follow = Follow.end
    max_pending: float | None = None
    explicit: bool = False


@dataclass(frozen=True)
class Seen:
    """One job of the key as this observer knows it: its view, and what it did or saw of it."""

    view: JobView
    #: In the observer's first look, before it acted (an earlier run's job).
    found: bool = False
    #: This observer's create made it (or adopted it: ``view.adopted``).
    created_here: bool = False
    #: This observer saw it before it ended, and before it started.
    seen_alive: bool = False
    seen_waiting: bool = False
    #: This observer cancelled it because it waited too long for machines.
    cancelled_here: bool = False
    #: This observer has polled it while following it.
    followed: bool = False

    @property
    def attempt(self) -> int:
        """Its recovery attempt (a job without the label is attempt 0)."""
        return self.view.label_number(ATTEMPT_LABEL) or 0

    @property
    def rung(self) -> int:
        """Its rung (a job without the label is rung 0's)."""
        return self.view.label_number(RUNG_LABEL) or 0


@dataclass(frozen=True)
class Refusal:
    """A rung of an attempt refused before any job was made: the quota preflight found a need
    above a limit (``preflight``), or the create was refused for quota."""

    attempt: int
    rung: int
    message: str
    preflight: bool = False


Observed = Seen | Refusal


# --- what it decides ----------------------------------------------------------------------

@dataclass(frozen=True)
class Create:
    """Create attempt ``attempt``'s job on rung ``rung``: ``job`` as sent, with ``labels`` beside the key."""

    attempt: int
    rung: int
    job: JobDict
    labels: Mapping[str, str]


@dataclass(frozen=True)
class Cancel:
    """Cancel ``name``: a duplicate of the key's job, or (``pending``) one that waited too long."""

    name: str
    pending: bool = False


Event = Literal["started", "recovering", "succeeded", "failed", "cancelled", "no-capacity"]


@dataclass(frozen=True)
class Notify:
    """Send ``event`` about attempt ``attempt`` (its id: key, attempt, event)."""

    event: Event
    attempt: int
    rung: int
    job: str | None
    state: str | None
    text: str


@dataclass(frozen=True)
class Say:
    """One line of the log, said once per observer (``key`` tells it from the others)."""

    key: tuple[object, ...]
    text: str


@dataclass(frozen=True)
class WaitFor:
    """Follow ``name`` until it changes how the life goes: it ends, it runs (when the watch
    follows until RUNNING), or ``until`` passes while it still waits for machines. ``quiet``:
    no progress, no log lines (a job being cancelled)."""

    name: str
    until: datetime | None = None
    quiet: bool = False


class Ending(StrEnum):
    """How a life (or this observer's part of it) ends."""

    done = "done"                # exit 0: succeeded, or left alive as asked
    failed = "failed"            # exit 3: the job failed, was cancelled, or lost its machines for good
    no_capacity = "no-capacity"  # exit 5: every rung ran out, or recoveries spent on capacity
    refused = "refused"          # the single rung was refused before any job: its own error, hinted


@dataclass(frozen=True)
class Finish:
    """The life ends (for this observer): ``ending``, the job it ends on, why (the error's
    words), the event to send and its words (``note``), the refusal a single rung ended on."""

    ending: Ending
    view: JobView | None
    message: str = ""
    event: Event | None = None
    note: str = ""
    refusal: Refusal | None = None


Action = Create | Cancel | Notify | Say | WaitFor | Finish


@dataclass(frozen=True)
class Tried:
    """One rung of one attempt, and what became of it (``attempts[]`` of submit's JSON)."""

    attempt: int
    rung: int
    region: str
    view: JobView | None
    outcome: Outcome

    def to_json(self) -> TriedJson:
        """``{"attempt", "rung", "region", "name", "state", "outcome"}``."""
        return {"attempt": self.attempt, "rung": self.rung, "region": self.region,
                "name": self.view.name if self.view else None,
                "state": self.view.state.value if self.view else None, "outcome": self.outcome.value}


@dataclass(frozen=True)
class Decision:
    """The next steps, and the life so far: what each rung of each attempt came to."""

    actions: tuple[Action, ...]
    tried: tuple[Tried, ...]
    #: The first attempt on STANDARD VMs (``spot_to_standard_after`` reached), if any.
    standard_from: int | None = None

    @property
    def recoveries(self) -> int:
        """The highest attempt tried (each recovery one more)."""
        return max((t.attempt for t in self.tried), default=0)


def decide(plan: Plan, jobs: Sequence[Observed], now: datetime, watch: Watch = Watch()) -> Decision:
    """The next steps of ``plan``'s life, given every job of its key as observed (and the
    rungs refused before any job) at ``now``, for an observer that asks ``watch``."""
    return _Walk(plan, jobs, now, watch).run()


# --- judging one job ----------------------------------------------------------------------

def capacity_outcome(view: JobView) -> Outcome | None:
    """``quota`` or ``stockout`` for a job that ended FAILED because it could not get its
    machines (``error.code`` 8, or a message saying so), else None."""
    if view.state is not JobState.FAILED:
        return None
    if QUOTA_TEXT.search(view.error_message):
        return Outcome.quota
    if (view.error or {}).get("code") == RESOURCE_EXHAUSTED or CAPACITY_TEXT.search(view.error_message):
        return Outcome.stockout
    return None


def lost_outcome(view: JobView, exit_codes: Collection[int] = ()) -> Outcome | None:
    """How a job that had started (``start_time`` set) and ended FAILED lost its machines:
    ``preempted`` for a capacity end (``capacity_outcome``: Spot preemption, stockout),
    ``internal`` for ``error.code`` 13, ``exit-code`` for Vertex's "The replica
    workerpoolK-I exited with a non-zero status of N" with N in ``exit_codes``; else None
    (a failure of the code, a cancel, an end before start, or a success)."""
    if view.state is not JobState.FAILED or not view.start_time:
        return None
    if capacity_outcome(view) is not None:
        return Outcome.preempted
    if (view.error or {}).get("code") == INTERNAL:
        return Outcome.internal
    found = EXIT_TEXT.search(view.error_message)
    if found is not None and int(found.group(1)) in exit_codes:
        return Outcome.exit_code
    return None


def lost_hint(view: JobView) -> str | None:
    """What ``vxtrain wait`` adds when the job it followed lost its machines after it started:
    the ``recovery:`` block, and the line that starts the next attempt from the checkpoints."""
    if lost_outcome(view) is None:
        return None
    key = view.idempotency_key or "KEY"
    return (f"{view.name} lost its machines after it started (preempted, stocked out, or an internal error): "
            "with `recovery: {max_recoveries: N}` in its spec, `vxtrain submit SPEC "
            f"--idempotency-key {key} --wait` (the options it was submitted with) starts the next attempt, "
            "a new job resuming from its checkpoints in base_output_dir")


def attempt_job(job: JobDict, attempt: int, *, standard: bool = False) -> JobDict:
    """``job`` (REST JSON) as attempt ``attempt`` sends it: ``VXTRAIN_ATTEMPT`` in every pool's
    env and, with ``standard``, ``scheduling.strategy: STANDARD``."""
    out = with_pool_env(job, [{"name": ATTEMPT_ENV, "value": str(attempt)}], (ATTEMPT_ENV,))
    spec = out.get(kind_of_job(out).spec_key)
    if standard and isinstance(spec, dict):
        spec["scheduling"] = {**(spec.get("scheduling") or {}), "strategy": "STANDARD"}
    return out


def _strategy(job: JobDict) -> str:
    return str((job_spec_of(job).get("scheduling") or {}).get("strategy") or "STANDARD").upper()


@dataclass(frozen=True)
class _Lost:
    """An attempt's job that lost its machines: its rung, how, and the job."""

    rung: int
    outcome: Outcome
    seen: Seen


class _Walk:
    """One decision: the attempts walked from 0, each climbing its rungs, until a step is due."""

    def __init__(self, plan: Plan, jobs: Sequence[Observed], now: datetime, watch: Watch) -> None:
        self.plan, self.now, self.watch = plan, now, watch
        self.seen = [j for j in jobs if isinstance(j, Seen)]
        self.refusals = {(r.attempt, r.rung): r for r in jobs if isinstance(r, Refusal)}
        self.groups: dict[tuple[int, int], list[Seen]] = {}
        for job in sorted(self.seen, key=lambda j: (time_key(j.view.create_time or ""), j.view.name)):
            self.groups.setdefault((job.attempt, job.rung), []).append(job)
        self.actions: list[Action] = []
        self.tried: list[Tried] = []
        self.standard_from: int | None = None
        self.current: str | None = None  # the job the watch stays with, when one is

    @property
    def size(self) -> int:
        return len(self.plan.rungs)

    def run(self) -> Decision:
        attempt, first = 0, 0
        while (lost := self._attempt(attempt, first)) is not None:
            after = self._recover(attempt, lost)
            if after is None:
                break
            attempt, first = attempt + 1, after
        self._duplicates()
        return Decision(tuple(self.actions), tuple(self.tried), self.standard_from)

    # --- one attempt's climb ---------------------------------------------------------------

    def _attempt(self, attempt: int, first: int) -> _Lost | None:
        """Climb attempt ``attempt`` from rung ``first``: None when a step is due (or the life
        ends), the lost job when the attempt lost its machines."""
        highest = max((r for a, r in self.groups if a == attempt), default=-1)
        for rung in range(first, self.size):
            group = self.groups.get((attempt, rung), [])
            if not group:
                refusal = self.refusals.get((attempt, rung))
                if refusal is None and rung > highest:
                    self._create(attempt, rung)
                    return None
                self._record(attempt, rung, None, Outcome.quota)
                if refusal is not None:
                    self._moved(attempt, rung, refusal.message)
                continue
            job = group[0]
            self._started(job)
            self._unlabelled(job)
            if not job.view.state.terminal:
                self._alive(attempt, rung, job)
                return None
            if self._look_first(job):
                return None
            left = self._left(job, below=rung < highest)
            if left is None:
                return self._ended(attempt, rung, job)
            self._record(attempt, rung, job.view, left)
            self._left_said(attempt, rung, job, left, below=rung < highest)
        self._out_of_capacity()
        return None

    def _create(self, attempt: int, rung: int) -> None:
        """Create (attempt, rung) — once nothing of the key is alive, and never after the plan finished."""
        busy = [j for j in self.seen if not j.view.state.terminal]
        if busy:  # never two alive: a job off the walk's path (a duplicate, a late commit) is cancelled, and seen to end
            self.actions += [Cancel(j.view.name) for j in busy if j.view.state.alive and not j.cancelled_here]
            self.current = busy[0].view.name
            self.actions.append(WaitFor(busy[0].view.name, quiet=True))
            return
        if self.plan.finished is not None:
            ended = next((j.view for j in self.seen if j.view.name == self.plan.finished.job), None)
            self.actions.append(Finish(Ending.done, ended, "the plan has finished: nothing is created after its end"))
            return
        planned = self.plan.rungs[rung]
        if rung > 0 and self.tried:
            self._say(("trying", attempt, rung), f"trying fallback rung {rung} of {self.size - 1} in {planned.region}")
        self.actions.append(Create(attempt, rung, self.job_for(attempt, rung), self._labels(attempt)  | (
            {RUNG_LABEL: str(rung)} if self.size > 1 else {})))

    def _labels(self, attempt: int) -> dict[str, str]:
        return {ATTEMPT_LABEL: str(attempt)} if self.plan.recovery is not None else {}

    def job_for(self, attempt: int, rung: int) -> JobDict:
        """Rung ``rung``'s job as attempt ``attempt`` sends it (unchanged without ``recovery:``)."""
        job = self.plan.rungs[rung].job
        if self.plan.recovery is None:
            return job
        standard = self.standard_from is not None and attempt >= self.standard_from
        return attempt_job(job, attempt, standard=standard)

    def _alive(self, attempt: int, rung: int, job: Seen) -> None:
        """The attempt's job has not ended: follow it as far as the watch asks."""
        view, watch = job.view, self.watch
        self.current = view.name
        self._adopting(rung, job)
        if view.state is JobState.CANCELLING or job.cancelled_here:
            self.actions.append(WaitFor(view.name, quiet=True))
            return
        deadline = self._pending_deadline(view)
        if deadline is not None and self.now >= deadline:
            self._say(("cancel", view.name), f"{view.name} is still {view.state.value} after "
                                              f"{watch.max_pending:g} s (--max-pending): cancelling it")
            self.actions += [Cancel(view.name, pending=True), WaitFor(view.name, quiet=True)]
            return
        if watch.follow is Follow.none or (watch.follow is Follow.until_running and view.state is JobState.RUNNING):
            self._record(attempt, rung, view, Outcome.started)
            self.actions.append(Finish(Ending.done, view))
            return
        self.actions.append(WaitFor(view.name, deadline))

    def _look_first(self, job: Seen) -> bool:
        """A re-run that follows its one rung's job, found ended, polls it once (its state is
        shown as a followed job's) before judging it; a ladder's resume or a recovering watch
        judges it as found."""
        recovering = self.plan.recovery is not None and self.watch.follow is Follow.end
        if not job.found or job.followed or self.size > 1 or recovering or self.watch.follow is Follow.none:
            return False
        self.current = job.view.name
        self.actions.append(WaitFor(job.view.name))
        return True

    def _pending_deadline(self, view: JobView) -> datetime | None:
        """When a job still waiting for machines has waited ``max_pending`` (from its create time)."""
        if self.watch.max_pending is None or self.watch.follow is Follow.none or not view.state.waiting:
            return None
        created = _created(view)
        return None if created is None else datetime.fromtimestamp(created.timestamp() + self.watch.max_pending,
                                                                   tz=created.tzinfo)

    def _left(self, job: Seen, *, below: bool) -> Outcome | None:
        """Why the ladder left an ended job that never started (None: it did not leave it).
        Cancelled before it started is a watcher's doing (too long pending) when a higher rung
        has a job, this observer cancelled it, it waited ``max_pending``, or it ended before
        this observer looked; cancelled while this observer watched, it is a cancel by hand."""
        view = job.view
        if view.start_time or (self.watch.follow is Follow.none and self.size == 1 and job.found):
            return None
        if view.state is JobState.FAILED:
            return capacity_outcome(view)
        if view.state is not JobState.CANCELLED:
            return None
        waited = self._waited(view)
        if below or job.cancelled_here or not job.seen_alive or (
                self.watch.max_pending is not None and waited is not None and waited >= self.watch.max_pending):
            return Outcome.pending_timeout
        return None

    def _waited(self, view: JobView) -> float | None:
        created = _created(view)
        if created is None:
            return None
        end = parse_time(view.end_time) if view.end_time else self.now
        return (end - created).total_seconds()

    def _ended(self, attempt: int, rung: int, job: Seen) -> _Lost | None:
        """The attempt's job ended and the ladder does not leave it: the life ends here, or
        (lost machines, with recovery) the next attempt comes."""
        view, recovery = job.view, self.plan.recovery
        self.current = view.name
        self._adopting(rung, job)
        lost = lost_outcome(view, recovery.on_exit_codes if recovery else ())
        if view.state is JobState.SUCCEEDED or not view.state.failed:
            self._record(attempt, rung, view, Outcome.succeeded)
            event: Event | None = "succeeded" if self.watch.follow is Follow.end else None
            self.actions.append(Finish(Ending.done, view, event=event))
            return None
        if lost is not None and recovery is not None and self.watch.follow is Follow.end:
            self._record(attempt, rung, view, lost)
            return _Lost(rung, lost, job)
        self._record(attempt, rung, view, lost or _as_is(view, by_hand=job.seen_alive))
        if self.watch.follow is Follow.none:
            self.actions.append(Finish(Ending.done, view))
            return None
        why = view.error_message or "no error message"
        message = f"{view.name} ended {view.state.value}: {why}" + (f"; {RECOVERY_HINT}" if lost else "")
        event = "cancelled" if view.state is JobState.CANCELLED else "failed"
        self.actions.append(Finish(Ending.failed, view, message, event, f"{view.name} ended {view.state.value}"))
        return None

    # --- between attempts -------------------------------------------------------------------

    def _recover(self, attempt: int, lost: _Lost) -> int | None:
        """The rung attempt ``attempt + 1`` starts from; None when the life ends (recoveries
        spent, or ``strategy: next`` has no rung left)."""
        policy = self.plan.recovery
        assert policy is not None  # only a recovering walk returns a lost job
        name = lost.seen.view.name
        if attempt >= policy.max_recoveries:
            self._give_up(lost, f"{name} {WHY_LOST[lost.outcome]}, and recovery.max_recoveries "
                                f"({policy.max_recoveries}) are spent")
            return None
        first = STRATEGIES[policy.strategy](lost.rung)
        if first >= self.size:
            self._give_up(lost, f"{name} {WHY_LOST[lost.outcome]} on the last rung, and recovery.strategy: next "
                                "has no rung after it")
            return None
        self._maybe_standard(attempt)
        planned = self.plan.rungs[first]
        made = any(j.attempt == attempt + 1 and not j.created_here for j in self.seen)
        if made and lost.seen.found and not lost.seen.seen_alive:
            # a resumed watch: the watcher that created the next attempt said (and sent) it first
            self._say(("resumed", attempt), f"{name} (attempt {attempt}, same key) {WHY_LOST[lost.outcome]} before "
                                            f"this watch: going on with attempt {attempt + 1}")
            return first
        text = (f"{name} {WHY_LOST[lost.outcome]}: recovery {attempt + 1} of {policy.max_recoveries}, a new job "
                f"on rung {first} ({planned.region}) resuming from base_output_dir")
        self._say(("recovering", attempt), text)
        self.actions.append(Notify("recovering", attempt, lost.rung, name, lost.seen.view.state.value, text))
        return first

    def _maybe_standard(self, attempt: int) -> None:
        """``spot_to_standard_after``: once that many Spot preemptions are seen, STANDARD from the next attempt."""
        policy = self.plan.recovery
        after = policy.spot_to_standard_after if policy else None
        if after is None or self.standard_from is not None:
            return
        spot = sum(1 for t in self.tried if t.outcome is Outcome.preempted
                   and _strategy(self.job_for(t.attempt, t.rung)) == "SPOT")
        if spot < after:
            return
        self.standard_from = attempt + 1
        self._say(("standard",), f"{after} preemption(s) of Spot VMs (recovery.spot_to_standard_after): "
                                 "the next attempts use STANDARD (on-demand) VMs")

    def _give_up(self, lost: _Lost, message: str) -> None:
        """The recoveries are spent: no capacity (exit 5) after a capacity loss, else failed (3)."""
        view = lost.seen.view
        if lost.outcome is Outcome.preempted:
            self.actions.append(Finish(Ending.no_capacity, view, f"{message}: submit again later, raise "
                                       "max_recoveries, or add fallback: rungs with other regions or machines",
                                       "no-capacity", message))
            return
        self.actions.append(Finish(Ending.failed, view, message, "failed", message))

    def _out_of_capacity(self) -> None:
        """Every rung of the attempt ran out: no capacity (a ladder), else the one rung's own end."""
        last = self.tried[-1]
        if self.size > 1:
            rungs = "; ".join(f"rung {t.rung} {t.region}: {t.outcome.value}" for t in self.tried)
            entries = "entry" if self.size == 2 else "entries"
            message = (f"no capacity on any of the {self.size} rungs (the spec and its {self.size - 1} fallback "
                       f"{entries}): {rungs}; try other regions or machines in `fallback:`, request quota, or "
                       "submit later")
            self.actions.append(Finish(Ending.no_capacity, None, message, "no-capacity", f"no capacity: {message}"))
            return
        if last.view is None:
            refusal = self.refusals.get((last.attempt, last.rung))
            event: Event | None = "no-capacity" if refusal is not None and refusal.preflight else None
            self.actions.append(Finish(Ending.refused, None, refusal.message if refusal else "", event,
                                       refusal=refusal))
            return
        view = last.view
        job = next(j for j in self.seen if j.view.name == view.name)
        if last.outcome is Outcome.pending_timeout:
            what = "waited too long for machines" if job.cancelled_here else "was cancelled before it ran"
            message = f"{view.name} {what}"
        else:
            message = f"{view.name} ended {view.state.value}: {view.error_message}"
        self.actions.append(Finish(Ending.failed, view, f"{message}; {FALLBACK_HINT}",
                                   "cancelled" if view.state is JobState.CANCELLED else "failed",
                                   f"{view.name} ended {view.state.value}"))

    # --- the record, the words, the events ---------------------------------------------------

    def _record(self, attempt: int, rung: int, view: JobView | None, outcome: Outcome) -> None:
        self.tried.append(Tried(attempt, rung, self.plan.rungs[rung].region, view, outcome))

    def _say(self, key: tuple[object, ...], text: str) -> None:
        self.actions.append(Say(key, text))

    def _moved(self, attempt: int, rung: int, why: str) -> None:
        """Why the ladder leaves ``rung`` (a spec without ``fallback:`` says it in its error)."""
        if self.size > 1:
            after = "moving on" if rung < self.size - 1 else "it was the last rung"
            self._say(("moved", attempt, rung), f"rung {rung} ({self.plan.rungs[rung].region}): {why}; {after}")

    def _left_said(self, attempt: int, rung: int, job: Seen, left: Outcome, *, below: bool) -> None:
        """What leaving an ended job says: found ended on a re-run, that the ladder goes on;
        seen to end, why it moved on."""
        view = job.view
        if job.found and not job.seen_alive:
            if not below:
                self._say(("resume", attempt, rung), f"{view.name} (rung {rung}, same key) ran out of capacity: "
                                                     f"going on from rung {rung + 1}")
            return
        if left is Outcome.pending_timeout and job.cancelled_here:
            after = "" if self.watch.max_pending is None else f" after {self.watch.max_pending:g} s"
            why = f"{view.name} was still waiting for machines{after}; cancelled it"
        elif left is Outcome.pending_timeout:
            why = (f"{view.name} was cancelled before it ran (left for capacity: a submit with the same key "
                   "waited too long for its machines)")
        else:
            why = f"{view.name} ended {view.state.value} for capacity ({view.error_message})"
        self._moved(attempt, rung, why)

    def _adopting(self, rung: int, job: Seen) -> None:
        if job.found and self.size > 1:
            self._say(("adopt", job.view.name), f"adopting {job.view.name} (rung {rung}, same key): "
                                                "nothing new is created")

    def _unlabelled(self, job: Seen) -> None:
        """A job of the key without an attempt label (submitted before the spec had ``recovery:``,
        as the exit-3 hint invites) is attempt 0: adopted, never a second job beside it."""
        if self.plan.recovery is not None and ATTEMPT_LABEL not in job.view.labels:
            self._say(("unlabelled", job.view.name), f"{job.view.name} carries the key without a {ATTEMPT_LABEL} "
                                                     "label (submitted before the spec had recovery:): it is attempt 0")

    def _started(self, job: Seen) -> None:
        """``started``, once, for a job this observer made or saw waiting, when it has started
        (a re-run that adopts a running job sends nothing: the watcher before it did)."""
        view = job.view
        began = view.state is JobState.RUNNING or bool(view.start_time)
        if began and (job.created_here or job.seen_waiting):
            self.actions.append(Notify("started", job.attempt, job.rung, view.name, view.state.value,
                                       f"{view.name} is running (attempt {job.attempt})"))

    def _duplicates(self) -> None:
        """Every live job of the key but the one the watch stays with is cancelled (a racer's
        duplicate, a create that committed late): never two alive."""
        for job in self.seen:
            if job.view.state.alive and job.view.name != self.current and not job.cancelled_here:
                self.actions.insert(0, Cancel(job.view.name))


def _as_is(view: JobView, *, by_hand: bool) -> Outcome:
    """The outcome of an ended job the watch does not leave: capacity, a cancel after it
    started or seen happen (by hand), one before it started found so (a watcher's), a failure."""
    capacity = capacity_outcome(view)
    if capacity is not None:
        return capacity
    if view.state is JobState.CANCELLED:
        return Outcome.cancelled if view.start_time or by_hand else Outcome.pending_timeout
    return Outcome.failed


def _created(view: JobView) -> datetime | None:
    return parse_time(view.create_time) if view.create_time else None
