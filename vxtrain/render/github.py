"""GitHub's renderings: diagnostics as workflow-command annotations (``--output github``)
and the plan as GitHub-flavoured Markdown (``--output markdown``, the Action's step summary).

Annotations follow GitHub's workflow commands
(https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands):
``::error file=F,line=L,col=C,title=CODE::MESSAGE``, one per line on stdout, the runner
reading them from the step's output. The file is relative to the workspace
(``GITHUB_WORKSPACE``, else the current folder), as GitHub matches it against the
pull request's files. A value that comes from outside the workspace (a flag, an
environment variable, gcloud's configuration file) has no file to point at: the
annotation then has no ``file`` and its message says where the value came from.

Only ``--output github`` or ``--output markdown`` loads this module (rich comes with the
plan's sections it reuses): the default text and JSON paths never pay for it.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from vxtrain.api import Result
from vxtrain.diagnostics import Diagnostic, plural
from vxtrain.planning.bandwidth import Plan, gbps
from vxtrain.planning.cost import Cost, PriceLine, usd
from vxtrain.planning.quota import Need, needs
from vxtrain.render import bandwidth, cost, recovery
from vxtrain.render.plan import ladder_lines

# GitHub's escaping of workflow-command values (actions/toolkit, packages/core/src/command.ts:
# escapeData and escapeProperty): a message keeps ':' and ',', a property value may not.
_DATA = {"%": "%25", "\r": "%0D", "\n": "%0A"}
_PROPERTY = {**_DATA, ":": "%3A", ",": "%2C"}
# What Markdown would read as markup in a spec's strings: code spans, emphasis, links, HTML, and
# '|', which ends a GFM table cell. '_' is left alone: GFM never reads it as emphasis inside a
# word (machine_type, NVIDIA_TESLA_V100), and escaped it would show in autolinked URLs.
_MARKDOWN = frozenset("\\`*[]<>|")


def escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped as GitHub's runner reads them."""
    return "".join(_DATA.get(ch, ch) for ch in text)


def escape_property(text: str) -> str:
    """A workflow command's property value: as a message, and ``:`` and ``,`` too."""
    return "".join(_PROPERTY.get(ch, ch) for ch in text)


