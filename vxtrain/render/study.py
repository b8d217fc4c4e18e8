"""A study's text for people: the search space, the trial table and the best trial.

The study's words (search space, trials, metrics, the best trial) are
:mod:`vxtrain.vocab.studies`; the job views they fill are data. Here they are
laid out as plain text columns (no rich: the lines also go to log files).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vxtrain.vocab.studies import SUCCEEDED, format_value, grid_values, search_space, trial_args


def trial_table(trials: Sequence[Mapping[str, Any]], metric_ids: Sequence[str],
                best_id: str | None = None) -> list[str]:
    """A text table of trial views (``TrialResult.to_json`` shape): id, parameters, metrics, state."""
    header = ["trial", "parameters", *metric_ids, "state"]
    rows = [header]
    for t in trials:
        mark = " *" if t["id"] == best_id else ""
        params = ", ".join(f"{k}={_short(v)}" for k, v in t["parameters"].items())
        values = [_short(t["metrics"][m]) if m in t["metrics"] else "-" for m in metric_ids]
        state = t["state"] + (f" ({t['message']})" if t.get("message") else "")
        rows.append([t["id"] + mark, params, *values, state])
    return _columns(rows)


def metric_ids_of(trials: Iterable[Mapping[str, Any]]) -> list[str]:
    """Metric ids the trial views report, in first-seen order (``["metric"]`` when none did)."""
    ids = list(dict.fromkeys(m for t in trials for m in t.get("metrics", {})))
    return ids or ["metric"]


def summary_lines(view: Mapping[str, Any], metric_ids: Sequence[str]) -> list[str]:
    """The trial table and a ``best trial:`` line of a view with "trials" and "best_trial"."""
    best = view.get("best_trial")
    trials = view.get("trials", [])
    lines = trial_table(trials, metric_ids, best["id"] if best else None)
    silent = [t["id"] for t in trials if t["state"] == SUCCEEDED and metric_ids[0] not in t["metrics"]]
    if silent:
        lines.append(f"trials that succeeded but reported no {metric_ids[0]}: {', '.join(silent)}")
    if best:
        shown = ", ".join(f"{m}={_short(v)}" for m, v in best["metrics"].items())
        params = " ".join(trial_args(best["parameters"]))
        lines.append(f"best trial: {best['id']} ({shown}) {params}")
    else:
        lines.append("best trial: none (no succeeded trial reported the metric)")
    return lines


def search_space_lines(study_spec: Mapping[str, Any]) -> list[str]:
    """One row per parameter: name, type, range or values, scale."""
    rows = [["parameter", "type", "search space", "scale"]]
    for p in search_space(study_spec):
        if p.kind in ("double", "integer"):
            space = f"[{_short(p.min)}, {_short(p.max)}]"
        elif p.kind == "discrete":  # doubles on Vertex: whole ones as integers, as grid search tries them
            space = "{" + ", ".join(_short(v) for v in grid_values(p)) + "}"
        else:
            space = "{" + ", ".join(str(v) for v in p.values) + "}"
        scale = "" if p.kind == "categorical" else p.scale.removeprefix("UNIT_").removesuffix("_SCALE").lower()
        rows.append([p.id, p.kind, space, scale])
    return _columns(rows)


def _short(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.6g}"
    return format_value(value)


def _columns(rows: list[list[str]]) -> list[str]:
    """Rows as left-aligned columns two spaces apart (no trailing blanks)."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
