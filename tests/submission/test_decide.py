"""decide(plan, jobs, now): the whole life of a key as one pure function, tested as one.

Two kinds of property, over histories hypothesis draws:

* any observation: whatever jobs of the key exist (any attempts, rungs, states, times, and
  whatever this observer did to them), the decision keeps the invariants: never a create
  while a job of the key is alive, attempts numbered without gaps, never more than
  ``max_recoveries``, never a create after the plan finished, never the followed job cancelled;
* a world of racing observers: several watchers (and reconcile passes) observe, decide and
  act in any interleaving with the jobs' own changes (start, preemption, stockout, success,
  a failure of the code, a cancel by hand) and the create faults (a quota refusal, a
  duplicate from a lost answer); at every moment no two attempts are alive, attempts have
  no gaps, ``max_recoveries`` holds, and once the key is left alone every observer ends.

No clock, no network: the world is a list of dicts, time a counter.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vxtrain.model import ATTEMPT_LABEL, RUNG_LABEL
from vxtrain.submission.decide import (
    Cancel, Create, Decision, Ending, Finish, Follow, Observed, Refusal, Seen, WaitFor, Watch, decide,
)
from vxtrain.submission.plan import Finished, Plan, PlannedRung, RecoveryPolicy
from vxtrain.submission.views import job_view
from vxtrain.vocab.kinds import JobState
from vxtrain.vocab.timestamps import format_time

EPOCH = datetime(2026, 11, 29, tzinfo=timezone.utc)
REGIONS = ("us-central1", "us-east1", "europe-west4")
#: How a job ends, as the emulator and Vertex AI end them.
ERRORS = {"stockout": {"code": 8, "message": "Resources are insufficient in region: R."},
          "internal": {"code": 13, "message": "Internal error occurred"},
          "exit33": {"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 33."},
          "code": {"code": 3, "message": "The replica workerpool0-0 exited with a non-zero status of 1."},
          "cancel": {"code": 1, "message": "CustomJob was cancelled."}}


def at(seconds: float) -> str:
    return format_time(EPOCH + timedelta(seconds=seconds))


def plan_of(rungs: int, recovery: RecoveryPolicy | None, finished: bool = False) -> Plan:
    job = {"displayName": "p", "jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"},
                                                                "replicaCount": "1"}]}}
    planned = tuple(PlannedRung(n, "p", REGIONS[n % 3], job) for n in range(rungs))
    plan = Plan("k", planned, recovery)
    return plan.ended(Finished(at(0), "succeeded", None)) if finished else plan


recoveries = st.one_of(st.none(), st.builds(RecoveryPolicy, st.integers(1, 3), st.just((33,)),
                                            st.sampled_from(["same", "next"]), st.none() | st.integers(1, 2)))
watches = st.builds(Watch, st.sampled_from(list(Follow)), st.none() | st.sampled_from([1.0, 5.0]), st.booleans())


@st.composite
def histories(draw: st.DrawFn) -> tuple[Plan, list[Observed], datetime, Watch]:
    """A plan, any jobs of its key (and refusals), a time, a watch."""
    plan = plan_of(draw(st.integers(1, 3)), draw(recoveries), draw(st.booleans()))
    jobs: list[Observed] = []
    for n in range(draw(st.integers(0, 6))):
        attempt, rung = draw(st.integers(0, 4)), draw(st.integers(0, len(plan.rungs) - 1))
        state = draw(st.sampled_from([s for s in JobState if s is not JobState.UNSPECIFIED]))
        started = draw(st.booleans())
        created = draw(st.integers(0, 100))
        raw: dict[str, Any] = {"name": f"projects/p/locations/{REGIONS[rung % 3]}/customJobs/{n}",
                               "state": state.value, "createTime": at(created),
                               "labels": {RUNG_LABEL: str(rung), ATTEMPT_LABEL: str(attempt)}}
        if started:
            raw["startTime"] = at(created + 1)
        if state.terminal:
            raw["endTime"] = at(created + 2)
            raw["error"] = ERRORS[draw(st.sampled_from(list(ERRORS)))]
        jobs.append(Seen(job_view(raw), *draw(st.tuples(*[st.booleans()] * 6))))
    for _ in range(draw(st.integers(0, 2))):
        jobs.append(Refusal(draw(st.integers(0, 4)), draw(st.integers(0, len(plan.rungs) - 1)), "quota"))
    return plan, jobs, EPOCH + timedelta(seconds=draw(st.integers(0, 200))), draw(watches)


@st.composite
def lives(draw: st.DrawFn) -> tuple[Plan, list[Observed], datetime, Watch]:
    """A plausible life: attempt after attempt, each climbing rungs left for capacity and
    ending on a job that lost its machines after it started; the last attempt's job in any state."""
    recovery = draw(recoveries.filter(lambda r: r is not None))
    plan = plan_of(draw(st.integers(1, 3)), recovery, draw(st.sampled_from([False] * 4 + [True])))
    jobs: list[Observed] = []
    clock = 0
    for attempt in range(draw(st.integers(1, recovery.max_recoveries + 2))):
        for rung in range(draw(st.integers(0, len(plan.rungs) - 1)) + 1):
            clock += 10
            last = rung == len(plan.rungs) - 1 or draw(st.booleans())
            raw: dict[str, Any] = {"name": f"projects/p/locations/r/customJobs/{len(jobs)}", "createTime": at(clock),
                                   "labels": {RUNG_LABEL: str(rung), ATTEMPT_LABEL: str(attempt)}}
            if not last:
                raw.update(state="JOB_STATE_FAILED", endTime=at(clock + 1), error=ERRORS["stockout"])
            else:
                state = draw(st.sampled_from(["JOB_STATE_FAILED"] * 6 + ["JOB_STATE_RUNNING", "JOB_STATE_SUCCEEDED",
                                                                          "JOB_STATE_PENDING", "JOB_STATE_CANCELLED"]))
                raw.update(state=state, startTime=at(clock + 1))
                if JobState(state).terminal:
                    raw.update(endTime=at(clock + 2), error=ERRORS[draw(st.sampled_from(
                        ["stockout", "stockout", "internal", "exit33", "code"]))])
            jobs.append(Seen(job_view(raw), *draw(st.tuples(*[st.booleans()] * 6))))
            if last:
                break
    watch = draw(st.builds(Watch, st.sampled_from([Follow.end] * 4 + [Follow.none, Follow.until_running]),
                           st.none() | st.just(5.0), st.booleans()))
    return plan, jobs, EPOCH + timedelta(seconds=clock + 50), watch


