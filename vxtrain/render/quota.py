"""The quota report for people (``vxtrain quota``): one row per quota metric, the job's
need against the project's limit in its region, and what the figures can and cannot say.

:mod:`vxtrain.submission.quota` sets the needs against the limits; this lays the
report out with rich (imported with this module, which only a text report loads).
"""
from __future__ import annotations

from rich.console import JustifyMethod
from rich.markup import escape
from rich.table import Table

from vxtrain.render import console
from vxtrain.submission.quota import FROM_QUOTA_INFOS, QuotaReport, QuotaRow

#: The mark of a metric whose name the project's ListQuotaInfos answer confirmed (no catalog row).
_CONFIRMED = "*"
_FITS = {True: "[green]yes[/]", False: "[bold red]NO[/]", None: "?"}
_COLUMNS: tuple[tuple[str, JustifyMethod], ...] = (
    ("metric", "left"), ("counts", "left"), ("needed", "right"), ("limit", "right"), ("fits", "left"))


def quota_text(report: QuotaReport) -> None:
    """Print the report on stdout: the table, then what is short and what the check cannot know;
    then the same for each rung of ``fallback:``."""
    out = console()
    ladder = [("", report), *((f"Rung {number} (fallback[{number - 1}]): ", rung)
                              for number, rung in enumerate(report.fallback, 1))]
    for heading, each in ladder:
        table = Table(title=f"{heading}Quota (project {escape(each.project)}, {escape(each.region)})",
                      title_justify="left")
        for name, justify in _COLUMNS:
            table.add_column(name, justify=justify)
        for row in each.rows:
            table.add_row(escape(_metric(row)), escape(row.resource), _number(row.needed), _number(row.limit),
                          _FITS[row.fits])
        out.print(table)
        for line in notes(each):
            out.print(escape(line))
    out.print(escape("Limits only: the Cloud Quotas API has no usage, and other jobs share these quotas; "
                     "the service decides at create (docs/capacity.md)."))


def notes(report: QuotaReport) -> list[str]:
    """Plain lines under one table: a failed read, what is short, what ``?`` means."""
    lines = []
    if report.unreadable is not None:
        lines.append(f"The limits could not be read: {report.unreadable}")
    if not report.rows:
        lines.append("The job needs no training quota (it runs on a persistent resource's machines).")
    if any(row.fits is None for row in report.rows):
        lines.append("?: unknown (no source names the metric or its unit, or the project has no entry for it).")
    if any(row.source == FROM_QUOTA_INFOS for row in report.rows):
        lines.append(f"{_CONFIRMED}: no catalog row names this metric; the documented pattern's name, listed by the "
                     f"project's own Cloud Quotas answer ({FROM_QUOTA_INFOS}).")
    if not report.fits:
        lines.append(report.message())
    return lines


def _metric(row: QuotaRow) -> str:
    """The short metric name (or ``(unknown)``), with its quota ID when it differs."""
    short = row.metric.rpartition("/")[2] if row.metric else "(unknown)"
    mark = f" {_CONFIRMED}" if row.source == FROM_QUOTA_INFOS else ""
    return (f"{short} ({row.quota_id})" if row.quota_id and row.quota_id != short else short) + mark


def _number(value: int | None) -> str:
    return "?" if value is None else str(value)
