"""The ui's pages as HTML: the jobs table, one job, the plan page's index, and refusals.

Made on the server, every value escaped (html.escape): a job's name, labels and log lines
are data. The pages link one stylesheet and one script, both served by the ui itself
(vxtrain/ui/static): nothing is fetched from anywhere else, so the ui works offline. The
script only refreshes what the server already drew (the jobs table, a job's state) and
appends log lines; without it every page still reads, as of its load.

Elements a test or a reader looks for carry ids and ``data-*`` attributes: ``#jobs``
(``data-refresh-s``, ``data-as-of``), a row per job ``tr.job[data-name]``, a key's row
``tr.key[data-key]``, ``#timeline``, ``#cost``, ``#logs`` (``data-name``), ``#sent``.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from html import escape
from urllib.parse import urlencode

from vxtrain import __version__
from vxtrain.catalog.prices import ON_DEMAND
from vxtrain.diagnostics import plural
from vxtrain.planning.cost import usd
from vxtrain.render.ledger import duration
from vxtrain.submission.ledger import NO_KEY, KeyJobs, Ledger, LedgerJob
from vxtrain.submission.views import COST_BASIS
from vxtrain.ui import timeline
from vxtrain.ui.source import JobPage

#: The stylesheet and the script every page links (served from vxtrain/ui/static).
STYLE, SCRIPT = "/static/ui.css", "/static/ui.js"
_ESTIMATED = f"Estimated: {COST_BASIS}, running jobs up to now; ? is a price the catalog lacks, never guessed."


def layout(title: str, body: str, *, script: bool = True) -> str:
    """A whole page: ``body`` under the ui's header (Jobs, Plan)."""
    return "\n".join([
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # An empty icon: the browser would otherwise ask for /favicon.ico.
        '<link rel="icon" href="data:,">', f'<link rel="stylesheet" href="{STYLE}">',
        *([f'<script src="{SCRIPT}" defer></script>'] if script else []),
        f"<title>{escape(title)} · vxtrain ui</title>", "</head>", "<body>",
        '<nav><a class="brand" href="/">vxtrain</a><a href="/">Jobs</a><a href="/plan">Plan</a></nav>',
        "<main>", body, "</main>",
        f"<footer>vxtrain {escape(__version__)} · served on 127.0.0.1 for this browser only · "
        "read-only</footer>", "</body>", "</html>", ""])


# --- the jobs table ----------------------------------------------------------------------

def jobs_page(ledger: Ledger, refresh_s: float) -> str:
    """The jobs table, refreshing itself every ``refresh_s`` seconds (the script asks for
    :func:`jobs_section` again and puts it in place)."""
    body = (f"<h1>Jobs</h1>"
            f'<section id="jobs" data-refresh-s="{refresh_s!r}" data-src="/fragments/jobs">'
            f"{jobs_section(ledger)}</section>")
    return layout("Jobs", body)


def jobs_section(ledger: Ledger) -> str:
    """What the jobs table's section holds: where it looks, the table, the totals."""
    query = ledger.query
    since = f" · created since {_stamp(query.since)}" if query.since is not None else ""
    where = (f'<p class="meta" data-as-of="{escape(_iso(ledger.now))}">project <code>{escape(query.project)}</code>'
             f" · {escape(', '.join(query.regions))}{escape(since)} · as of {escape(_stamp(ledger.now))}</p>")
    if not ledger.jobs:
        return where + '<p class="empty">No jobs here yet.</p>'
    priced = [job.cost_usd for job in ledger.jobs if job.cost_usd is not None]
    unpriced = len(ledger.jobs) - len(priced)
    keys = ledger.keys
    totals = (f'<p class="totals">{plural(len(ledger.jobs), "job")} under {plural(len(keys), "key")}'
              f" · about <strong>{escape(usd(sum(priced)))}</strong>"
              + (f" and {unpriced} unpriced" if unpriced else "") + f'</p><p class="note">{escape(_ESTIMATED)}</p>')
    head = "".join(f'<th class="{name}{" num" if name in _NUMERIC else ""}">{_HEADS.get(name, name)}</th>'
                   for name in _COLUMNS)
    body = "".join(_key_rows(group) for group in keys)
    return f'{where}<div class="scroll"><table class="jobs"><thead><tr>{head}</tr></thead>{body}</table></div>{totals}'


_COLUMNS = ("attempt", "rung", "region", "job", "machine", "state", "created", "queued", "ran", "cost")
_NUMERIC = {"attempt", "rung", "queued", "ran", "cost"}
_HEADS = {"created": "created (UTC)"}


