"""The plan report: one self-contained HTML page (``vxtrain plan FILE --html OUT``).

The pools in workerPoolSpecs order with their empty slots, the bandwidth curve as
inline SVG (vxtrain.render.chart over vxtrain.planning.curve), the cost per pool per
hour and up to the timeout, the quota needs against the limits when they were read,
a study's search space and the rungs of ``fallback:``. Inline CSS, no script, nothing
fetched: it reads the same from a file, a mail attachment or a CI artifact.

Only ``plan --html`` (and, later, the ui's plan page) imports this module; the
figures are the plans' own, formatted here and never recomputed.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

from vxtrain import __version__
from vxtrain.api import Result
from vxtrain.diagnostics import Diagnostic, plural
from vxtrain.planning.bandwidth import PoolBandwidth, gbps
from vxtrain.planning.cost import Cost, PoolCost, usd
from vxtrain.planning.curve import Curve, NoCurve, curve
from vxtrain.render import chart
from vxtrain.render.cost import source_lines, total_lines
from vxtrain.vocab.studies import search_space

if TYPE_CHECKING:
    from vxtrain.submission.quota import QuotaReport

_STYLE = """
:root { color-scheme: light; --ink: #1f2328; --dim: #59636e; --line: #d1d9e0; --tint: #f6f8fa;
        --accent: #0b57d0; --ring: #b3261e; --cap: #1e7a34; --warn: #9a6700; --bad: #b3261e; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1040px; padding: 24px 28px 40px; color: var(--ink); background: #fff;
       font: 15px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
h1 { font-size: 1.6rem; margin: 0 0 4px; }
h2 { font-size: 1.15rem; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
p.meta, p.note, .dim { color: var(--dim); }
p.note { font-size: .9rem; margin: 6px 0; }
code { font: .9em ui-monospace, "DejaVu Sans Mono", monospace; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--tint); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.total td { font-weight: 600; border-top: 2px solid var(--line); }
ol.slots { list-style: none; display: flex; gap: 10px; padding: 0; margin: 0; flex-wrap: wrap; }
ol.slots li { flex: 1 1 200px; border: 1px solid var(--line); border-radius: 8px; padding: 10px 12px;
              background: var(--tint); }
ol.slots li.gap { background: #fff; border: 2px dashed var(--line); color: var(--dim); }
ol.slots .slot { font-size: .8rem; color: var(--dim); }
ol.slots .role { font-weight: 600; font-size: 1.05rem; }
ol.slots .count { font-size: 1.05rem; }
ul.diagnostics { padding-left: 0; list-style: none; }
ul.diagnostics li { border-left: 4px solid var(--warn); padding: 4px 10px; margin: 6px 0; background: var(--tint); }
ul.diagnostics li.error { border-color: var(--bad); }
.fits-no { color: var(--bad); font-weight: 600; }
.fits-yes { color: var(--cap); }
svg.curve { width: 100%; height: auto; display: block; margin: 8px 0; }
svg.curve .plot { fill: #fff; stroke: var(--line); }
svg.curve .grid { stroke: #eaeef2; }
svg.curve text { font: 12px system-ui, "DejaVu Sans", sans-serif; fill: var(--dim); }
svg.curve .axis { font-size: 13px; fill: var(--ink); }
svg.curve .line { fill: none; stroke: var(--accent); stroke-width: 2.5; }
svg.curve .point { fill: var(--accent); }
svg.curve .chosen { fill: #fff; stroke: var(--accent); stroke-width: 3; }
svg.curve .chosen-label { fill: var(--accent); font-weight: 600; font-size: 13px; }
svg.curve .ring { stroke: var(--ring); stroke-width: 2; stroke-dasharray: 7 5; }
svg.curve .ring-label { fill: var(--ring); }
svg.curve .floor { stroke: var(--cap); stroke-width: 2; stroke-dasharray: 2 4; }
svg.curve .floor-label, svg.curve .cap-label { fill: var(--cap); }
svg.curve .cap { stroke: var(--cap); stroke-width: 1.5; stroke-dasharray: 4 4; }
details { margin-top: 8px; }
summary { cursor: pointer; color: var(--dim); }
footer { margin-top: 36px; font-size: .85rem; color: var(--dim); }
"""


def plan_report(result: Result, quota: QuotaReport | None = None) -> str:
    """The report of a checked spec as one HTML document (a string).

    ``quota``: the spec's needs against the limits (vxtrain.api.quota), when they were
    read. An invalid spec's report has its diagnostics only."""
    title = _title(result)
    body = [_header(result, title), _diagnostics(result.diagnostics)]
    if result.valid:
        body += [_pools(result), _bandwidth(result), _cost(result), _quota(quota), _study(result),
                 _ladder(result)]
    body.append(f'<footer>Made by vxtrain {escape(__version__)} (<code>vxtrain plan --html</code>): '
                "nothing was sent to Google Cloud. Prices are list prices, not a bill.</footer>")
    return "\n".join([
        "<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f'<meta name="generator" content="vxtrain {escape(__version__)}">',
        f"<title>{escape(title)}: vxtrain plan</title>", f"<style>{_STYLE}</style>", "</head>", "<body>",
        *(part for part in body if part), "</body>", "</html>", ""])


# --- the parts ----------------------------------------------------------------------

def _title(result: Result) -> str:
    job = result.job
    return job.display_name if job is not None and job.display_name else result.file


def _header(result: Result, title: str) -> str:
    facts = [f"<code>{escape(result.file)}</code>"]
    job = result.job
    if job is not None:
        facts += [escape(x) for x in (job.region and f"region {job.region}", job.project and f"project {job.project}")
                  if x]
        strategy = job.scheduling.strategy if job.scheduling is not None else None
        facts.append(escape(strategy or "STANDARD"))
    if not result.valid:
        errors = sum(d.severity == "error" for d in result.diagnostics)
        facts.append(f'<span class="fits-no">invalid: {escape(plural(errors, "error"))}</span>')
    return f'<header><h1>{escape(title)}</h1><p class="meta">{" · ".join(facts)}</p></header>'


def _diagnostics(diagnostics: Sequence[Diagnostic]) -> str:
    if not diagnostics:
        return ""
    items = "".join(f'<li class="{escape(d.severity)}"><code>{escape(d.render())}</code></li>' for d in diagnostics)
    return f'<section id="diagnostics"><h2>Diagnostics</h2><ul class="diagnostics">{items}</ul></section>'


def _pools(result: Result) -> str:
    """workerPoolSpecs in order: each pool as a card, an empty slot below the last as a dashed one."""
    assert result.plan is not None  # a valid result is planned
    rows = {row.index: row for row in result.plan.pools}
    rs = result.plan.reduction_server
    cards = []
    for index in range(max(rows) + 1 if rows else 0):
        row = rows.get(index)
        if row is None:
            cards.append(f'<li class="gap" data-index="{index}"><div class="slot">workerPoolSpecs[{index}]</div>'
                         '<div class="role">empty slot</div><div>sent as <code>{}</code>: each slot has a fixed '
                         "meaning, so a later pool keeps its place</div></li>")
            continue
        auto = " (auto)" if row.role == "reduction_server" and rs is not None and rs.auto else ""
        cards.append(
            f'<li class="pool" data-index="{index}" data-role="{escape(row.role)}">'
            f'<div class="slot">workerPoolSpecs[{index}]</div><div class="role">{escape(row.role)}</div>'
            f'<div class="count">{_replicas(row.replicas)}{auto} × {escape(row.machine_type or "?")}</div>'
            f"<div>{escape(_gpus(row))}</div>"
            f'<div class="dim">{escape(gbps(row.gbps_per_node))} Gbps per node, {escape(gbps(row.total_gbps))} in all'
            f"{escape(_network(row))}</div></li>")
    training = f"{gbps(result.plan.training_gbps)} Gbps"
    return (f'<section id="pools"><h2>Pools</h2><ol class="slots">{"".join(cards)}</ol>'
            f'<p class="note">The training pools (chief and workers) send {escape(training)}'
            f"{'' if result.plan.training_known else ' (known part: some bandwidth is unknown)'}.</p></section>")


def _replicas(replicas: int | None) -> str:
    return "?" if replicas is None else str(replicas)


def _gpus(row: PoolBandwidth) -> str:
    if not row.accelerator_type:
        return "no accelerators"
    return f"{row.accelerator_count} × {row.accelerator_type} per node"


def _network(row: PoolBandwidth) -> str:
    return f", GPUs over {row.gpu_network}" if row.gpu_network else ""


def _bandwidth(result: Result) -> str:
    assert result.plan is not None
    allreduce = result.plan.allreduce
    found = curve(result.plan, allreduce.gradient_bytes if allreduce is not None else None)
    head = '<section id="bandwidth"><h2>All-reduce time against Reduction Server replicas</h2>'
    if isinstance(found, NoCurve):
        return f'{head}<p class="note" id="no-curve">No curve: {escape(found.reason)}.</p></section>'
    note = ("" if found.gradient_bytes is not None else
            '<p class="note">Times are relative to a ring all-reduce (ring = 1): give <code>--gradient-size</code> '
            "(e.g. 1.3GB) for seconds. The curve's shape is the same for any size.</p>")
    return (f'{head}<p>{escape(chart.summary(found))}</p>{chart.svg(found)}{note}'
            f"{_figures(found)}</section>")


def _figures(found: Curve) -> str:
    """The curve's figures as a table, folded: the chart for the eye, the numbers for the record."""
    rows = "".join(
        f'<tr><td class="num">{p.replicas}</td><td class="num">{escape(chart.label(found, chart.value(found, p)))}</td>'
        f'<td class="num">{p.of_ring:.3f}</td><td>{"yes" if p.keeps_up else "no"}</td></tr>' for p in found.points)
    return ('<details><summary>The figures</summary><table class="figures"><thead><tr><th class="num">replicas</th>'
            '<th class="num">all-reduce</th><th class="num">× ring</th><th>keeps up with the nodes</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></details>")


def _cost(result: Result) -> str:
    cost = result.cost
    if cost is None:
        return ""
    to_timeout = f"USD up to the timeout ({_hours(cost)})"
    head = ('<section id="cost"><h2>Cost</h2><table class="cost"><thead><tr><th class="num">pool</th><th>role</th>'
            '<th class="num">replicas</th><th>per node</th><th class="num">USD per node-hour</th>'
            f'<th class="num">USD per hour</th><th class="num">{escape(to_timeout)}</th><th>confidence</th></tr></thead>')
    rows = "".join(_cost_row(cost, p) for p in cost.pools)
    total = (f'<tr class="total"><td colspan="5">{"one trial" if cost.study else "job"}</td>'
             f'<td class="num">{escape(usd(cost.per_trial_hour))}</td>'
             f'<td class="num">{escape(usd(cost.up_to_timeout(cost.per_trial_hour)))}</td>'
             f"<td>{escape(cost.confidence)}</td></tr>")
    notes = "".join(f'<p class="note">{escape(line.strip())}</p>' for line in [*total_lines(cost), *source_lines(cost)])
    unknown = "".join(f"<li>{escape(u.message())}</li>" for u in cost.unknown)
    return (f"{head}<tbody>{rows}{total}</tbody></table>{notes}"
            f"{f'<ul class=unknown>{unknown}</ul>' if unknown else ''}</section>")


def _cost_row(cost: Cost, p: PoolCost) -> str:
    per_node = " + ".join(line.name if line.count == 1 else f"{line.count} × {line.name}" for line in p.lines) or (
        p.machine_type or "?")  # a pool on a persistent resource has no price lines: its machine
    replicas = _replicas(p.replicas) if p.hosts == 1 else f"{_replicas(p.replicas)} × {p.hosts} hosts"
    return (f'<tr data-pool="{p.index}"><td class="num">{p.index}</td><td>{escape(p.role)}</td>'
            f'<td class="num">{escape(replicas)}</td><td>{escape(per_node)}</td>'
            f'<td class="num">{escape(usd(p.per_node_hour))}</td><td class="num">{escape(usd(p.per_hour))}</td>'
            f'<td class="num">{escape(usd(cost.up_to_timeout(p.per_hour)))}</td><td>{escape(p.confidence)}</td></tr>')


def _hours(cost: Cost) -> str:
    hours = f"{cost.timeout_seconds / 3600:g} h"
    if cost.timeout_default:
        hours += ", Vertex AI's default"
    return f"{hours} × {cost.max_trials} trials" if cost.study else hours


def _quota(report: QuotaReport | None) -> str:
    if report is None:
        return ""
    from vxtrain.render.quota import notes  # lazy: rich's tables; a report with quotas has loaded submission anyway

    parts = ['<section id="quota"><h2>Quota</h2>']
    ladder = [("", report), *((f"Rung {n}: ", rung) for n, rung in enumerate(report.fallback, 1))]
    for heading, each in ladder:
        rows = "".join(
            f'<tr><td><code>{escape(_metric(row.metric))}</code></td><td>{escape(row.resource)}</td>'
            f'<td class="num">{_replicas(row.needed)}</td><td class="num">{_replicas(row.limit)}</td>'
            f"<td>{_fits(row.fits)}</td></tr>" for row in each.rows)
        parts.append(f"<h3>{escape(heading)}project {escape(each.project)}, {escape(each.region)}</h3>"
                     '<table class="quota"><thead><tr><th>metric</th><th>counts</th><th class="num">needed</th>'
                     f'<th class="num">limit</th><th>fits</th></tr></thead><tbody>{rows}</tbody></table>'
                     + "".join(f'<p class="note">{escape(line)}</p>' for line in notes(each)))
    parts.append('<p class="note">Limits only: the Cloud Quotas API has no usage, and other jobs share these '
                 "quotas; the service decides at create.</p></section>")
    return "".join(parts)


def _metric(metric: str | None) -> str:
    return metric.rpartition("/")[2] if metric else "(unknown)"


def _fits(fits: bool | None) -> str:
    return {True: '<span class="fits-yes">yes</span>', False: '<span class="fits-no">NO</span>', None: "?"}[fits]


def _study(result: Result) -> str:
    hpt = result.hyperparameter_tuning_job
    if hpt is None:
        return ""
    spec = hpt.get("studySpec", {})
    metrics = ", ".join(f"{m.get('metricId')} ({str(m.get('goal', '')).lower()})" for m in spec.get("metrics", []))
    rows = "".join(f"<tr><td><code>{escape(p.id)}</code></td><td>{escape(p.kind)}</td>"
                   f"<td>{escape(_space(p.kind, p.min, p.max, p.values))}</td><td>{escape(p.scale)}</td></tr>"
                   for p in search_space(spec))
    facts = (f"Up to {hpt.get('maxTrialCount') or '?'} trials, {hpt.get('parallelTrialCount') or 1} at a time "
             f"({spec.get('algorithm') or 'ALGORITHM_UNSPECIFIED'}); {metrics or 'no metric'}. "
             "Each trial is the job above; the pools, curve and cost are one trial's.")
    return (f'<section id="study"><h2>Study</h2><p>{escape(facts)}</p><table class="study"><thead><tr>'
            "<th>parameter</th><th>type</th><th>search space</th><th>scale</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></section>")


def _space(kind: str, low: float | None, high: float | None, values: Iterable[Any]) -> str:
    if kind in ("double", "integer"):
        return f"[{low:g}, {high:g}]" if low is not None and high is not None else "?"
    return ", ".join(str(v) for v in values)


def _ladder(result: Result) -> str:
    """Rung 0 (the report above) and each rung of ``fallback:``: where, on what, at what price."""
    if not result.fallback:
        return ""
    rows = "".join(_rung_row(number, rung) for number, rung in enumerate([result, *result.fallback]))
    return ('<section id="fallback"><h2>Fallback ladder</h2><p class="note">Tried in order when the job cannot '
            "get its machines; the report above is rung 0's.</p><table class=\"rungs\"><thead><tr>"
            '<th class="num">rung</th><th>region</th><th>pools</th><th>strategy</th>'
            '<th class="num">USD per hour</th><th class="num">USD up to the timeout</th></tr></thead>'
            f"<tbody>{rows}</tbody></table></section>")


def _rung_row(number: int, rung: Result) -> str:
    job = rung.job
    assert job is not None  # the rungs of a valid result are valid
    pools = "; ".join(f"{p.role} {p.replicas if p.replicas is not None else '?'} × {p.machine_type}"
                      + (f" + {p.accelerator.count or 1} × {p.accelerator.type}" if p.accelerator else "")
                      for p in job.ordered_pools())
    strategy = job.scheduling.strategy if job.scheduling is not None and job.scheduling.strategy else "STANDARD"
    cost = rung.cost
    per_hour = usd(cost.per_hour) if cost is not None else "?"
    total = usd(cost.max_total) if cost is not None else "?"
    return (f'<tr data-rung="{number}"><td class="num">{number}</td><td>{escape(job.region or "(no region)")}</td>'
            f"<td>{escape(pools)}</td><td>{escape(strategy)}</td><td class=\"num\">{escape(per_hour)}</td>"
            f'<td class="num">{escape(total)}</td></tr>')
