"""``vxtrain reconcile``: one stateless turn of every unfinished life under a bucket.

The plans (vxtrain.submission.stored) say what each key's life is; the Job API says where
it stands. A pass reads the unfinished plans, makes **one List per (project, region, kind)**
of their rungs, filtered to the jobs that carry an idempotency key (``labels.KEY:*``), gives
each plan its key's jobs, and takes its next steps (vxtrain.submission.carry.turn: decide and
act until the life waits on a job or ends): a recovery's next attempt created under its
lease, duplicates cancelled, an ended life written into its plan. Nothing is followed: the
next pass looks again. Any number of passes and ``submit --wait`` watchers may race; the
lease per attempt makes one job per attempt.

A plan with no job at all whose attempt-0 lease names one: its jobs were deleted. The pass
says so and finishes it (``deleted``): a life is never recreated from nothing after its end.
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, NotRequired, TypedDict

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.submission import decide as d
from vxtrain.submission import stored
from vxtrain.submission.carry import CarryOptions, Turn, spans_from_env, turn
from vxtrain.submission.lease import LEASE_PREFIX
from vxtrain.submission.names import LABEL_KEY, bucket_name, label_value
from vxtrain.submission.notify import Notifier, hooks_from_env
from vxtrain.submission.plan import Finished
from vxtrain.submission.session import Session
from vxtrain.submission.trace import trace_from_env
from vxtrain.vocab.kinds import JobKind, kind_of_job
from vxtrain.vocab.timestamps import format_time

# Annotations only: a TypedDict class costs ~15 µs a field to create (measured).
if TYPE_CHECKING:
    class PlanLineJson(TypedDict):
        """One plan's entry of a pass: the job the life stands on, and what the pass did."""

        key: str
        state: str | None
        attempt: int | None
        rung: int | None
        job: str | None
        action: str
        cost_usd: float | None


    class PassJson(TypedDict):
        """``vxtrain reconcile``'s document (docs/cli.md)."""

        plans: list[PlanLineJson]
        created: list[str]
        cancelled: list[str]
        finished: list[str]
        errors: NotRequired[list[str]]


#: What a reconcile pass asks of every life: carry it to its end, recovering as its plan says.
WATCH = d.Watch(d.Follow.end, None, explicit=True)


@dataclass
class Pass:
    """One pass: each plan's line, the jobs created and cancelled, the keys finished, and the
    API errors that outlived their retries (the pass acted on every plan it could)."""

    plans: list[PlanLineJson] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def to_json(self) -> PassJson:
        """``{"plans": [{"key", "state", "attempt", "rung", "job", "action", "cost_usd"}], "created",
        "cancelled", "finished"}`` (``errors`` when some call failed)."""
        doc: PassJson = {"plans": self.plans, "created": self.created, "cancelled": self.cancelled,
                    "finished": self.finished}
        if self.errors:
            doc["errors"] = self.errors
        return doc


def reconcile(session: Session, bucket: str, project: str | None = None) -> Pass:
    """One pass over every unfinished plan in ``bucket`` (``gs://B[/PREFIX]``; plans live at
    the bucket's root), of ``project`` when given. The pass is a span (with an OTLP endpoint
    set: vxtrain.submission.trace), each attempt and rung it creates a child of it, and the
    environment's TRACEPARENT goes into each job it creates, as submit's does."""
    name = bucket_name(bucket) or bucket
    result = Pass()
    trace = trace_from_env(os.environ, session.log)
    with spans_from_env(os.environ, trace, session.log) as spans:
        top = spans.start("vxtrain reconcile", None, {"vxtrain.bucket": name})
        try:
            _pass(session, name, project, result, CarryOptions(WATCH, True, trace=trace, spans=spans, span=top))
            top.set({"vxtrain.plans": len(result.plans), "vxtrain.created": len(result.created),
                     "vxtrain.errors": len(result.errors)})
        except errors.VxtrainError as exc:
            top.fail(str(exc))
            raise
        finally:
            top.end()
    return result


def _pass(session: Session, name: str, project: str | None, result: Pass, carry: CarryOptions) -> None:
    try:
        plans = stored.unfinished(session, name, project)
    except stored.UNUSABLE as exc:
        raise errors.UnavailableError(f"cannot read the plans in gs://{name}: {exc}") from exc
    listed = _list(session, plans, result)
    for kept in plans:
        try:
            _one(session, kept, listed, result, carry)
        except errors.ApiError as exc:
            result.errors.append(f"{kept.plan.key}: {exc}")
            session.log.warning("%s: %s", kept.plan.key, exc)


