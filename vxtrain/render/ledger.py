"""The ledger for people: ``vxtrain jobs`` (keys → attempts → rungs, with each job's times,
queue wait, run time and estimated cost), ``jobs --stats`` (the queue wait's percentiles) and
``vxtrain cost`` (spend by group), as rich tables on stdout.

The figures are data (vxtrain.submission.ledger); this lays them out. Times are UTC, as the
Job API gives them; money is worded as the cost plan words it (vxtrain.planning.cost.usd).
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich import box
from rich.markup import escape
from rich.table import Table

from vxtrain.diagnostics import plural
from vxtrain.planning.cost import usd
from vxtrain.render import console
from vxtrain.submission.ledger import NO_KEY, PERCENTILES, CostReport, KeyJobs, Ledger, LedgerJob, QueueStat
from vxtrain.submission.views import COST_BASIS
from vxtrain.vocab.kinds import JobState

#: A state's colour: done well, done badly, under way.
_STYLE = {JobState.SUCCEEDED: "green", JobState.FAILED: "red", JobState.EXPIRED: "red",
          JobState.CANCELLED: "yellow", JobState.CANCELLING: "yellow", JobState.RUNNING: "cyan",
          JobState.PENDING: "magenta", JobState.QUEUED: "magenta"}
#: The job's column holds its key on the key's first row (the key, its jobs, its state and cost).
_JOB_COLUMNS = ("att.", "rung", "region", "key / job", "state", "created", "started", "ended", "queued", "ran",
                "cost")
_NO_WRAP = {"att.", "rung", "region", "state", "created", "started", "ended", "queued", "ran", "cost"}
#: A job id's digits (Vertex AI's are 19), never folded.
_ID_WIDTH = 19
_RIGHT = {"att.", "rung", "queued", "ran", "cost", "jobs", "hours", "usd", "started #", "p50", "p90",
          "waiting", "never started"}
#: The mark of a cost that is an estimate, explained under every table.
_ESTIMATED = f"Estimated: {COST_BASIS} (running jobs up to now); ? = a price the catalog lacks, never guessed."


def jobs_text(ledger: Ledger) -> None:
    """Print the ledger: one section per key (its state and cost on its first row), then its
    jobs attempt by attempt, rung by rung; what the table covers and what its costs are."""
    if not ledger.jobs:
        console(stderr=True).print(escape(f"no jobs in {_where(ledger)}"))
        return
    out = console()
    # SIMPLE_HEAD: no rules between columns, so twelve of them fit in 120 (a piped console's width).
    table = Table(title=escape(f"Jobs in {_where(ledger)}"), title_justify="left", box=box.SIMPLE_HEAD,
                  pad_edge=False, collapse_padding=True)
    for name in _JOB_COLUMNS:
        table.add_column(name, justify="right" if name in _RIGHT else "left", no_wrap=name in _NO_WRAP,
                         min_width=_ID_WIDTH if name == "key / job" else None, overflow="fold")
    for group in ledger.keys:
        table.add_row(*_key_row(group), style="bold")
        for attempt in group.attempts:
            for index, job in enumerate(attempt.jobs):
                table.add_row(*_job_row(job, attempt.attempt if index == 0 else None))
        table.add_section()
    out.print(table)
    out.print(escape(summary(ledger)))
    out.print(escape(_ESTIMATED + " Times UTC."))


def summary(ledger: Ledger) -> str:
    """``5 jobs: 2 keys and 1 job without a key; about $1.23 (1 unpriced)``."""
    keyed = [group for group in ledger.keys if group.key is not None]
    loose = sum(len(group.jobs) for group in ledger.keys if group.key is None)
    parts = [plural(len(keyed), "key")] + ([f"{plural(loose, 'job')} without a key"] if loose else [])
    total = sum(job.cost_usd for job in ledger.jobs if job.cost_usd is not None)
    unpriced = sum(1 for job in ledger.jobs if job.cost_usd is None)
    return (f"{plural(len(ledger.jobs), 'job')}: {' and '.join(parts)}; about {usd(total)}"
            + (f" ({unpriced} unpriced)" if unpriced else ""))


def _where(ledger: Ledger) -> str:
    query = ledger.query
    since = f", created since {_day(query.since)}" if query.since is not None else ""
    emulated = " on the emulator" if any(job.view.emulated for job in ledger.jobs) else ""
    return f"{query.project} ({', '.join(query.regions)}){emulated}{since}"


def _key_row(group: KeyJobs) -> list[str]:
    count = len(group.jobs)
    return ["", "", "", f"{escape(group.key or NO_KEY)} ({plural(count, 'job')})",
            _state(group.state), "", "", "", "", "", usd(group.cost_usd)]


def _job_row(job: LedgerJob, attempt: int | None) -> list[str]:
    return ["" if attempt is None else str(attempt), "" if job.rung is None else str(job.rung),
            escape(job.region), escape(job.view.name.rsplit("/", 1)[-1]), _state(job.view.state),
            _stamp(job.created), _stamp(job.started, job.created), _stamp(job.ended, job.created),
            duration(job.queued_s), duration(job.ran_s if job.started is not None else None), usd(job.cost_usd)]


def _state(state: JobState) -> str:
    name = state.value.removeprefix("JOB_STATE_")
    style = _STYLE.get(state)
    return f"[{style}]{name}[/]" if style else name


def _stamp(when: datetime | None, day_of: datetime | None = None) -> str:
    """``11-27 10:04:05`` (UTC); the time alone on the day of ``day_of``; ``-`` for none."""
    if when is None:
        return "-"
    return when.strftime("%H:%M:%S" if day_of is not None and when.date() == day_of.date() else "%m-%d %H:%M:%S")


def _day(when: datetime) -> str:
    return when.strftime("%Y-%m-%d %H:%M UTC")


def duration(seconds: float | None) -> str:
    """``4.2s``, ``3m05s``, ``2h05m``, ``3d04h``; ``-`` for none."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f}s"
    whole = int(seconds)
    for unit, size, small, small_size in (("d", 86400, "h", 3600), ("h", 3600, "m", 60), ("m", 60, "s", 1)):
        if whole >= size:
            return f"{whole // size}{unit}{whole % size // small_size:02d}{small}"
    return f"{seconds:.0f}s"  # not reached: 60 s and more is at least a minute