def creates(decision: Decision) -> list[Create]:
    return [a for a in decision.actions if isinstance(a, Create)]


@settings(max_examples=500, deadline=None)
@given(histories() | lives())
def test_any_observation_keeps_the_invariants(history: tuple[Plan, list[Observed], datetime, Watch]) -> None:
    plan, jobs, now, watch = history
    decision = decide(plan, jobs, now, watch)
    seen = [j for j in jobs if isinstance(j, Seen)]
    steps = [a for a in decision.actions if isinstance(a, Create | WaitFor | Finish)]
    assert len(steps) <= 1, decision.actions  # one step at a time
    for create in creates(decision):
        assert all(j.view.state.terminal for j in seen), "a create beside a live job of the key"
        assert plan.finished is None, "a create after the plan finished"
        assert create.attempt <= (plan.recovery.max_recoveries if plan.recovery else 0), "max_recoveries"
        attempts = {j.attempt for j in seen}
        assert create.attempt == 0 or create.attempt - 1 in attempts, "a gap in the attempts"
    followed = {a.name for a in decision.actions if isinstance(a, WaitFor) and not a.quiet}
    ended_on = {a.view.name for a in decision.actions if isinstance(a, Finish) and a.view is not None}
    for cancel in (a for a in decision.actions if isinstance(a, Cancel)):
        if not cancel.pending:
            assert cancel.name not in followed | ended_on, "the followed job cancelled as a duplicate"


# --- a world of racing observers ------------------------------------------------------------------

