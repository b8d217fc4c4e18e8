"""Recovery: a job that lost its machines after it started gets a new attempt, a new
CustomJob, while submit follows it (README "Recovery").

Vertex AI restarts a preempted Spot job a few times, then ends it FAILED with a
STOCKOUT error ("When Spot VMs are preempted, the job fails with a STOCKOUT error and
Compute Engine tries to restart the job up to six times",
https://cloud.google.com/vertex-ai/docs/training/use-spot-vms); an internal error ends
a job after two restarts
(https://cloud.google.com/vertex-ai/docs/training/understanding-training-service).
Either way the work lives on only in the job's checkpoints. With ``recovery:`` in the
spec, such an end (vxtrain.submission.ladder.lost_outcome: ``startTime`` set, and a
capacity end, ``error.code`` 13, or a listed exit code) starts the next attempt:

* attempt N is the spec's job (its rung's), with the label ``vxtrain_attempt=N`` beside
  the key and ``VXTRAIN_ATTEMPT=N`` in every pool's env; the same
  ``baseOutputDirectory``, so ``AIP_CHECKPOINT_DIR`` is the same path and the trainer
  resumes;
* each attempt is one climb of the fallback ladder (vxtrain.submission.ladder) with the
  attempt's label: created exactly once by the ladder's own machinery (a re-run adopts,
  racers elect one), and only once the attempt before is seen ended (never two alive);
* ``strategy: same`` starts at the rung that ran, ``next`` at the one after it;
  ``spot_to_standard_after: K``: after K preemptions of Spot VMs, STANDARD from then on;
* a re-run with the same key walks the attempts from 0: each one that exists is adopted
  (an ended one judged at once, a live one followed), and the first that does not is
  created, so a watcher killed at any point resumes without an extra job; ``recovering``
  is sent before each create, so a resumed watch sends it for the attempt it creates (at
  least once: twice if the watcher before was killed between sending it and the create);
* ``max_recoveries`` spent: exit 5 (NoCapacity) when the last loss was capacity, 3 else.

Every job created is priced: its run time × the price per hour of its machines
(vxtrain.planning.cost.job_per_hour, the plan's arithmetic over the job as sent).
"""
from __future__ import annotations

import copy
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NoReturn

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.model import ATTEMPT_ENV, ATTEMPT_LABEL, Recovery
from vxtrain.planning.cost import job_per_hour, usd
from vxtrain.submission.ladder import Attempt, Follow, Ladder, Outcome, Rung, climb, job_with, job_without
from vxtrain.submission.notify import Event, Notifier
from vxtrain.submission.views import attempt_cost, cost_json
from vxtrain.vocab.kinds import job_spec_of, kind_of_job

__all__ = ["LOST", "Policy", "attempt_job", "follow"]

#: The outcomes of a job that lost its machines after it started: each starts the next attempt.
LOST = frozenset({Outcome.preempted, Outcome.internal, Outcome.exit_code})
#: Words for each lost outcome in messages.
_WHY = {Outcome.preempted: "lost its machines (preempted or stocked out)",
        Outcome.internal: "ended with an internal error (code 13)",
        Outcome.exit_code: "had a replica exit with a code listed in recovery.on_exit_codes"}


@dataclass(frozen=True)
class Policy:
    """The spec's ``recovery:`` block, as the loop reads it."""

    max_recoveries: int
    exit_codes: frozenset[int] = frozenset()
    strategy: str = "same"
    spot_to_standard_after: int | None = None

    @classmethod
    def of(cls, recovery: Recovery) -> Policy:
        """The policy of a validated ``recovery:`` block."""
        return cls(recovery.max_recoveries or 1, frozenset(recovery.on_exit_codes), recovery.strategy,
                   recovery.spot_to_standard_after)


def follow(rungs: Sequence[Rung], ladder: Ladder, policy: Policy | None = None,
           notifier: Notifier | None = None) -> dict[str, Any]:
    """Climb ``rungs`` as vxtrain.submission.ladder.climb does and return the last job's
    view; with ``policy``, start a new attempt each time a job loses its machines after it
    started, until one ends otherwise or ``max_recoveries`` is spent. A followed submit's
    view has ``recoveries`` and ``cost``; ``notifier`` gets its events. Raises as climb
    does, with ``recoveries`` and ``cost`` in the JobFailedError's job or NoCapacity's details."""
    return _Watch(rungs, ladder, policy, notifier).run()


def attempt_job(job: JobDict, attempt: int, *, standard: bool = False) -> JobDict:
    """``job`` (REST JSON) as attempt ``attempt`` sends it: ``VXTRAIN_ATTEMPT`` in every pool's
    env and, with ``standard``, ``scheduling.strategy: STANDARD``."""
    out = copy.deepcopy(job)
    spec = out.get(kind_of_job(out).spec_key)
    if not isinstance(spec, dict):
        return out
    for pool in spec.get("workerPoolSpecs") or []:
        code = pool.get("containerSpec") or pool.get("pythonPackageSpec") if isinstance(pool, dict) else None
        if isinstance(code, dict):
            env = [e for e in code.get("env") or [] if e.get("name") != ATTEMPT_ENV]
            code["env"] = [*env, {"name": ATTEMPT_ENV, "value": str(attempt)}]
    if standard:
        spec["scheduling"] = {**(spec.get("scheduling") or {}), "strategy": "STANDARD"}
    return out