def _key_rows(group: KeyJobs) -> str:
    key = group.key or NO_KEY
    count = len(group.jobs)
    head = (f'<tr class="key" data-key="{escape(group.key or "")}"><td colspan="5"><span class="keyname">'
            f"{escape(key)}</span> <span class=\"dim\">{plural(count, 'job')}, "
            f"{plural(len(group.attempts), 'attempt')}</span></td>"
            f"<td>{_state(group.state.value)}</td><td></td><td></td><td></td>"
            f'<td class="num">{escape(usd(group.cost_usd))}</td></tr>')
    rows = [_job_row(job, attempt.attempt if index == 0 else None)
            for attempt in group.attempts for index, job in enumerate(attempt.jobs)]
    return f'<tbody class="key">{head}{"".join(rows)}</tbody>'


def _job_row(job: LedgerJob, attempt: int | None) -> str:
    name = job.view.name
    cells = ["" if attempt is None else str(attempt), "" if job.rung is None else str(job.rung), escape(job.region),
             f'<a href="{escape(job_href(name))}">{escape(name.rsplit("/", 1)[-1])}</a>'
             f'<div class="dim">{escape(job.view.display_name)}</div>',
             escape(job.machine) + (f' <span class="tag">{escape(job.pricing)}</span>'
                                    if job.pricing != ON_DEMAND else ""),
             _state(job.view.state.value), escape(_short(job.created)),
             escape(duration(job.queued_s)), escape(duration(job.ran_s if job.started is not None else None)),
             escape(usd(job.cost_usd))]
    tds = "".join(f'<td class="{column}{" num" if column in _NUMERIC else ""}">{cell}</td>'
                  for column, cell in zip(_COLUMNS, cells))
    return f'<tr class="job" data-name="{escape(name)}" data-state="{escape(job.view.state.value)}">{tds}</tr>'


def job_href(name: str) -> str:
    """The job page's URL."""
    return "/job?" + urlencode({"name": name})


# --- one job ------------------------------------------------------------------------------

def job_page(page: JobPage, refresh_s: float) -> str:
    """One job: its facts, cost and its key's attempts and rungs as a timeline (the script asks
    for :func:`job_summary` again while the job is alive and when its state changes), its log
    lines (followed live by the script over server-sent events), and the job as sent."""
    view = page.job.view
    title = view.display_name or view.name.rsplit("/", 1)[-1]
    logs_src = "/job/logs?" + urlencode({"name": view.name})
    following = "Reading the job’s lines…" if view.state.terminal else "Following the job’s lines as they are written…"
    body = [f"<h1>{escape(title)}</h1>",
            f'<div id="summary" data-src="{escape("/fragments/job?" + urlencode({"name": view.name}))}" '
            f'data-refresh-s="{refresh_s!r}">{job_summary(page)}</div>',
            f'<section id="logs-section"><h2>Logs</h2><p class="note" id="logs-status">{following}</p>'
            f'<pre id="logs" data-src="{escape(logs_src)}" data-name="{escape(view.name)}"></pre></section>',
            f'<section id="sent"><h2>The job as sent</h2><p class="note">The {escape(page.job.kind.label)} as the '
            "API returns it, without the fields the server sets (name, state, times, error).</p>"
            f"<pre><code>{escape(json.dumps(page.sent, indent=2))}</code></pre></section>"]
    return layout(title, "\n".join(body))


def job_summary(page: JobPage) -> str:
    """The job's facts, its cost and its timeline (what changes while it runs)."""
    job = page.job
    view = job.view
    facts = [("name", f"<code>{escape(view.name)}</code>"), ("state", _state(view.state.value)),
             ("key", escape(job.key or NO_KEY)),
             ("attempt · rung", escape(f"{_or_dash(job.attempt)} · {_or_dash(job.rung)}")),
             ("region", escape(job.region)), ("machine", escape(job.machine)),
             ("created", escape(_stamp(job.created))), ("started", escape(_stamp(job.started))),
             ("ended", escape(_stamp(job.ended))), ("queued", escape(duration(job.queued_s))),
             ("ran", escape(duration(job.ran_s if job.started is not None else None)))]
    if view.error_message:
        facts.append(("error", f'<span class="error">{escape(view.error_message)}</span>'))
    if view.console_url and not view.emulated:
        facts.append(("console", f'<a href="{escape(view.console_url)}" rel="noreferrer">Cloud console</a>'))
    dl = "".join(f"<dt>{name}</dt><dd>{value}</dd>" for name, value in facts)
    return (f'<dl class="facts" data-state="{escape(view.state.value)}" data-terminal="{str(view.state.terminal).lower()}">'
            f"{dl}</dl>{_cost(page)}{_timeline(page)}")