def workspace(environ: Mapping[str, str] | None = None) -> Path:
    """The folder annotation paths are relative to: ``$GITHUB_WORKSPACE``, else the current one."""
    env = os.environ if environ is None else environ
    return Path(env.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()


def workspace_path(file: str | None, root: Path) -> str | None:
    """``file`` relative to ``root`` (``/`` separators), None when it is no file inside it
    (``--region``, ``$CLOUD_ML_REGION``, a file elsewhere)."""
    if not file:
        return None
    path = Path(file)
    if not path.is_file():
        return None
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:  # outside the workspace: GitHub could not show it on the pull request
        return None


def annotation(d: Diagnostic, root: Path) -> str:
    """One diagnostic as ``::error file=…,line=…,col=…,title=CODE::message`` (or ``::warning``)."""
    message = d.message + (f" (at {d.path})" if d.path else "")
    props = []
    rel = workspace_path(d.file, root)
    if rel is not None:
        props.append(f"file={escape_property(rel)}")
        if d.line is not None:
            props.append(f"line={d.line}")
            if d.column is not None:
                props.append(f"col={d.column}")
    elif d.file:  # said in the message instead: where a flag, a variable or a file outside put it
        message = f"{_where(d)}: {message}"
    props.append(f"title={escape_property(d.code)}")
    return f"::{d.severity} {','.join(props)}::{escape_data(message)}"


def _where(d: Diagnostic) -> str:
    where = d.file or ""
    if d.line is not None and Path(where).is_file():
        where += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
    return where


def annotation_lines(diagnostics: Sequence[Diagnostic], root: Path | None = None) -> str:
    """Every diagnostic as an annotation line (an empty string when there are none)."""
    base = workspace() if root is None else root
    return "".join(annotation(d, base) + "\n" for d in diagnostics)


# --- Markdown -----------------------------------------------------------------------

def cell(value: object) -> str:
    """A table cell's text: Markdown's punctuation escaped, line breaks made spaces."""
    text = " ".join(str(value).split("\n")).replace("\r", " ")
    return "".join("\\" + ch if ch in _MARKDOWN else ch for ch in text)


def table(header: Sequence[str], rows: Sequence[Sequence[object]], right: Sequence[int] = ()) -> list[str]:
    """A GitHub-flavoured Markdown table (``right``: the columns aligned right)."""
    rule = ["---:" if i in right else "---" for i in range(len(header))]
    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return lines


def diagnostics_markdown(diagnostics: Sequence[Diagnostic], root: Path | None = None) -> list[str]:
    """The diagnostics as a table: severity, where (workspace-relative), code, message."""
    base = workspace() if root is None else root
    rows = []
    for d in diagnostics:
        rel = workspace_path(d.file, base)
        where = (rel if rel is not None else d.file or "")
        if d.line is not None and where:
            where += f":{d.line}" + (f":{d.column}" if d.column is not None else "")
        rows.append([d.severity, where, d.code, d.message + (f" (at {d.path})" if d.path else "")])
    return table(["severity", "where", "code", "message"], rows)


def validate_markdown(results: Sequence[Result], root: Path | None = None) -> str:
    """``validate --output markdown``: a summary line and every diagnostic in one table."""
    diags = [d for r in results for d in r.diagnostics]
    errors = sum(d.severity == "error" for d in diags)
    invalid = sum(not r.valid for r in results)
    lines = ["### vxtrain validate", "",
             cell(f"{plural(len(results), 'file')} checked: {len(results) - invalid} valid, {invalid} invalid "
                  f"({plural(errors, 'error')}, {plural(len(diags) - errors, 'warning')})")]
    if diags:
        lines += ["", *diagnostics_markdown(diags, root)]
    return "\n".join(lines) + "\n"


def plan_markdown(result: Result, root: Path | None = None) -> str:
    """``plan --output markdown``: the job's pools, Reduction Server and bandwidth, its cost per
    hour and up to the timeout, the quota it needs, as GitHub-flavoured Markdown."""
    base = workspace() if root is None else root
    file = workspace_path(result.file, base) or result.file
    name = result.job.display_name if result.job is not None else None
    lines = [f"### vxtrain plan: {cell(name or file)}", ""]
    if result.diagnostics:
        lines += [*diagnostics_markdown(result.diagnostics, base), ""]
    if not result.valid:
        return "\n".join([*lines, f"{cell(file)} is not valid: no job to plan."]) + "\n"
    assert result.job is not None and result.plan is not None  # a valid result went through every stage
    where = f"project {result.job.project or '(not set)'}, region {result.job.region or '(not set)'}"
    lines += [cell(f"{file} → CustomJob in {where}"), ""]
    lines += _bandwidth(result.plan)
    if result.cost is not None:
        lines += ["", *_cost(result.cost, result.plan)]
    job = result.hyperparameter_tuning_job or result.custom_job
    if job is not None:
        lines += ["", *_quota(needs(job), result.job.region)]
    if result.fallback:
        lines += ["", "#### Fallback ladder (tried in order when the job cannot get its machines)", "",
                  *(f"- {cell(line)}" for line in ladder_lines(result))]
    if result.job.recovery is not None:
        lines += ["", cell(recovery.plan_line(result.job.recovery))]
    return "\n".join(lines) + "\n"


def _bandwidth(plan: Plan) -> list[str]:
    rows = []
    for row in plan.pools:
        gpus = f"{row.accelerator_count} × {row.accelerator_type}" if row.accelerator_type else "-"
        rows.append([row.index, row.role, "?" if row.replicas is None else row.replicas, row.machine_type or "?",
                     gpus, row.gpu_network or "-", gbps(row.gbps_per_node), gbps(row.total_gbps), row.confidence])
    known = "" if plan.training_known else " (known part; some bandwidth is unknown)"
    lines = ["#### Pools and bandwidth (egress per node)", "",
             *table(["pool", "role", "replicas", "machine", "accelerators", "GPU network", "Gbps/node",
                     "total Gbps", "confidence"], rows, right=(0, 2, 6, 7)),
             "", cell(f"Training pools (chief + workers): {gbps(plan.training_gbps)} Gbps{known}")]
    if plan.reduction_server is not None:
        lines += ["", cell(bandwidth.coverage_line(plan))]
    if plan.allreduce is not None:
        lines += ["", cell(bandwidth.allreduce_line(plan.allreduce))]
    return lines


def _cost(plan: Cost, bandwidth_plan: Plan) -> list[str]:
    title = f"Cost (Vertex AI {plan.pricing.replace('_', '-')} list prices, {plan.region or 'no region'})"
    if plan.billed_via is not None:
        title = f"Cost (billed via persistent resource {plan.billed_via}, not per job)"
    rows = [[p.index, p.role, "?" if p.replicas is None else p.replicas, _node(p.machine_type, () if p.billed_via else p.lines),
             usd(p.per_node_hour), usd(p.per_hour), p.confidence] for p in plan.pools]
    lines = [f"#### {cell(title)}", "",
             *table(["pool", "role", "replicas", "per node", "USD/node-h", "USD/h", "confidence"], rows,
                    right=(0, 2, 4, 5)), ""]
    lines += [f"**{cell(line)}**" for line in cost.total_lines(plan)]
    trade = cost.tradeoff_line(plan, bandwidth_plan)
    if trade:
        lines += ["", cell(trade)]
    sources = cost.source_lines(plan)
    lines += ["", cell(sources[0]), *(f"- {cell(s.strip())}" for s in sources[1:])]
    return lines


def _node(machine: str | None, price_lines: Sequence[PriceLine]) -> str:
    """``n1-highmem-96 + 8 × NVIDIA_TESLA_V100``: what one node is billed for."""
    names = [line.name if line.count == 1 else f"{line.count} × {line.name}" for line in price_lines]
    return " + ".join(names) or machine or "?"


def _quota(job_needs: Sequence[Need], region: str | None) -> list[str]:
    head = f"#### Quota needed in {cell(region or '(no region)')}"
    if not job_needs:
        return [head, "", "None: the job runs on a persistent resource's machines."]
    rows = [[n.resource, n.short_metric or (n.candidate or "(unknown)").rpartition("/")[2], "?" if n.needed is None else n.needed]
            for n in job_needs]
    return [head, "", *table(["counts", "metric", "needed"], rows, right=(2,)), "",
            "Limits: `vxtrain quota FILE` reads them from the Cloud Quotas API (submit checks them first)."]
