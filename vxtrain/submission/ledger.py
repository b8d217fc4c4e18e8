"""The ledger: the jobs vxtrain made, read back from the Job API, with what each waited,
ran and cost (``vxtrain jobs``, ``vxtrain cost``; the ui's jobs page reads the same records).

Every job vxtrain creates carries its key, its ``fallback:`` rung and its recovery attempt
as labels (vxtrain.model.IDEMPOTENCY_LABEL, RUNG_LABEL, ATTEMPT_LABEL), so the Job API is
the ledger: nothing is stored beside it. :func:`read` lists each region of a
:class:`Query` (CustomJobs, then HyperparameterTuningJobs: one paged series each, the
labels and the create time narrowed by the server's filter) into a :class:`Ledger`, whose
jobs are grouped by key, then attempt, then rung (:attr:`Ledger.keys`).

Each job is priced by the one pricing function plan and recovery use
(vxtrain.planning.cost.sent_cost: the job's own workerPoolSpecs and scheduling.strategy,
Spot prices under SPOT) × the time it ran, up to ``now`` while it runs: an estimate
(list prices, no discounts), and a price the catalog lacks leaves the job unpriced, never
guessed. :func:`queue_stats` gives the queue wait's (create → start) percentiles per
machine and region, :func:`cost_report` the spend grouped by key, a label, machine,
region or day. Pure data: vxtrain.render.ledger lays it out.
"""
from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any, TextIO, TypedDict

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.model import ATTEMPT_LABEL, RUNG_LABEL
from vxtrain.planning.cost import CURRENCY, Unknown, sent_cost
from vxtrain.submission.names import LABEL_KEY, build_filter, label_value
from vxtrain.submission.session import Session
from vxtrain.submission.views import COST_BASIS, JobView, job_view, run_usd
from vxtrain.vocab.kinds import CUSTOM, TUNING, JobKind, JobState, job_spec_of, kind_of_job
from vxtrain.vocab.timestamps import format_time, parse_time

# Annotations only: a TypedDict class costs ~15 µs a field to create (measured).
if TYPE_CHECKING:
    from vxtrain.planning.cost import UnknownJson

    class LedgerJobJson(TypedDict):
        """One job of ``vxtrain jobs``' document."""

        name: str
        rung: int | None
        region: str
        state: str
        create_time: str | None
        start_time: str | None
        end_time: str | None
        queued_s: float | None
        ran_s: float
        cost_usd: float | None
        machine: str
        kind: str
        pricing: str
        per_hour: float | None


    class AttemptJson(TypedDict):
        """One attempt of a key in ``vxtrain jobs``' document."""

        attempt: int | None
        jobs: list[LedgerJobJson]


    class KeyJobsJson(TypedDict):
        """One key in ``vxtrain jobs``' document (``key`` null: the jobs without one)."""

        key: str | None
        state: str
        cost_usd: float | None
        attempts: list[AttemptJson]


    class LedgerJson(TypedDict):
        """``vxtrain jobs``' document (docs/cli.md)."""

        keys: list[KeyJobsJson]
        project: str
        regions: list[str]
        since: str | None
        as_of: str
        estimated: bool
        basis: str


    class QueueStatJson(TypedDict):
        """The queue wait of one machine in one region (``p50_s``, ``p90_s``: PERCENTILES)."""

        machine: str
        region: str
        started: int
        waiting: int
        never_started: int
        p50_s: float | None
        p90_s: float | None


    class CostGroupJson(TypedDict):
        """One group of ``vxtrain cost``' document."""

        group: str | None
        jobs: int
        hours: float
        usd: float


    class UnpricedJson(TypedDict):
        """A job of ``vxtrain cost``' ``unpriced``."""

        name: str
        region: str
        state: str
        machine: str
        hours: float
        pricing: str
        unknown: list[UnknownJson]


    class CostReportJson(TypedDict):
        """``vxtrain cost``' document (docs/cli.md)."""

        currency: str
        estimated: bool
        since: str | None
        groups: list[CostGroupJson]
        total_usd: float
        unpriced: list[UnpricedJson]
        by: str
        total_jobs: int
        total_hours: float
        as_of: str
        basis: str

