"""A key's jobs as a timeline, in inline SVG (the ui's job page).

One row per job, attempt by attempt and rung by rung (the ledger's order), on one time
axis from the first create to the last end (now, for a job still alive): the queue wait
(create → start) drawn light, the run (start → end) in the colour of how the job ended,
the job the page is about outlined. Each bar carries its figures in ``data-*`` attributes
(``data-name``, ``data-attempt``, ``data-rung``, ``data-state``, ``data-queued-s``,
``data-ran-s``) and a ``<title>`` a browser shows on hover; the axis's span is on the
``<svg>`` (``data-span-s``). No script: it is drawn by the server.
"""
from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from html import escape

from vxtrain.render.ledger import duration
from vxtrain.submission.ledger import LedgerJob
from vxtrain.vocab.kinds import JobState

WIDTH = 940
LEFT, RIGHT, TOP, ROW, BAR, AXIS = 230, 20, 10, 30, 16, 34
PLOT_W = WIDTH - LEFT - RIGHT
#: Tick spacings tried, in seconds: the first giving at most :data:`MAX_TICKS` ticks is used.
STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
         172800, 604800)
MAX_TICKS = 8


def state_class(state: JobState) -> str:
    """The CSS class of a state's colour: ``succeeded``, ``failed``, ``cancelled``, ``running``
    or ``waiting``."""
    if state is JobState.SUCCEEDED:
        return "succeeded"
    if state in (JobState.FAILED, JobState.EXPIRED):
        return "failed"
    if state in (JobState.CANCELLED, JobState.CANCELLING):
        return "cancelled"
    return "running" if state is JobState.RUNNING else "waiting"


def svg(jobs: Sequence[LedgerJob], current: str | None = None) -> str:
    """The timeline of ``jobs`` (in the order given); ``current``: the name of the job to outline."""
    timed = [job for job in jobs if job.created is not None]
    if not timed:
        return '<p class="dim">No job here has a create time to draw.</p>'
    start = min(job.created for job in timed if job.created is not None)
    end = max(_end(job) for job in timed)
    span = max((end - start).total_seconds(), 1.0)
    height = TOP + ROW * len(timed) + AXIS
    parts = [f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
             f'role="img" aria-label="The jobs of this key over time" data-span-s="{span!r}" '
             f'data-left="{LEFT}" data-plot-width="{PLOT_W}">',
             *_ticks(span, TOP + ROW * len(timed))]
    for row, job in enumerate(timed):
        parts.append(_row(job, row, start, span, job.view.name == current))
    parts.append("</svg>")
    return "\n".join(parts)


def _end(job: LedgerJob) -> datetime:
    return job.ended or job.now


def _x(seconds: float, span: float) -> float:
    return round(LEFT + PLOT_W * seconds / span, 2)


def _row(job: LedgerJob, row: int, start: datetime, span: float, current: bool) -> str:
    assert job.created is not None
    y = TOP + ROW * row
    created = (job.created - start).total_seconds()
    began = (job.started - start).total_seconds() if job.started is not None else None
    finished = (_end(job) - start).total_seconds()
    queue_end = began if began is not None else finished
    state = job.view.state
    label = f"attempt {job.attempt} · rung {job.rung} · {job.region}" if job.key is not None else job.region
    title = (f"{job.view.name}\n{state.value.removeprefix('JOB_STATE_')}; queued {duration(job.queued_s)}, "
             f"ran {duration(job.ran_s)}")
    x0, xq = _x(created, span), _x(queue_end, span)
    bars = [f'<rect class="queued" x="{x0}" y="{y + (ROW - BAR) / 2}" width="{max(xq - x0, 1.0):.2f}" '
            f'height="{BAR}"/>']
    if began is not None:
        xr = _x(finished, span)
        bars.append(f'<rect class="ran {state_class(state)}" x="{xq}" y="{y + (ROW - BAR) / 2}" '
                    f'width="{max(xr - xq, 1.0):.2f}" height="{BAR}"/>')
    if current:
        xe = _x(finished, span)
        bars.append(f'<rect class="current" x="{x0 - 2}" y="{y + (ROW - BAR) / 2 - 2}" '
                    f'width="{max(xe - x0, 1.0) + 4:.2f}" height="{BAR + 4}"/>')
    attempt = "" if job.attempt is None else str(job.attempt)
    rung = "" if job.rung is None else str(job.rung)
    return (f'<g class="job {state_class(state)}" data-name="{escape(job.view.name)}" data-attempt="{attempt}" '
            f'data-rung="{rung}" data-state="{escape(state.value)}" data-queued-s="{job.queued_s!r}" '
            f'data-ran-s="{job.ran_s!r}"><title>{escape(title)}</title>'
            f'<text class="label" x="{LEFT - 8}" y="{y + ROW / 2 + 4}" text-anchor="end">{escape(label)}</text>'
            f'{"".join(bars)}</g>')


def _ticks(span: float, bottom: int) -> list[str]:
    step = next((s for s in STEPS if span / s <= MAX_TICKS), STEPS[-1])
    parts = [f'<line class="axis" x1="{LEFT}" y1="{bottom}" x2="{LEFT + PLOT_W}" y2="{bottom}"/>']
    tick = 0
    while tick <= span:
        x = _x(tick, span)
        parts.append(f'<line class="grid" x1="{x}" y1="{TOP}" x2="{x}" y2="{bottom}"/>'
                     f'<text class="tick" x="{x}" y="{bottom + 18}" text-anchor="middle">+{duration(tick)}</text>')
        tick += step
    return parts