def _list(session: Session, plans: Sequence[stored.Kept], result: Pass) -> dict[tuple[str, str, str], list[JobDict]]:
    """One List per (project, region, kind) of the plans' rungs: every job with a key."""
    places: dict[tuple[str, str, str], JobKind] = {}
    for kept in plans:
        for rung in kept.plan.rungs:
            kind = kind_of_job(rung.job)
            places.setdefault((rung.project, rung.region, kind.key), kind)
    listed: dict[tuple[str, str, str], list[JobDict]] = {}
    for (project, region, key), kind in places.items():
        try:
            listed[(project, region, key)] = session.list_jobs(project, region, f"labels.{LABEL_KEY}:*", kind)
        except errors.ApiError as exc:
            result.errors.append(f"list {kind.collection} in {project}/{region}: {exc}")
            session.log.warning("could not list the jobs in %s/%s: %s", project, region, exc)
    return listed


def _one(session: Session, kept: stored.Kept, listed: dict[tuple[str, str, str], list[JobDict]],
         result: Pass, carry: CarryOptions) -> None:
    """One plan's turn: its key's jobs from the lists, its steps taken, its line."""
    plan = kept.plan
    places = dict.fromkeys((r.project, r.region, kind_of_job(r.job).key) for r in plan.rungs)
    if any(place not in listed for place in places):
        raise errors.UnavailableError("its jobs could not be listed: left for the next pass")
    label = label_value(plan.key)
    jobs = [j for place in places for j in listed[place] if (j.get("labels") or {}).get(LABEL_KEY) == label]
    if not jobs and _deleted(session, kept):
        stored.finish(session, kept, Finished(format_time(datetime.now(timezone.utc)), "deleted", None))
        session.log.warning("%s: its plan names jobs that no longer exist (deleted): finished, nothing recreated",
                            plan.key)
        result.finished.append(plan.key)
        result.plans.append(_line(plan.key, None, "finish", None))
        return
    notifier = _notifier(session, kept)
    try:
        done = turn(session, kept, jobs, replace(carry, notifier=notifier,
                                                 command=f"vxtrain reconcile --bucket gs://{kept.bucket}"))
    finally:
        if notifier is not None:
            notifier.close()
    result.created += done.created
    result.cancelled += done.cancelled
    if done.finished:
        result.finished.append(plan.key)
    result.plans.append(_line(plan.key, done, _action(done), done.cost_usd))


def _deleted(session: Session, kept: stored.Kept) -> bool:
    """Whether a job of the key was created (a lease of the key names one) though none is listed."""
    plan, label = kept.plan, label_value(kept.plan.key)
    for project, region in dict.fromkeys((r.project, r.region) for r in plan.rungs):
        prefix = f"{LEASE_PREFIX}/{project}/{region}/{label}/"
        if any(_names_a_job(body) for body in stored.objects(session, kept.bucket, prefix)):
            return True
    return False


def _names_a_job(body: bytes) -> bool:
    try:
        return bool(json.loads(body).get("name"))
    except (ValueError, AttributeError):
        return False


def _notifier(session: Session, kept: stored.Kept) -> Notifier | None:
    """The plan's hooks, their URLs and secrets read from the environment variables it names
    (a plan never holds a URL or a secret)."""
    hooks = hooks_from_env(((target.url_env, target.secret_env) for target in kept.plan.notify), session.log)
    return Notifier(hooks, session.log, key=kept.plan.key) if hooks else None


def _action(done: Turn) -> str:
    if done.finished:
        return "finish"
    if done.created:
        return "create"
    if done.cancelled:
        return "cancel"
    return "wait"


def _line(key: str, done: Turn | None, action: str, cost: float | None) -> PlanLineJson:
    """One plan's entry: ``{"key", "state", "attempt", "rung", "job", "action", "cost_usd"}``: the
    job the life stands on (waits on, or ended on)."""
    job = done.job if done is not None else None
    if job is None:
        return {"key": key, "state": None, "attempt": None, "rung": None, "job": None, "action": action,
                "cost_usd": cost}
    return {"key": key, "state": job.view.state.value, "attempt": job.attempt, "rung": job.rung,
            "job": job.view.name, "action": action, "cost_usd": cost}