#: How text names the group of jobs that carry no vxtrain key (JSON: ``"key": null``).
NO_KEY = "(no key)"
#: The kinds a region's ledger lists, in this order: one paged List series each.
KINDS: tuple[JobKind, ...] = (CUSTOM, TUNING)
#: ``vxtrain cost --by``: the groupings (and ``label:NAME``).
BY = ("key", "machine", "region", "day")
LABEL_BY = "label:"
#: The first cells of the CSV's total row and of an unpriced job's row.
TOTAL, UNPRICED = "(total)", "(unpriced)"
#: The percentiles ``jobs --stats`` gives of the queue wait.
PERCENTILES = (50, 90)
_DIGITS = 8  # the price catalog's precision


# --- what to list ------------------------------------------------------------------------

@dataclass(frozen=True)
class Query:
    """Which jobs the ledger lists: ``project``'s jobs in ``regions`` (each region one series
    of List calls per kind), created at or after ``since`` (None: all), carrying ``key``
    (the ``--idempotency-key`` as given; its label value is looked for) and ``labels``, in
    one of ``states`` (empty: any)."""

    project: str
    regions: tuple[str, ...]
    key: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    since: datetime | None = None
    states: frozenset[JobState] = frozenset()

    def filter(self) -> str:
        """The List filter (AIP-160) the server narrows by: the labels and the create time, which
        ListCustomJobs filters on ("create_time supports =, !=, <, <=, >, >=", RFC 3339:
        https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs/list).
        States are matched on the jobs listed (:meth:`keeps`)."""
        labels = {**self.labels, **({LABEL_KEY: label_value(self.key)} if self.key is not None else {})}
        parts = [build_filter(labels=labels)]
        if self.since is not None:
            parts.append(f'create_time>="{format_time(self.since)}"')
        return " AND ".join(part for part in parts if part)

    def keeps(self, view: JobView) -> bool:
        """Whether a listed job is in one of the states asked for."""
        return not self.states or view.state in self.states


# --- one job -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Machines:
    """One pool of a job: its machine (``n1-standard-8 + 4 × NVIDIA_TESLA_T4``), how many run
    at once (replicas × hosts, × a study's parallel trials) and what they cost per hour."""

    machine: str
    nodes: int
    per_hour: float | None


@dataclass(frozen=True)
class LedgerJob:
    """One job as the ledger shows it: its view, where it ran, its machines and their price,
    and ``now``, up to which a running job's time and cost count."""

    view: JobView
    region: str
    kind: JobKind
    #: USD per hour of the whole job (vxtrain.planning.cost.sent_cost), None when a price is unknown.
    per_hour: float | None
    #: Which price list priced it: on-demand, spot, flex_start or persistent_resource.
    pricing: str
    pools: tuple[Machines, ...]
    #: The prices the catalog lacks (vxtrain.planning.cost.Unknown), when ``per_hour`` is None.
    unknown: tuple[Unknown, ...]
    now: datetime

    @property
    def key(self) -> str | None:
        """The job's key (its idempotency label's value), None for a job vxtrain did not label."""
        return self.view.idempotency_key

    @property
    def rung(self) -> int | None:
        """Its ``fallback:`` rung (0 for a keyed job without the label, as decide reads it)."""
        number = self.view.label_number(RUNG_LABEL)
        return number if number is not None or self.key is None else 0

    @property
    def attempt(self) -> int | None:
        """Its recovery attempt (0 for a keyed job without the label, as decide reads it)."""
        number = self.view.label_number(ATTEMPT_LABEL)
        return number if number is not None or self.key is None else 0

    @property
    def machine(self) -> str:
        """The machine of its first pool (the chief's; ``?`` for a job with no pool)."""
        return self.pools[0].machine if self.pools else "?"

    @property
    def created(self) -> datetime | None:
        """When it was created."""
        return _time(self.view.create_time)

    @property
    def started(self) -> datetime | None:
        """When it started running (None: it never did, or not yet)."""
        return _time(self.view.start_time)

    @property
    def ended(self) -> datetime | None:
        """When it ended (None while it is alive)."""
        return _time(self.view.end_time)

    @property
    def queued_s(self) -> float | None:
        """Seconds from create to start; to its end for a job that ended without starting, to
        ``now`` for one still waiting (None without a create time)."""
        created = self.created
        if created is None:
            return None
        until = self.started or self.ended or self.now
        return round(max((until - created).total_seconds(), 0.0), 3)

    @property
    def ran_s(self) -> float:
        """Seconds it ran: start to end, to ``now`` while it runs; 0 when it never started."""
        start = self.started
        if start is None:
            return 0.0
        return round(max(((self.ended or self.now) - start).total_seconds(), 0.0), 3)

    @property
    def hours(self) -> float:
        """Hours it ran."""
        return self.ran_s / 3600

    @property
    def cost_usd(self) -> float | None:
        """``per_hour`` × the hours it ran (0 when it never ran; None when a price is unknown)."""
        return run_usd(self.hours, self.per_hour)

    def to_json(self) -> LedgerJobJson:
        """``{"name", "rung", "region", "state", "create_time", "start_time", "end_time",
        "queued_s", "ran_s", "cost_usd"}``, then ``machine``, ``kind``, ``pricing`` and
        ``per_hour``."""
        view = self.view
        return {"name": view.name, "rung": self.rung, "region": self.region, "state": view.state.value,
                "create_time": view.create_time, "start_time": view.start_time, "end_time": view.end_time,
                "queued_s": self.queued_s, "ran_s": self.ran_s, "cost_usd": self.cost_usd,
                "machine": self.machine, "kind": self.kind.label, "pricing": self.pricing,
                "per_hour": self.per_hour}