def stats_text(stats: Sequence[QueueStat]) -> None:
    """Print the queue wait (create → start) per machine and region."""
    out = console()
    table = Table(title="Queue wait (create → start)", title_justify="left")
    for name in ("machine", "region", "started #", *(f"p{q}" for q in PERCENTILES), "waiting", "never started"):
        table.add_column(name, justify="right" if name in _RIGHT else "left")
    for stat in stats:
        table.add_row(escape(stat.machine), escape(stat.region), str(stat.started),
                      *(duration(stat.percentile(q)) for q in PERCENTILES), str(stat.waiting), str(stat.never_started))
    out.print(table)
    out.print("Only jobs that started have a wait; waiting: still QUEUED or PENDING; never started: ended first "
              "(a stockout, a cancel).")


def cost_text(report: CostReport) -> None:
    """Print the spend per group, the total, and each job left unpriced with what the catalog lacks."""
    out = console()
    since = f" of jobs created since {_day(report.since)}" if report.since is not None else ""
    table = Table(title=escape(f"Estimated spend by {report.by}{since}"), title_justify="left")
    hours = "node-hours" if report.by == "machine" else "hours"
    for name in (report.by, "jobs", hours, "usd"):
        table.add_column(escape(name), justify="right" if name in _RIGHT or name == hours else "left")
    for group in report.groups:
        table.add_row(escape(group.group or "(none)"), str(group.jobs), f"{group.hours:.2f}", usd(group.usd))
    table.add_section()
    table.add_row("total", str(report.priced), f"{report.total_hours:.2f}", usd(report.total_usd), style="bold")
    out.print(table)
    for job in report.unpriced:
        missing = ", ".join(sorted({f"{u.kind} {u.name or ''}".strip() for u in job.unknown})) or "a price"
        out.print(escape(f"unpriced: {job.view.name} ({job.region}, {job.machine}, {job.hours:.2f} h): "
                         f"the catalog has no {job.pricing} price for {missing}"))
    out.print(escape(_ESTIMATED))
