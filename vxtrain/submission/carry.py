"""Carrying a key's life: observe, decide (vxtrain.submission.decide), act, again.

``submit`` (with or without ``--wait``, ``--until-running``, a re-run with the key) is
this loop over one plan until ``decide`` says the life ends (for this watch):

* observe: one List per (project, region) of the plan's rungs, filtered by the key's
  label, at the start (skipped for a key this submit made up: nothing can carry it yet),
  after each followed job ends and after each cancel; between them, the followed job is
  polled (one Get per poll, its log lines streamed, as ``vxtrain wait`` does);
* decide: pure, on everything observed and what this watch did (the jobs it created,
  saw alive, cancelled; the rungs refused before any job);
* act: say each line once, send each event once (by its id), cancel, create exactly once
  (vxtrain.submission.create; with a bucket and a key the caller chose, under the
  attempt's lease, vxtrain.submission.lease) after the placement check, the quota
  preflight and the publication, or follow the job one poll further.

What it returns is submit's JSON document; how the life ended, when not well, is raised
(JobFailedError, NoCapacity, the refusal of a single rung, an ApiError with the attempts).
"""
from __future__ import annotations

import logging
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, TypedDict

from vxtrain import errors
from vxtrain.backends.base import JobDict, LocalRun
from vxtrain.planning.cost import job_per_hour, usd
from vxtrain.submission import decide as d
from vxtrain.submission.create import Created, Request, cancel_duplicate, create_once, labelled_jobs
from vxtrain.submission.names import LABEL_KEY, bucket_name, label_value, parent_of
from vxtrain.submission.notify import Notifier
from vxtrain.submission.placement import check_placement
from vxtrain.submission.plan import Finished, Plan, differences
from vxtrain.submission.publish import Publication, images_json, publish
from vxtrain.submission.quota import Read, check_quota
from vxtrain.submission.session import JobWatch, Session
from vxtrain.submission.trace import Span, Spans, TraceContext, with_trace
from vxtrain.submission.views import JobView, attempt_cost, cost_json
from vxtrain.vocab.kinds import JobState, kind_of_job, other
from vxtrain.vocab.timestamps import format_time

if TYPE_CHECKING:
    from vxtrain.images.publish import Pushed
    from vxtrain.submission.stored import Kept
    from vxtrain.submission.views import AttemptCostJson, JobViewJson, RunCostJson, TriedJson


#: The environment variables that turn spans on (OTLP exporter configuration,
#: https://opentelemetry.io/docs/specs/otel/protocol/exporter/).
ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def spans_from_env(environ: Mapping[str, str], trace: TraceContext | None, log: logging.Logger) -> Spans:
    """The OTLP/HTTP tracer (vxtrain.submission.otel) when an OTLP endpoint is set, else ``Spans()``.
    Without ``vxtrain[otel]`` installed, that is said once and nothing is sent."""
    if not any(environ.get(name) for name in ENDPOINT_ENVS) or environ.get("OTEL_SDK_DISABLED", "").lower() == "true":
        return Spans()
    try:
        # lazy: the OpenTelemetry SDK and the OTLP exporter (requests, protobuf) cost ~150 ms of
        # imports (-X importtime); only a command told where to send spans pays it
        from vxtrain.submission.otel import OtlpSpans
    except ImportError as missing:
        log.warning("warning: OTEL_EXPORTER_OTLP_ENDPOINT is set but %s cannot be imported: no spans are sent "
                    "(pip install 'vxtrain[otel]')", missing.name or "opentelemetry-sdk")
        return Spans()
    return OtlpSpans(trace)


@dataclass(frozen=True)
class Rigging:
    """How one rung is sent from this host (not part of the stored plan): how an emulator
    runs it here, what must be published before its create, and the spec's staging bucket
    (``gs://BUCKET[/PREFIX]``: where a chosen key's lease is taken)."""

    local: LocalRun | None = None
    publication: Publication | None = None
    staging_bucket: str | None = None