def ledger_job(job: JobDict, region: str, now: datetime, *, emulated: bool = False) -> LedgerJob:
    """A listed job (REST JSON) priced as it was sent."""
    cost = sent_cost(job, region)
    trials = (cost.parallel_trials or 1) if cost.study else 1
    pools = job_spec_of(job).get("workerPoolSpecs") or []
    machines = tuple(Machines(_machine_name(pools[pool.index]) if pool.index < len(pools) else "?",
                              (pool.replicas or 0) * pool.hosts * trials,
                              None if pool.per_hour is None else round(pool.per_hour * trials, _DIGITS))
                     for pool in cost.pools)
    per_hour = cost.per_hour
    return LedgerJob(job_view(job, emulated=emulated), region, kind_of_job(job),
                     None if per_hour is None else round(per_hour, _DIGITS), cost.pricing, machines,
                     tuple(cost.unknown), now)


def _machine_name(pool: Mapping[str, Any]) -> str:
    """``n1-standard-8``, or ``n1-standard-8 + 4 × NVIDIA_TESLA_T4`` with accelerators."""
    spec = pool.get("machineSpec") or {}
    name = str(spec.get("machineType") or "?")
    count = _count(spec.get("acceleratorCount"))
    if spec.get("acceleratorType") and count:
        name += f" + {count} × {spec['acceleratorType']}"
    return name