@dataclass
class Observer:
    """One watcher's memory: what it created, saw, cancelled (as vxtrain.submission.carry keeps it)."""

    watch: Watch
    created: set[str] = field(default_factory=set)
    alive: set[str] = field(default_factory=set)
    waiting: set[str] = field(default_factory=set)
    left: set[str] = field(default_factory=set)
    refused: list[Refusal] = field(default_factory=list)
    looked: bool = False
    found: set[str] = field(default_factory=set)
    done: bool = False
    pending: Decision | None = None  # decided, not yet acted on (the race window)


@dataclass
class World:
    plan: Plan
    jobs: list[dict[str, Any]] = field(default_factory=list)
    clock: float = 0.0
    faults: list[str] = field(default_factory=list)
    finished: bool = False

    def observe(self, who: Observer) -> list[Observed]:
        if not who.looked:
            who.looked, who.found = True, {j["name"] for j in self.jobs}
        out: list[Observed] = []
        for raw in self.jobs:
            view = job_view(raw)
            if not view.state.terminal:
                who.alive.add(view.name)
                if not view.start_time:
                    who.waiting.add(view.name)
            out.append(Seen(view, view.name in who.found, view.name in who.created, view.name in who.alive,
                            view.name in who.waiting, view.name in who.left, True))
        return [*out, *who.refused]

    def now(self) -> datetime:
        return EPOCH + timedelta(seconds=self.clock)

    def create(self, who: Observer, create: Create) -> None:
        fault = self.faults.pop(0) if self.faults else None
        if fault == "quota":
            who.refused.append(Refusal(create.attempt, create.rung, "quota"))
            return
        for _ in range(2 if fault == "duplicate" else 1):  # a lost answer, created twice
            name = f"projects/p/locations/r/customJobs/{len(self.jobs)}"
            self.jobs.append({"name": name, "state": "JOB_STATE_QUEUED", "createTime": at(self.clock),
                              "labels": dict(create.labels)})
            who.created.add(name)
            self.clock += 0.001

    def cancel(self, who: Observer, cancel: Cancel) -> None:
        for raw in self.jobs:
            if raw["name"] == cancel.name and not JobState(raw["state"]).terminal:
                raw.update(state="JOB_STATE_CANCELLED", endTime=at(self.clock), error=ERRORS["cancel"])
                if cancel.pending:
                    who.left.add(cancel.name)

    def act(self, who: Observer, decision: Decision) -> None:
        for action in decision.actions:
            if isinstance(action, Create):
                self.create(who, action)
            elif isinstance(action, Cancel):
                self.cancel(who, action)
            elif isinstance(action, Finish):
                who.done = True
                if who.watch.follow is Follow.end and self.plan.finished is None:
                    # the watcher writes the end into the stored plan: every other watcher reads it
                    self.plan = self.plan.ended(Finished(at(self.clock), action.ending.value, None))
                    self.finished = True

    def advance(self, index: int, how: str) -> None:
        """Job ``index`` moves on: it starts, waits, ends (how the world ends jobs)."""
        live = [j for j in self.jobs if not JobState(j["state"]).terminal]
        if not live:
            return
        raw = live[index % len(live)]
        state = JobState(raw["state"])
        if how == "start" and state.waiting:
            raw.update(state="JOB_STATE_RUNNING", startTime=at(self.clock))
        elif how == "succeed" and state is JobState.RUNNING:
            raw.update(state="JOB_STATE_SUCCEEDED", endTime=at(self.clock))
        elif how in ("stockout", "internal", "exit33", "code"):
            raw.update(state="JOB_STATE_FAILED", endTime=at(self.clock), error=ERRORS[how])
        elif how == "cancel":
            raw.update(state="JOB_STATE_CANCELLED", endTime=at(self.clock), error=ERRORS["cancel"])

    def check(self) -> None:
        """The world-level invariants, at every moment."""
        attempts = {int(j["labels"].get(ATTEMPT_LABEL, 0)) for j in self.jobs}
        assert attempts == set(range(len(attempts))), f"a gap in the attempts: {sorted(attempts)}"
        limit = self.plan.recovery.max_recoveries if self.plan.recovery else 0
        assert max(attempts, default=0) <= limit, "more than max_recoveries"
        alive = {int(j["labels"].get(ATTEMPT_LABEL, 0)) for j in self.jobs if not JobState(j["state"]).terminal}
        assert len(alive) <= 1, f"two attempts alive: {sorted(alive)}"