@dataclass(frozen=True)
class CarryOptions:
    """What one submit asks beside the plan: how far it follows, the quota preflight, the
    hooks its events go to, and ``command``: the submit's own command line without its key
    (every option that shapes the job: a resume line repeats it)."""

    watch: d.Watch = d.Watch()
    quota_check: bool = True
    notifier: Notifier | None = None
    command: str = "vxtrain submit SPEC"
    #: Hooks given as URLs (not by an environment variable's name): the plan cannot keep them.
    unkept_hooks: int = 0
    #: The environment's trace context, passed on to every job created (vxtrain.submission.trace).
    trace: TraceContext | None = None
    #: Where each attempt's and each rung's span goes, a child of ``span`` (submit's, or a
    #: reconcile pass's).
    spans: Spans = Spans()
    span: Span | None = None

    def resume(self, key: str, *flags: str) -> str:
        """The command line that resumes this life: the same job, the same key."""
        return " ".join([self.command, "--idempotency-key", shlex.quote(key), *flags])


def submit(session: Session, plan: Plan, rigging: Sequence[Rigging], options: CarryOptions = CarryOptions()) -> JobViewJson:
    """Carry ``plan``'s life as far as ``options.watch`` asks; submit's JSON document (see the
    module docstring for what is raised)."""
    return _Carrier(session, plan, rigging, options).run()


@dataclass(frozen=True)
class Turn:
    """What one turn of a life did (a reconcile pass): the jobs it created and cancelled, and
    whether the life finished."""

    created: tuple[str, ...]
    cancelled: tuple[str, ...]
    finished: bool
    cost_usd: float | None
    #: The job the life stands on after the turn (the one it waits on, or ended on).
    job: d.Seen | None = None


def turn(session: Session, kept: Kept, jobs: Sequence[JobDict], options: CarryOptions) -> Turn:
    """One turn of ``kept``'s life from ``jobs`` (its key's jobs, as one List gave them): decide
    and act until the life waits on a job or ends; nothing is polled (vxtrain reconcile)."""
    carrier = _Carrier(session, kept.plan, [Rigging(staging_bucket=f"gs://{kept.bucket}")] * len(kept.plan.rungs),
                       options)
    carrier.kept = kept
    return carrier.turn(jobs)


# Annotations only, as the views' (vxtrain.submission.views).
if TYPE_CHECKING:
    class _Summary(TypedDict):
        """What every job of a life cost as it ran (submit's ``recoveries`` and ``cost``)."""

        recoveries: int
        cost: RunCostJson