def _count(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return parse_time(text)
    except ValueError:
        return None


# --- keys, attempts, rungs ---------------------------------------------------------------

@dataclass(frozen=True)
class Attempt:
    """The jobs of one recovery attempt of a key, by rung (``attempt`` None: jobs without a key)."""

    attempt: int | None
    jobs: tuple[LedgerJob, ...]

    def to_json(self) -> AttemptJson:
        """``{"attempt", "jobs": [...]}``."""
        return {"attempt": self.attempt, "jobs": [job.to_json() for job in self.jobs]}


@dataclass(frozen=True)
class KeyJobs:
    """Every job of one key (``key`` None: the jobs that carry none), by attempt."""

    key: str | None
    attempts: tuple[Attempt, ...]

    @property
    def jobs(self) -> tuple[LedgerJob, ...]:
        """Its jobs, attempt by attempt."""
        return tuple(job for attempt in self.attempts for job in attempt.jobs)

    @property
    def newest(self) -> LedgerJob:
        """Its last-created job (the one that says where the key stands)."""
        return max(self.jobs, key=_created_order)

    @property
    def state(self) -> JobState:
        """The state of its newest job."""
        return self.newest.view.state

    @property
    def cost_usd(self) -> float | None:
        """The sum of its jobs' costs; None when any job's price is unknown (a partial sum would
        read as the whole)."""
        return _sum([job.cost_usd for job in self.jobs])

    def to_json(self) -> KeyJobsJson:
        """``{"key", "state", "cost_usd", "attempts": [...]}`` (``key`` null: no key)."""
        return {"key": self.key, "state": self.state.value, "cost_usd": self.cost_usd,
                "attempts": [attempt.to_json() for attempt in self.attempts]}


@dataclass(frozen=True)
class Ledger:
    """The jobs a :class:`Query` found, read at ``now``."""

    query: Query
    now: datetime
    jobs: tuple[LedgerJob, ...]

    @cached_property
    def keys(self) -> tuple[KeyJobs, ...]:
        """The jobs grouped by key (the most recently active key first; the jobs without a key
        last), each key's by attempt, each attempt's by rung then create time (grouped once)."""
        by_key: dict[str | None, list[LedgerJob]] = defaultdict(list)
        for job in self.jobs:
            by_key[job.key].append(job)
        groups = [_key_jobs(key, jobs) for key, jobs in by_key.items()]
        return tuple(sorted(groups, key=lambda g: (g.key is None, _newest_first(g.newest))))

    def stats(self) -> list[QueueStat]:
        """The queue wait (create → start) per machine and region (:func:`queue_stats`)."""
        return queue_stats(self.jobs)

    def to_json(self) -> LedgerJson:
        """``{"keys": [...]}`` (the contract's), then ``project``, ``regions``, ``since``
        and ``as_of`` (the time running jobs are counted to)."""
        return {"keys": [group.to_json() for group in self.keys], "project": self.query.project,
                "regions": list(self.query.regions),
                "since": None if self.query.since is None else format_time(self.query.since),
                "as_of": format_time(self.now), "estimated": True, "basis": COST_BASIS}


def _key_jobs(key: str | None, jobs: list[LedgerJob]) -> KeyJobs:
    by_attempt: dict[int | None, list[LedgerJob]] = defaultdict(list)
    for job in jobs:
        by_attempt[job.attempt].append(job)
    attempts = [Attempt(number, tuple(sorted(group, key=lambda j: (j.rung or 0, _created_order(j)))))
                for number, group in by_attempt.items()]
    return KeyJobs(key, tuple(sorted(attempts, key=lambda a: -1 if a.attempt is None else a.attempt)))


def _created_order(job: LedgerJob) -> tuple[datetime, str]:
    return job.created or datetime.min.replace(tzinfo=timezone.utc), job.view.name


def _newest_first(job: LedgerJob) -> tuple[float, str]:
    created = job.created
    return -(created.timestamp() if created is not None else 0.0), job.view.name


def _sum(values: Sequence[float | None]) -> float | None:
    return None if any(v is None for v in values) else round(sum(v for v in values if v is not None), _DIGITS)


# --- reading ----------------------------------------------------------------------------

def read(session: Session, query: Query, *, now: datetime | None = None) -> Ledger:
    """The ledger of ``query``: for each region, every page of ListCustomJobs, then of
    ListHyperparameterTuningJobs, under the query's filter (so the calls are, per region and
    kind, the pages the jobs fill: at least one). ``now`` (default: once every page is read)
    is the time running jobs are counted to."""
    if not query.regions:
        raise errors.UsageError("the ledger needs at least one region")
    where = query.filter()
    listed = [(region, job) for region in dict.fromkeys(query.regions) for kind in KINDS
              for job in session.list_jobs(query.project, region, where, kind)]
    now = now or datetime.now(timezone.utc)
    jobs = (ledger_job(job, region, now, emulated=session.emulated) for region, job in listed)
    return Ledger(query, now, tuple(job for job in jobs if query.keeps(job.view)))


# --- the queue wait: create → start -------------------------------------------------------

@dataclass(frozen=True)
class QueueStat:
    """The queue wait of the jobs of one machine (their first pool's) in one region."""

    machine: str
    region: str
    #: The waits (seconds, create → start) of the jobs that started.
    waits: tuple[float, ...]
    #: Jobs still QUEUED or PENDING.
    waiting: int
    #: Jobs that ended without ever starting (a stockout, a cancel while pending).
    never_started: int

    @property
    def started(self) -> int:
        """How many started."""
        return len(self.waits)

    def percentile(self, q: float) -> float | None:
        """The ``q``-th percentile of the waits (None when no job started)."""
        return percentile(self.waits, q)

    def to_json(self) -> QueueStatJson:
        """``{"machine", "region", "started", "waiting", "never_started", "p50_s", "p90_s"}``
        (the PERCENTILES, named one by one: a key of the document per percentile)."""
        return {"machine": self.machine, "region": self.region, "started": self.started,
                "waiting": self.waiting, "never_started": self.never_started,
                "p50_s": self._rounded(50), "p90_s": self._rounded(90)}

    def _rounded(self, q: float) -> float | None:
        value = self.percentile(q)
        return None if value is None else round(value, 3)


def queue_stats(jobs: Iterable[LedgerJob]) -> list[QueueStat]:
    """The queue wait per machine and region, in that order. Only jobs that started have a wait;
    those still waiting and those that never started are counted beside it, not guessed into it."""
    groups: dict[tuple[str, str], list[LedgerJob]] = defaultdict(list)
    for job in jobs:
        groups[job.machine, job.region].append(job)
    stats = []
    for (machine, region), members in sorted(groups.items()):
        waits = tuple(sorted(j.queued_s for j in members if j.started is not None and j.queued_s is not None))
        waiting = sum(1 for j in members if j.started is None and j.view.state.waiting)
        never = sum(1 for j in members if j.started is None and j.view.state.terminal)
        stats.append(QueueStat(machine, region, waits, waiting, never))
    return stats


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` by linear interpolation between the closest
    ranks (numpy.percentile's default, Hyndman and Fan's type 7); None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = (len(ordered) - 1) * q / 100
    low, high = math.floor(rank), math.ceil(rank)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


# --- spend --------------------------------------------------------------------------------

@dataclass(frozen=True)
class CostGroup:
    """The spend of one group: how many jobs, their hours (node-hours for ``--by machine``) and USD."""

    group: str | None
    jobs: int
    hours: float
    usd: float

    def to_json(self) -> CostGroupJson:
        """``{"group", "jobs", "hours", "usd"}``."""
        return {"group": self.group, "jobs": self.jobs, "hours": round(self.hours, 6),
                "usd": round(self.usd, _DIGITS)}


@dataclass(frozen=True)
class CostReport:
    """What the ledger's jobs cost, grouped ``by``: the priced jobs in ``groups``, the jobs that
    ran with a price the catalog lacks in ``unpriced`` (never guessed)."""

    by: str
    since: datetime | None
    now: datetime
    groups: tuple[CostGroup, ...]
    unpriced: tuple[LedgerJob, ...]
    #: How many jobs the groups hold (under machine and day a job may be in several groups).
    priced: int

    @property
    def total_usd(self) -> float:
        """The priced jobs' spend."""
        return round(sum(group.usd for group in self.groups), _DIGITS)

    @property
    def total_hours(self) -> float:
        """The groups' hours (node-hours under machine)."""
        return round(sum(group.hours for group in self.groups), 6)

    def to_json(self) -> CostReportJson:
        """``{"currency", "estimated": true, "since", "groups", "total_usd", "unpriced"}``, then
        ``by``, ``total_jobs``, ``total_hours``, ``as_of`` and ``basis``."""
        return {"currency": CURRENCY, "estimated": True,
                "since": None if self.since is None else format_time(self.since),
                "groups": [group.to_json() for group in self.groups], "total_usd": self.total_usd,
                "unpriced": [_unpriced_json(job) for job in self.unpriced], "by": self.by,
                "total_jobs": self.priced, "total_hours": self.total_hours,
                "as_of": format_time(self.now), "basis": COST_BASIS}


    def write_csv(self, out: TextIO) -> None:
        """The groups as CSV (RFC 4180, by the csv module): a header ``group,jobs,hours,usd``, a
        row per group (an empty group: no key, no such label), then ``(total)``, then one
        ``(unpriced) NAME`` row per unpriced job, its USD empty."""
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([self.by, "jobs", "hours", "usd"])
        for group in self.groups:
            writer.writerow([group.group or "", group.jobs, f"{group.hours:.6f}", f"{group.usd:.8f}"])
        writer.writerow([TOTAL, self.priced, f"{self.total_hours:.6f}", f"{self.total_usd:.8f}"])
        for job in self.unpriced:
            writer.writerow([f"{UNPRICED} {job.view.name}", 1, f"{job.hours:.6f}", ""])


def _unpriced_json(job: LedgerJob) -> UnpricedJson:
    return {"name": job.view.name, "region": job.region, "state": job.view.state.value,
            "machine": job.machine, "hours": round(job.hours, 6), "pricing": job.pricing,
            "unknown": [u.to_json() for u in job.unknown]}


#: What one job adds to the groups: (group, hours, USD) shares.
Shares = Callable[[LedgerJob], Iterator[tuple[str | None, float, float]]]


def check_by(by: str) -> str:
    """``by`` when it is one of :data:`BY` or ``label:NAME``; UsageError otherwise."""
    if by in BY or (by.startswith(LABEL_BY) and by[len(LABEL_BY):]):
        return by
    raise errors.UsageError(f"--by takes {', '.join(BY)} or label:NAME (label:team); got {by!r}")


def cost_report(ledger: Ledger, by: str = "key") -> CostReport:
    """The ledger's spend grouped ``by`` key, ``label:NAME`` (the label's value), machine (each
    pool's machine on its own: node-hours and its share of the price), region or day (UTC; a
    run over midnight split between its days). Groups by USD, most first (days in order)."""
    check_by(by)
    shares = _SHARES[by] if by in _SHARES else _label_shares(by[len(LABEL_BY):])
    members: dict[str | None, set[str]] = defaultdict(set)
    sums: dict[str | None, list[float]] = defaultdict(lambda: [0.0, 0.0])
    unpriced, priced = [], 0
    for job in ledger.jobs:
        if job.cost_usd is None:
            unpriced.append(job)
            continue
        priced += 1
        for group, hours, usd in shares(job):
            members[group].add(job.view.name)
            sums[group][0] += hours
            sums[group][1] += usd
    groups = [CostGroup(group, len(members[group]), hours, usd) for group, (hours, usd) in sums.items()]
    order: Callable[[CostGroup], Any] = ((lambda g: g.group or "") if by == "day"
                                         else (lambda g: (-round(g.usd, _DIGITS), g.group is None, g.group or "")))
    return CostReport(by, ledger.query.since, ledger.now, tuple(sorted(groups, key=order)), tuple(unpriced), priced)


def _whole(group: Callable[[LedgerJob], str | None]) -> Shares:
    def shares(job: LedgerJob) -> Iterator[tuple[str | None, float, float]]:
        yield group(job), job.hours, job.cost_usd or 0.0
    return shares


def _label_shares(name: str) -> Shares:
    return _whole(lambda job: job.view.labels.get(name))


def _machine_shares(job: LedgerJob) -> Iterator[tuple[str | None, float, float]]:
    """Each pool's node-hours and its part of the job's cost (the job's cost split as its price
    is, so the parts add up to the job's cost exactly)."""
    for pool in job.pools:
        part = (pool.per_hour or 0.0) / job.per_hour if job.per_hour else 0.0
        yield pool.machine, pool.nodes * job.hours, (job.cost_usd or 0.0) * part


def _day_shares(job: LedgerJob) -> Iterator[tuple[str | None, float, float]]:
    """A run's hours and cost per UTC day it ran on; a job that never ran counts on its create day."""
    start, cost = job.started, job.cost_usd or 0.0
    if start is None or job.ran_s == 0:
        created = job.created or job.now
        yield created.date().isoformat(), 0.0, 0.0
        return
    end = start + timedelta(seconds=job.ran_s)
    while start < end:
        midnight = datetime.combine(start.date() + timedelta(days=1), datetime.min.time(), timezone.utc)
        part = min(end, midnight)
        hours = (part - start).total_seconds() / 3600
        yield start.date().isoformat(), hours, cost * hours / job.hours
        start = part


_SHARES: dict[str, Shares] = {
    "key": _whole(lambda job: job.key),
    "region": _whole(lambda job: job.region),
    "machine": _machine_shares,
    "day": _day_shares,
}