def _cost(page: JobPage) -> str:
    job = page.job
    rows = [("this job", usd(job.per_hour) + " / h" if job.per_hour is not None else "? / h", usd(job.cost_usd))]
    if page.key is not None and len(page.key.jobs) > 1:
        rows.append((f"its key ({len(page.key.jobs)} jobs)", "", usd(page.key.cost_usd)))
    body = "".join(f'<tr><td>{escape(a)}</td><td class="num">{escape(b)}</td><td class="num">{escape(c)}</td></tr>'
                   for a, b, c in rows)
    pools = "".join(f"<li><code>{escape(pool.machine)}</code> × {pool.nodes}: {escape(usd(pool.per_hour))} / h</li>"
                    for pool in job.pools)
    missing = ", ".join(sorted({f"{u.kind} {u.name or ''}".strip() for u in job.unknown}))
    lacks = f'<p class="note">The catalog has no {escape(job.pricing)} price for {escape(missing)}.</p>' if missing else ""
    return (f'<section id="cost"><h2>Cost</h2><table class="cost"><thead><tr><th></th><th class="num">per hour'
            f'</th><th class="num">so far</th></tr></thead><tbody>{body}</tbody></table>'
            f'<ul class="pools">{pools}</ul>{lacks}<p class="note">{escape(_ESTIMATED)} Pricing: '
            f"{escape(job.pricing)}.</p></section>")


def _timeline(page: JobPage) -> str:
    jobs: Sequence[LedgerJob] = page.key.jobs if page.key is not None else (page.job,)
    what = "this key's attempts and rungs" if page.key is not None else "this job (it carries no vxtrain key)"
    legend = "".join(f'<span class="swatch {cls}"></span>{name} ' for cls, name in (
        ("queued", "queued"), ("running", "running"), ("succeeded", "succeeded"), ("failed", "failed"),
        ("cancelled", "cancelled")))
    return (f'<section id="timeline"><h2>Timeline</h2><p class="note">{escape(what)}: the queue wait light, '
            f'the run in its end state\'s colour; this job outlined.</p>{timeline.svg(jobs, page.job.view.name)}'
            f'<p class="legend">{legend}</p></section>')


# --- the plan page's index, refusals --------------------------------------------------------

def plan_index(root: str, files: Iterable[str]) -> str:
    """The plan page without a file: a form for a path and the specs found under ``root``."""
    items = "".join(f'<li><a href="{escape("/plan?" + urlencode({"file": name}))}">{escape(name)}</a></li>'
                    for name in files)
    listed = f'<ul class="specs">{items}</ul>' if items else '<p class="empty">No *.yaml or *.yml here.</p>'
    body = (f"<h1>Plan a spec</h1><p>The plan report (<code>vxtrain plan FILE --html</code>) of a spec under "
            f"<code>{escape(root)}</code>, the folder the ui was started in.</p>"
            '<form method="get" action="/plan"><label>Spec file <input name="file" size="60" '
            'placeholder="configs/train.yaml" required></label> <button>Plan</button></form>'
            f"<h2>Specs here</h2>{listed}")
    return layout("Plan", body, script=False)


def problem_page(status: int, title: str, reason: str) -> str:
    """A refusal or an error, said plainly (no script: it may be answered to anyone)."""
    body = f'<h1>{status} {escape(title)}</h1><p class="error">{escape(reason)}</p>'
    return layout(title, body, script=False)


# --- small words ------------------------------------------------------------------------------

def _state(value: str) -> str:
    name = value.removeprefix("JOB_STATE_")
    return f'<span class="state {name.lower()}">{escape(name)}</span>'


def _stamp(when: datetime | None) -> str:
    """``2026-11-29 09:16:15 UTC``; ``–`` for none."""
    return "–" if when is None else when.strftime("%Y-%m-%d %H:%M:%S UTC")


def _short(when: datetime | None) -> str:
    """``11-29 09:16:15`` (UTC, the column says so); ``–`` for none."""
    return "–" if when is None else when.strftime("%m-%d %H:%M:%S")


def _iso(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def _or_dash(value: int | None) -> str:
    return "–" if value is None else str(value)