class _Carrier:
    """One watch of one key: what it observed and did, and the loop."""

    def __init__(self, session: Session, plan: Plan, rigging: Sequence[Rigging], options: CarryOptions) -> None:
        self.session, self.plan, self.rigging, self.options = session, plan, list(rigging), options
        self.watch = options.watch
        self.seen: dict[str, d.Seen] = {}
        self.raw: dict[str, JobDict] = {}  # each job as last listed or polled
        self.refusals: dict[tuple[int, int], tuple[d.Refusal, errors.VxtrainError]] = {}
        self.created: dict[str, bool] = {}  # name → whether the create adopted it
        self.cancelled: set[str] = set()  # every job this watch cancelled
        self.left: set[str] = set()  # those it cancelled for waiting too long (--max-pending)
        self.duplicates_cancelled: list[str] = []
        self.said: set[tuple[object, ...]] = set()
        self.sent: set[tuple[int, str]] = set()
        self.pushed: list[Pushed] = []
        self.quota_reads: dict[str, Read] = {}
        self.following: JobWatch | None = None
        self.decision = d.Decision((), ())
        self.kept: Kept | None = None
        self.attempt_spans: dict[int, Span] = {}
        self.rung_spans: dict[str, Span] = {}  # by the job's name, ended when it is seen to end

    # --- the loop ----------------------------------------------------------------------------

    def run(self) -> JobViewJson:
        self._warn_recovery()
        try:
            finish = self._loop()
        except KeyboardInterrupt as stopped:
            self._stop_following(interrupted=True)
            self._interrupted()
            raise errors.Interrupted(self._known()) from stopped
        except errors.ApiError as stopped:  # not capacity: the life ends, saying what the rungs before did
            if stopped.attempts or not self.decision.tried:
                raise
            raise stopped.with_attempts([t.to_json() for t in self.decision.tried]) from stopped
        finally:
            self._stop_following()
            self._end_spans()
        return self._finish(finish)

    def turn(self, jobs: Sequence[JobDict]) -> Turn:
        """Decide and act on ``jobs`` until a step would wait on a job, or the life ends."""
        for job in jobs:
            self._saw(job, found=True, polled=True)
        finished = False
        try:
            while True:
                self.decision = d.decide(self.plan, self._observed(), datetime.now(timezone.utc), self.watch)
                step = self._act(self.decision, wait=False)
                if isinstance(step, d.Finish):
                    self._finish_quietly(step)
                    finished = step.ending is not d.Ending.refused
                    break
                if step is None:
                    break
        finally:
            self._end_spans()
        created = tuple(name for name, adopted in self.created.items() if not adopted)
        current = self.seen.get(self._current())
        return Turn(created, tuple(self.duplicates_cancelled) + tuple(sorted(self.left)), finished,
                    self._summary()["cost"]["estimated"], current)

    def _finish_quietly(self, finish: d.Finish) -> None:
        """The end of a life a reconcile pass saw: written into the plan, its event sent, said."""
        self._write_end(finish)
        if finish.event is not None:
            self._end_event(finish, finish.view)
        if finish.message and finish.ending is not d.Ending.done:
            self.session.log.warning("%s: %s", self.plan.key, finish.message)

    def _loop(self) -> d.Finish:
        """Keep the plan (a chosen key and a bucket), look, then observe, decide, act until the
        decision is a Finish."""
        if self.watch.explicit:
            self._keep()
            self._observe(first=True)
            self._same_job()
        while True:
            self.decision = d.decide(self.plan, self._observed(), datetime.now(timezone.utc), self.watch)
            step = self._act(self.decision)
            if isinstance(step, d.Finish):
                return step

    def _keep(self) -> None:
        """With a bucket, the key's plan kept create-if-absent before the first create (SpecChanged,
        exit 1, for another spec under the key); a finished plan ends the life as it ended."""
        bucket = bucket_name(self.rigging[0].staging_bucket)
        if bucket is None:
            return
        # lazy: google-cloud-storage (~300 ms, -X importtime), for a chosen key and a bucket alone
        from vxtrain.submission import stored

        self.kept = stored.keep(self.session, self.plan, bucket)
        if self.kept is None:
            return
        self.plan = self.kept.plan
        if self.options.unkept_hooks:
            self.session.log.warning(
                "notify: a hook's URL is a secret and is not kept in the plan: `vxtrain reconcile` cannot send "
                "to it (this submit does while it follows the job); give it as `notify: [{url_env: NAME}]`, "
                "NAME an environment variable that holds the URL where submit and reconcile run")

    def _same_job(self) -> None:
        """Attempts of one key run the same job as sent: a job of the key that another spec (or
        other options) made is refused (exit 1), naming the keys that differ."""
        for seen in self.seen.values():
            job = self.raw.get(seen.view.name, {})
            if seen.rung >= len(self.plan.rungs):
                continue  # a rung the spec no longer has: never walked to
            planned = self.plan.rungs[seen.rung]
            if kind_of_job(job) is not kind_of_job(planned.job):
                continue  # a key names one job whatever its kind (a spec that gained a study: makes none)
            differ = differences(planned.job, job)
            if differ:
                raise errors.SpecChanged(
                    f"the key {self.plan.key} already names {seen.view.name}, a job of another spec or other "
                    f"options: {', '.join(differ[:8])}{' …' if len(differ) > 8 else ''} differ; attempts of one "
                    f"key run the same job: `{self.options.resume(self.plan.key)}` with the options of the first "
                    "submit, or another --idempotency-key")

    def _observed(self) -> list[d.Observed]:
        return [*self.seen.values(), *(refusal for refusal, _ in self.refusals.values())]

    def _act(self, decision: d.Decision, *, wait: bool = True) -> d.Action | None:
        """Carry out the decision's actions; the Finish when the life ends here (without
        ``wait``, the step that would wait on a job is left undone and returned as None)."""
        step: d.Action | None = None
        for action in decision.actions:
            if isinstance(action, d.Say):
                self._say(action)
            elif isinstance(action, d.Notify):
                self._notify(action.event, action.attempt, action.rung, action.job, action.state, action.text)
            elif isinstance(action, d.Cancel):
                self._cancel(action)
            elif step is None:
                step = action
        if isinstance(step, d.Create):
            self._create(step)
            return step
        if isinstance(step, d.WaitFor):
            if not wait:
                return None
            self._follow(step)
        return step

    # --- observing -----------------------------------------------------------------------------

    def _observe(self, *, first: bool = False) -> None:
        """List the key's jobs, one List per (project, region) of the plan's rungs (and, on a
        re-run's first look, the other job kind: a key names one job whatever its kind)."""
        label = label_value(self.plan.key)
        kind = kind_of_job(self.plan.rungs[0].job)
        places = dict.fromkeys((r.project, r.region) for r in self.plan.rungs)
        jobs: list[JobDict] = []
        for project, region in places:
            api = self.session.api(region)
            jobs += self.session.call(lambda: labelled_jobs(api, kind, parent_of(project, region), label),
                                      f"list the jobs of the key in {region}")
        if first and not jobs:
            api = self.session.api(self.plan.region)
            jobs = self.session.call(lambda: labelled_jobs(api, other(kind), parent_of(self.plan.project,
                                                                                       self.plan.region), label),
                                     f"list the jobs of the key in {self.plan.region}")
        for job in jobs:
            self._saw(job, found=first)

    def _saw(self, job: JobDict, *, found: bool = False, polled: bool = False) -> d.Seen:
        """Note one observation of ``job``."""
        name = str(job.get("name", ""))
        self.raw[name] = job
        view = self.session.view(job, adopted=self.created.get(name, True))
        before = self.seen.get(name)
        alive = not view.state.terminal
        waiting = alive and not view.start_time and view.state is not JobState.RUNNING
        seen = d.Seen(view, found=found if before is None else before.found,
                      created_here=name in self.created,
                      seen_alive=alive or (before is not None and before.seen_alive),
                      seen_waiting=waiting or (before is not None and before.seen_waiting),
                      cancelled_here=name in self.left,
                      followed=polled or (before is not None and before.followed))
        self.seen[name] = seen
        span = self.rung_spans.get(name)
        if span is not None and view.state.terminal:
            span.set({"vxtrain.state": view.state.value})
            span.end()
        return seen

    # --- acting --------------------------------------------------------------------------------

    def _say(self, action: d.Say) -> None:
        if action.key not in self.said:
            self.said.add(action.key)
            self.session.log.warning("%s", action.text)

    def _notify(self, event: d.Event, attempt: int, rung: int, job: str | None, state: str | None,
                text: str) -> None:
        """Send ``event`` once per watch (a notification's id is its key, attempt and event)."""
        notifier = self.options.notifier
        if notifier is None or (attempt, event) in self.sent:
            return
        self.sent.add((attempt, event))
        notifier.send(event, job=job, attempt=attempt, rung=rung, state=state,
                      cost_usd=self._summary()["cost"]["estimated"], text=text)

    def _cancel(self, action: d.Cancel) -> None:
        name = action.name
        if name in self.cancelled:
            return
        self.cancelled.add(name)
        if action.pending:
            self.left.add(name)
            if name in self.seen:
                self.seen[name] = replace(self.seen[name], cancelled_here=True)
        if not action.pending:
            label = f"{LABEL_KEY}={label_value(self.plan.key)}"
            if cancel_duplicate(self.session, name, self._current(), label):
                self.duplicates_cancelled.append(name)
            return
        try:
            self.session.cancel_call(name)
        except errors.InvalidArgumentError:
            # It ended between the last poll and the cancel (a stockout, say), and Vertex AI
            # refuses to cancel an ended job (FAILED_PRECONDITION): judge it as it ended.
            if not self.session.get(name).state.terminal:
                raise

    def _current(self) -> str:
        """The job the watch stays with (the one a duplicate's cancel names)."""
        for action in self.decision.actions:
            if isinstance(action, d.WaitFor):
                return action.name
            if isinstance(action, d.Finish) and action.view is not None:
                return action.view.name
        return "the followed job"

    def _create(self, step: d.Create) -> None:
        """Attempt ``step.attempt``'s job on rung ``step.rung``: its checks, its publication, then
        created exactly once. A need above a quota, or a quota refusal at create, is a refusal of
        the rung (the ladder moves on); any other error ends the life."""
        planned, rig = self.plan.rungs[step.rung], self.rigging[step.rung]
        span = self._rung_span(step, planned.project, planned.region)
        trace = self.options.trace
        here = span.traceparent()  # with spans: the job's own spans are the rung span's children
        if trace is not None and here is not None:
            trace = replace(trace, traceparent=here)
        request = Request(with_trace(step.job, trace), parent_of(planned.project, planned.region), self.plan.key,
                          step.labels, rig.local)
        try:
            made = self._create_checked(request, planned.project, planned.region, rig)
        except errors.NoCapacity as short:  # the quota preflight: a need above a limit
            self.refusals[(step.attempt, step.rung)] = (d.Refusal(step.attempt, step.rung, str(short), True), short)
            self._refused(span, "no-capacity", str(short))
            return
        except errors.QuotaError as refused:
            if not d.QUOTA_TEXT.search(str(refused)):
                self._refused(span, "error", str(refused))
                raise  # RESOURCE_EXHAUSTED that is not a quota (a rate limit): not capacity
            message = f"the create was refused for quota ({refused}); nothing created"
            self.refusals[(step.attempt, step.rung)] = (d.Refusal(step.attempt, step.rung, message), refused)
            self._refused(span, "quota", message)
            return
        except errors.VxtrainError as failed:
            self._refused(span, "error", str(failed))
            raise
        name = str(made.job.get("name"))
        span.set({"vxtrain.job": name, "vxtrain.adopted": made.adopted})
        self.rung_spans[name] = span
        self.created[name] = made.adopted
        self.duplicates_cancelled += made.duplicates_cancelled
        self._saw(made.job)

    def _rung_span(self, step: d.Create, project: str, region: str) -> Span:
        """The span of (attempt, rung)'s job, under submit's span; the attempt's own span begins
        with its first create (and the attempts before it end)."""
        spans, top = self.options.spans, self.options.span
        if step.attempt not in self.attempt_spans:
            for earlier in self.attempt_spans.values():
                earlier.end()
            self.attempt_spans[step.attempt] = spans.start(
                f"vxtrain attempt {step.attempt}", top, {"vxtrain.key": self.plan.key, "vxtrain.attempt": step.attempt})
        return spans.start(f"vxtrain rung {step.rung}", top, {
            "vxtrain.key": self.plan.key, "vxtrain.attempt": step.attempt, "vxtrain.rung": step.rung,
            "cloud.account.id": project, "cloud.region": region})

    @staticmethod
    def _refused(span: Span, outcome: str, message: str) -> None:
        span.set({"vxtrain.outcome": outcome})
        span.fail(message)
        span.end()

    def _end_spans(self) -> None:
        """Every span still open ends with the watch (a job followed no further stays unended
        in the trace's terms: its span says the state it was last seen in)."""
        for name, span in self.rung_spans.items():
            seen = self.seen.get(name)
            if seen is not None:
                span.set({"vxtrain.state": seen.view.state.value})
            span.end()
        for span in self.attempt_spans.values():
            span.end()

    def _create_checked(self, request: Request, project: str, region: str, rig: Rigging) -> Created:
        session = self.session
        check_placement(session, request.job, project=project, region=region)
        if self.options.quota_check:
            check_quota(session, request.job, project=project, region=region, reads=self.quota_reads)
        self.pushed += publish(session, rig.publication, project)
        bucket = bucket_name(rig.staging_bucket) if self.watch.explicit else None
        if bucket is not None:
            # lazy: the lease brings google-cloud-storage and google.api_core (~300 ms, -X importtime),
            # for a submit with a key the caller chose and a bucket alone
            from vxtrain.submission.lease import create_leased

            return create_leased(session, request, bucket)
        return create_once(session, request)

    def _follow(self, step: d.WaitFor) -> None:
        """One more poll of the followed job (the first at once, the next after the poll
        interval, never past ``until``); a full look once it has ended."""
        if self.following is None or self.following.name != step.name or self.following.quiet != step.quiet:
            self._stop_following()
            self.following = JobWatch(self.session, step.name, quiet=step.quiet).__enter__()
        else:
            at_most = None if step.until is None else max(
                (step.until - datetime.now(timezone.utc)).total_seconds(), 0.0)
            self.following.pause(at_most)
        view = self.following.poll()
        self._saw(self.following.last, polled=True)
        if view.state.terminal:
            self._stop_following()
            self._observe()

    def _stop_following(self, *, interrupted: bool = False) -> None:
        watch, self.following = self.following, None
        if watch is not None:
            watch.__exit__(KeyboardInterrupt if interrupted else None, None, None)

    # --- the end -------------------------------------------------------------------------------

    def _finish(self, finish: d.Finish) -> JobViewJson:
        self._write_end(finish)
        tried = [t.to_json() for t in self.decision.tried]
        summary = self._summary()
        view = finish.view
        if finish.ending is d.Ending.done:
            assert view is not None  # a life ends well on a job
            return self._done(view, tried, summary, finish)
        if finish.ending is d.Ending.refused:
            self._end_event(finish, view)
            raise self._refusal(finish)
        self._end_event(finish, view)
        if finish.ending is d.Ending.no_capacity:
            raise errors.NoCapacity(finish.message, attempts=tried, details=summary)
        assert view is not None  # a failure names its job
        raise errors.JobFailedError(finish.message, job={**view.to_json(), "attempts": tried, **summary})

    def _write_end(self, finish: d.Finish) -> None:
        """The life's end, into the kept plan: a job's end this watch followed to it (a refusal
        before any job is not an end: a later submit or reconcile may try again)."""
        if self.kept is None or finish.ending is d.Ending.refused:
            return
        if finish.ending is d.Ending.done and (self.watch.follow is not d.Follow.end or finish.view is None):
            return
        from vxtrain.submission import stored  # lazy: as in _keep()

        outcome = finish.event or finish.ending.value
        job = finish.view.name if finish.view is not None else None
        self.kept = stored.finish(self.session, self.kept, Finished(format_time(datetime.now(timezone.utc)),
                                                                    outcome, job))

    def _done(self, view: JobView, tried: list[TriedJson], summary: _Summary,
              finish: d.Finish) -> JobViewJson:
        doc: JobViewJson = {**view.to_json(), "attempts": tried, "duplicates_cancelled": list(self.duplicates_cancelled)}
        if any(rig.publication is not None and rig.publication.images for rig in self.rigging):
            doc["images"] = images_json(self.pushed)
        if self.watch.follow is not d.Follow.end:
            return doc
        doc["recoveries"], doc["cost"] = summary["recoveries"], summary["cost"]  # as update() would, in order
        self._end_event(finish, view)
        return doc

    def _succeeded(self, view: JobView) -> str:
        """The ``succeeded`` event's words: the recoveries and what the life cost."""
        summary = self._summary()
        count, estimated = summary["recoveries"], summary["cost"]["estimated"]
        cost = "cost unknown (no list price)" if estimated is None else f"about {usd(estimated)} (list prices × run time)"
        return f"{view.name} succeeded after {count} {'recovery' if count == 1 else 'recoveries'}, {cost}"

    def _refusal(self, finish: d.Finish) -> errors.VxtrainError:
        """The single rung's own refusal, saying it was capacity and what ``fallback:`` would do."""
        assert finish.refusal is not None  # a refused ending carries its refusal
        _, exc = self.refusals[(finish.refusal.attempt, finish.refusal.rung)]
        if isinstance(exc, errors.NoCapacity):  # the preflight's finding: exit 5, its report kept
            return errors.NoCapacity(f"{exc}; {d.FALLBACK_HINT}", exc.report, details=self._summary())
        assert isinstance(exc, errors.ApiError)  # a quota refusal at create
        return exc.reworded(f"{exc}; {d.FALLBACK_HINT}")

    def _end_event(self, finish: d.Finish, view: JobView | None, text: str | None = None) -> None:
        if finish.event is None:
            return
        last = self.decision.tried[-1] if self.decision.tried else None
        attempt = last.attempt if last else 0
        if text is None:
            if finish.ending is d.Ending.refused:
                text = f"no capacity: {self._refusal(finish)}"
            elif finish.event == "succeeded" and view is not None:
                text = self._succeeded(view)
            else:
                text = finish.note or finish.message
        name = view.name if view else (last.view.name if last and last.view else None)
        state = view.state.value if view else (last.view.state.value if last and last.view else None)
        self._notify(finish.event, attempt, last.rung if last else 0, name, state, text)

    def _summary(self) -> _Summary:
        """``recoveries`` and ``cost``: what every job of the life cost as it ran."""
        tried, standard = self.decision.tried, self.decision.standard_from
        entries: list[AttemptCostJson] = []
        for t in tried:
            if t.view is None:
                continue
            planned = self.plan.rungs[t.rung]
            job = planned.job if self.plan.recovery is None else d.attempt_job(
                planned.job, t.attempt, standard=standard is not None and t.attempt >= standard)
            entries.append({**attempt_cost(t.attempt, t.view, job_per_hour(job, planned.region)), "rung": t.rung})
        return {"recoveries": self.decision.recoveries, "cost": cost_json(entries)}

    # --- what is said outside the loop -------------------------------------------------------

    def _warn_recovery(self) -> None:
        if self.plan.recovery is None or self.watch.follow is d.Follow.end:
            return
        resume = self.options.resume(self.plan.key, "--wait")
        bucket = bucket_name(self.rigging[0].staging_bucket) if self.watch.explicit else None
        if bucket is not None:
            self.session.log.warning(
                "recovery: acts while a follower carries the job, and this submit does not follow it to its end: "
                "`%s` or `vxtrain reconcile --bucket gs://%s` (its plan is kept there) carries it on", resume, bucket)
            return
        self.session.log.warning(
            "recovery: acts while submit --wait follows the job, and this submit does not follow it to its end: "
            "`%s` later follows it and recovers it; without a staging bucket only such a follower can carry it "
            "(with --staging-bucket and --idempotency-key, `vxtrain reconcile` can, from anywhere)", resume)

    def _interrupted(self) -> None:
        """Ctrl-C: say the key, so the life can be resumed, and (a ladder whose key vxtrain made up)
        cancel the job still waiting for machines, so no rung is left pending behind the user's
        back (a resume counts it as left for capacity). A job already running is left running."""
        if self.watch.explicit:
            return
        last = self.decision.tried[-1] if self.decision.tried else None
        current = next((s for s in self.seen.values() if not s.view.state.terminal), None)
        if len(self.plan.rungs) > 1:
            rung = current.rung if current else (last.rung if last else 0)
            self.session.log.warning("interrupted on rung %d (%s): resume this ladder with --idempotency-key %s (`%s`)",
                                     rung, self.plan.rungs[rung].region, shlex.quote(self.plan.key),
                                     self.options.resume(self.plan.key, *self._follow_flags()))
            if current is not None and current.view.state.waiting:
                self._cancel_left(current.view)
        if self.plan.recovery is not None:
            attempt = current.attempt if current else (last.attempt if last else 0)
            self.session.log.warning("interrupted at attempt %d: resume watching (and recovering) with "
                                     "--idempotency-key %s --wait (`%s`)", attempt, shlex.quote(self.plan.key),
                                     self.options.resume(self.plan.key, "--wait"))

    def _follow_flags(self) -> tuple[str, ...]:
        """The flags that follow as this submit followed (a resume line repeats them)."""
        flags = {d.Follow.end: ("--wait",), d.Follow.until_running: ("--until-running",), d.Follow.none: ()}
        pending = () if self.watch.max_pending is None else ("--max-pending", f"{self.watch.max_pending:g}s")
        return (*flags[self.watch.follow], *pending)

    def _known(self) -> JobViewJson:
        """What an interrupted submit knew: the job it stood on (its state as last seen), what
        each rung and attempt came to, and the line that resumes the life."""
        current = next((s for s in self.seen.values() if not s.view.state.terminal), None)
        if current is None and self.seen:
            current = max(self.seen.values(), key=lambda s: s.view.create_time or "")
        view: JobViewJson = current.view.to_json() if current is not None else {"name": None, "state": None}
        return {**view, "attempts": [t.to_json() for t in self.decision.tried], "interrupted": True,
                "resume": self.options.resume(self.plan.key, *self._follow_flags())}

    def _cancel_left(self, view: JobView) -> None:
        try:
            self.session.cancel_call(view.name)
            self.session.log.warning("cancelled %s, still %s: the interrupted ladder leaves no job waiting for "
                                     "machines", view.name, view.state.value)
        except errors.ApiError as exc:
            self.session.log.warning("could not cancel what rung %d left waiting (%s): `vxtrain list --label "
                                     "vxtrain_rung=%d` shows it", view.label_number("vxtrain_rung") or 0, exc,
                                     view.label_number("vxtrain_rung") or 0)