def _strategy(job: JobDict) -> str:
    return str((job_spec_of(job).get("scheduling") or {}).get("strategy") or "STANDARD").upper()


@dataclass
class _Watch:
    """One submit's climbs, attempt after attempt."""

    rungs: Sequence[Rung]
    ladder: Ladder
    policy: Policy | None
    notifier: Notifier | None = None
    #: The first attempt that runs on STANDARD VMs (``spot_to_standard_after`` reached), if any.
    standard_from: int | None = None
    #: The jobs already said to be RUNNING (``started`` is sent once per job).
    running: set[str] = field(default_factory=set)

    def run(self) -> dict[str, Any]:
        if self.notifier is not None:
            self._watch_starts()
        if self.policy is not None:  # recovery acts while the job is followed to its end (--wait)
            self.ladder.recovering = self.ladder.follow is Follow.end
            self.ladder.exit_codes = self.policy.exit_codes
            if not self.ladder.recovering:  # plain submit, --until-running: attempt 0 is made, and left
                self.ladder.say("recovery: acts while submit --wait follows the job, and this submit does not "
                                "follow it to its end: `vxtrain submit SPEC --idempotency-key "
                                f"{shlex.quote(self.ladder.key)} --wait` later follows it and recovers it")
        attempt, first = 0, 0
        while True:
            view = self._climb(attempt, first)
            last = self.ladder.attempts[-1]
            if not self.ladder.recovering or last.outcome not in LOST or last.attempt != attempt:
                return self._ended(view)
            first = self._next(attempt, last)
            attempt += 1

    # --- one attempt ----------------------------------------------------------------------

    def _climb(self, attempt: int, first: int) -> dict[str, Any]:
        """Attempt ``attempt``'s climb from rung ``first``: its job adopted or created, then followed."""
        ladder = self.ladder
        if self.policy is not None:
            ladder.attempt, ladder.first, ladder.labels = attempt, first, self._labels(attempt)
        try:
            return climb(self._rungs_of(attempt), ladder)
        except errors.JobFailedError as failed:
            failed.job.update(self._summary())
            state = str(failed.job.get("state") or "")
            event: Event = "cancelled" if state == "JOB_STATE_CANCELLED" else "failed"
            self._notify(event, failed.job, f"{failed.job.get('name', 'the job')} ended {state or 'FAILED'}")
            raise
        except errors.NoCapacity as short:
            self._notify("no-capacity", {}, f"no capacity: {short}")
            raise errors.NoCapacity(str(short), short.report, short.attempts, self._summary()) from short
        except KeyboardInterrupt:
            if self.policy is not None and not ladder.explicit:
                ladder.say(f"interrupted at attempt {attempt}: resume watching (and recovering) with "
                           f"--idempotency-key {shlex.quote(ladder.key)} --wait")
            raise

    def _labels(self, attempt: int) -> dict[str, str]:
        """The labels that name attempt ``attempt``'s job beside the key. A job the key already
        names without an attempt label (a submit made before the spec had ``recovery:``, as the
        exit-3 hint invites) is attempt 0: it is adopted, not created again beside it."""
        if attempt == 0 and self.ladder.explicit:
            older = job_without(self.rungs, self.ladder, ATTEMPT_LABEL)
            if older is not None:
                self.ladder.say(f"{older} carries the key without a {ATTEMPT_LABEL} label (submitted before "
                                "the spec had recovery:): it is attempt 0")
                return {}
        return {ATTEMPT_LABEL: str(attempt)}

    def _rungs_of(self, attempt: int) -> list[Rung]:
        """The rungs as attempt ``attempt`` sends them (unchanged without ``recovery:``)."""
        if self.policy is None:
            return list(self.rungs)
        standard = self.standard_from is not None and attempt >= self.standard_from
        return [replace(r, job=attempt_job(r.job, attempt, standard=standard)) for r in self.rungs]

    # --- between attempts -----------------------------------------------------------------

    def _next(self, attempt: int, last: Attempt) -> int:
        """The rung attempt ``attempt + 1`` starts from, after ``last`` lost its machines; raises
        when the recoveries are spent or ``strategy: next`` has no rung left."""
        policy = self.policy
        assert policy is not None  # only a recovering ladder records a lost outcome
        name = last.name or "the job"
        if attempt >= policy.max_recoveries:
            self._give_up(last, f"{name} {_WHY[last.outcome]}, and recovery.max_recoveries "
                                f"({policy.max_recoveries}) are spent")
        first = last.rung if policy.strategy == "same" else last.rung + 1
        if first >= len(self.rungs):
            self._give_up(last, f"{name} {_WHY[last.outcome]} on the last rung, and recovery.strategy: next "
                                "has no rung after it")
        self._maybe_standard(attempt)
        rung = self.rungs[first]
        if last.name in self.ladder.found_ended and self._exists(attempt + 1):
            # a resumed watch: the watcher that created the next attempt said (and sent) it first
            self.ladder.say(f"{name} (attempt {attempt}, same key) {_WHY[last.outcome]} before this watch: "
                            f"going on with attempt {attempt + 1}")
            return first
        text = (f"{name} {_WHY[last.outcome]}: recovery {attempt + 1} of {policy.max_recoveries}, a new job "
                f"on rung {rung.number} ({rung.region}) resuming from base_output_dir")
        self.ladder.say(text)
        self._notify("recovering", last.view or {}, text)
        return first

    def _exists(self, attempt: int) -> bool:
        """Whether attempt ``attempt``'s job exists already. When it does not, no watcher got as far
        as creating it (one killed between seeing the loss and the create, or none ever followed:
        a submit without --wait), so this watch announces the recovery it is about to make."""
        return job_with(self.rungs, self.ladder, {ATTEMPT_LABEL: str(attempt)}) is not None

    def _maybe_standard(self, attempt: int) -> None:
        """``spot_to_standard_after``: once that many Spot preemptions are seen, STANDARD from the next attempt."""
        after = self.policy.spot_to_standard_after if self.policy else None
        if after is None or self.standard_from is not None or self._spot_preemptions() < after:
            return
        self.standard_from = attempt + 1
        self.ladder.say(f"{after} preemption(s) of Spot VMs (recovery.spot_to_standard_after): "
                        "the next attempts use STANDARD (on-demand) VMs")

    def _spot_preemptions(self) -> int:
        jobs = {(a, r.number): r.job for a in {x.attempt for x in self.ladder.attempts}
                for r in self._rungs_of(a)}
        return sum(1 for x in self.ladder.attempts
                   if x.outcome is Outcome.preempted and _strategy(jobs[(x.attempt, x.rung)]) == "SPOT")

    def _give_up(self, last: Attempt, message: str) -> NoReturn:
        """The recoveries are spent: NoCapacity (exit 5) after a capacity loss, else JobFailedError (3)."""
        view = {**(last.view or {}), "attempts": [a.to_json() for a in self.ladder.attempts], **self._summary()}
        if last.outcome is Outcome.preempted:
            self._notify("no-capacity", view, message)
            raise errors.NoCapacity(f"{message}: submit again later, raise max_recoveries, or add fallback: "
                                    "rungs with other regions or machines", attempts=view["attempts"],
                                    details=self._summary())
        self._notify("failed", view, message)
        raise errors.JobFailedError(message, job=view)

    # --- the end, the figures, the events -------------------------------------------------

    def _ended(self, view: dict[str, Any]) -> dict[str, Any]:
        if self.ladder.follow is not Follow.end:
            return view
        out = {**view, **self._summary()}
        if out.get("state") == "JOB_STATE_SUCCEEDED":
            count, estimated = out["recoveries"], out["cost"]["estimated"]
            cost = "cost unknown (no list price)" if estimated is None else \
                f"about {usd(estimated)} (list prices × run time)"
            self._notify("succeeded", out, f"{out['name']} succeeded after {count} "
                                           f"{'recovery' if count == 1 else 'recoveries'}, {cost}")
        return out

    def _summary(self) -> dict[str, Any]:
        """``recoveries`` and ``cost``: what every job of the submit cost as it ran."""
        records = self.ladder.attempts
        prices = {(a, r.number): job_per_hour(r.job, r.region) for a in {x.attempt for x in records}
                  for r in self._rungs_of(a)}
        entries = [{**attempt_cost(a.attempt, a.view or {}, prices[(a.attempt, a.rung)]), "rung": a.rung}
                   for a in records if a.name]
        return {"recoveries": max((a.attempt for a in records), default=0), "cost": cost_json(entries)}

    def _notify(self, event: Event, view: dict[str, Any], text: str) -> None:
        if self.notifier is None:
            return
        last = self.ladder.attempts[-1] if self.ladder.attempts else None
        estimated = self._summary()["cost"]["estimated"]
        self.notifier.send(event, job=view.get("name") or (last.name if last else None),
                           attempt=self.ladder.attempt, rung=last.rung if last else self.ladder.first,
                           state=view.get("state") or (last.state if last else None), cost_usd=estimated,
                           text=text)

    def _watch_starts(self) -> None:
        """Send ``started`` the first time each followed job is seen RUNNING, or seen to have
        started (``start_time``: a job that ran and ended between two polls started too)."""
        inner = self.ladder.progress

        def progress(view: dict[str, Any], elapsed: float) -> None:
            name = str(view.get("name"))
            began = view.get("state") == "JOB_STATE_RUNNING" or bool(view.get("start_time"))
            if began and name not in self.running:
                self.running.add(name)
                self._notify("started", view, f"{name} is running (attempt {self.ladder.attempt})")
            if inner is not None:
                inner(view, elapsed)

        self.ladder.progress = progress