steps = st.lists(st.one_of(
    st.tuples(st.just("decide"), st.integers(0, 3)),   # observer N observes and decides
    st.tuples(st.just("act"), st.integers(0, 3)),      # observer N acts on what it decided
    st.tuples(st.just("turn"), st.integers(0, 3)),     # observer N observes, decides and acts at once
    st.tuples(st.just("job"), st.integers(0, 5), st.sampled_from(
        ["start", "start", "start", "succeed", "stockout", "stockout", "internal", "exit33", "code", "cancel"])),
    st.tuples(st.just("tick"), st.integers(1, 10)),
), max_size=100)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 3), st.builds(RecoveryPolicy, st.integers(1, 2), st.just((33,)), st.sampled_from(["same", "next"])),
       steps,
       st.lists(st.sampled_from(["quota", "duplicate", "none"]), max_size=6))
def test_racing_observers_keep_one_attempt_alive(rungs: int, recovery: RecoveryPolicy | None,
                                                 schedule: list[tuple[Any, ...]], faults: list[str]) -> None:
    world = World(plan_of(rungs, recovery), faults=[f for f in faults if f != "none"])
    observers = [Observer(Watch(Follow.end, 5.0, explicit=True)) for _ in range(3)] + [Observer(Watch(Follow.end))]
    for step in schedule:
        kind = step[0]
        if kind == "decide":
            who = observers[step[1]]
            if not who.done:
                who.pending = decide(world.plan, world.observe(who), world.now(), who.watch)
                _check_decision(world, who.pending)
        elif kind == "act":
            who = observers[step[1]]
            if who.pending is not None and not who.done:
                # A create acted on late was decided when the key had nothing alive; the lease
                # (or the label protocol's election) makes it the attempt's one job: a racer's
                # create of an attempt another already made is its duplicate, cancelled.
                decision, who.pending = who.pending, None
                world.act(who, _as_leased(world, decision))
        elif kind == "turn":
            who = observers[step[1]]
            if not who.done:
                decision = decide(world.plan, world.observe(who), world.now(), who.watch)
                _check_decision(world, decision)
                world.act(who, _as_leased(world, decision))
        elif kind == "job":
            world.advance(step[1], step[2])
        else:
            world.clock += step[1]
        world.check()
    _converges(world, observers)


def _as_leased(world: World, decision: Decision) -> Decision:
    """What the lease per attempt does to a create decided on an older look: the attempt's job
    exists already (another observer made it), so none is made; the observer adopts it."""
    made = {(j["labels"].get(ATTEMPT_LABEL), j["labels"].get(RUNG_LABEL)) for j in world.jobs}
    kept = tuple(a for a in decision.actions if not isinstance(a, Create)
                 or (a.labels.get(ATTEMPT_LABEL), a.labels.get(RUNG_LABEL)) not in made)
    return replace(decision, actions=kept)


def _check_decision(world: World, decision: Decision) -> None:
    live = [j for j in world.jobs if not JobState(j["state"]).terminal]
    if creates(decision):
        assert not live, "a create decided beside a live job"
        assert not world.finished, "a create after the plan finished"


def _converges(world: World, observers: list[Observer]) -> None:
    """Left alone (every live job runs and succeeds), every observer ends, one job at a time."""
    for _ in range(60):
        for who in observers:
            if who.done:
                continue
            decision = decide(world.plan, world.observe(who), world.now(), who.watch)
            _check_decision(world, decision)
            world.act(who, _as_leased(world, decision))
            world.check()
        for how in ("start", "succeed"):
            for index in range(len(world.jobs)):
                world.advance(index, how)
        world.clock += 10
        if all(who.done for who in observers):
            return
    raise AssertionError("the observers never finished")
