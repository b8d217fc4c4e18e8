"""``vxtrain diff BEFORE [AFTER]``: what changes in the compiled job, the
bandwidth plan and the cost plan between two specs (or a spec and the same
spec with overlays).

Made for pull-request review: the CustomJob that Vertex AI would get and the
Reduction Server sizing are compared, not the YAML text, so a moved key or a
changed default shows up only when it changes what is sent.

Exit codes follow the CLI Contract, not ``diff(1)``: 0 whether or not the
two differ (the answer is in the output: ``same`` in JSON), 1 when either
spec is invalid (its diagnostics are printed), 2 for usage errors.

Changes are ``{"path", "op", "before", "after"}`` with ``op`` one of
``changed`` | ``added`` (no ``before``) | ``removed`` (no ``after``). Lists
of scalars (command, args) compare as one value; lists of mappings compare
item by item: by position (workerPoolSpecs: the position is the pool), by
``name`` (env: ``env[name=NCCL_DEBUG]``) or by ``index`` / ``pool`` (bandwidth
and cost pools: ``pools[3]``, the pool number, since pools may be absent).
"""
from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Annotated, Any, Optional

import typer

from vxtrain import api
from vxtrain.api import Options, Result
from vxtrain.commands import _common as c
from vxtrain.planning import cost
from vxtrain.render import styled_lines

Change = dict[str, Any]
_IDENTITY_KEYS = ("name", "index", "pool")


def diff(before: str, after: str | None, options: Options, after_options: Options | None = None,
         output: c.OutputFormat = c.OutputFormat.text, after_flags: Sequence[str] = ()) -> int:
    """Compare two specs (``after`` None: ``before`` again, under ``after_options``, which
    ``after_flags`` spell as given: ``--after-set KEY=VALUE``...)."""

    old = api.check_file(before, options)
    new = api.check_file(after or before, after_options or options)
    doc = diff_json(old, new)
    if output is c.OutputFormat.json:
        c.emit_json(doc)
    else:
        _print_text(doc, old, new, after_label(doc["after"], after is None, after_flags))
    return 0 if old.valid and new.valid else 1


def diff_json(old: Result, new: Result) -> dict[str, Any]:
    """The ``diff`` JSON document of two pipeline results (change lists null when either is invalid)."""
    doc: dict[str, Any] = {"before": old.file, "after": new.file, "same": None,
                           "custom_job": None, "bandwidth": None, "cost": None,
                           "diagnostics": {"before": [d.to_json() for d in old.diagnostics],
                                           "after": [d.to_json() for d in new.diagnostics]}}
    if not (old.valid and new.valid):
        return doc
    doc["custom_job"] = changes(old.custom_job, new.custom_job)
    doc["bandwidth"] = changes(_bandwidth(old), _bandwidth(new))
    doc["cost"] = changes(_cost(old), _cost(new))
    if old.hyperparameter_tuning_job or new.hyperparameter_tuning_job:
        doc["hyperparameter_tuning_job"] = changes(_study(old), _study(new))
    doc["same"] = not any(doc.get(k) for k in ("custom_job", "bandwidth", "cost", "hyperparameter_tuning_job"))
    return doc


def _bandwidth(result: Result) -> dict[str, Any] | None:
    return result.plan.to_json() if result.plan is not None else None


def _cost(result: Result) -> dict[str, Any]:
    """The cost plan of a compiled job (priced here, so diff's diagnostics stay the spec's own)."""
    assert result.job is not None  # called for valid results only
    return cost.plan(result.job).to_json()


def _study(result: Result) -> dict[str, Any] | None:
    """The tuning job without its trialJobSpec (that one is the custom_job diff)."""
    hpt = result.hyperparameter_tuning_job
    return None if hpt is None else {k: v for k, v in hpt.items() if k != "trialJobSpec"}


# --- the structural diff ---------------------------------------------------------

def changes(before: Any, after: Any, path: str = "") -> list[Change]:
    """Every difference between two JSON values, as path-addressed changes, in document order."""
    return list(_walk(before, after, path))


def _walk(before: Any, after: Any, path: str) -> Iterator[Change]:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        yield from _walk_mapping(before, after, path)
    elif _is_record_list(before) and _is_record_list(after):
        yield from _walk_records(before, after, path)
    elif _json(before) != _json(after):  # not ``!=``: in Python False == 0 and 1 == 1.0, also inside lists
        yield {"path": path, "op": "changed", "before": before, "after": after}


def _json(value: Any) -> str:
    """``value`` as canonical JSON: two values are the same exactly when these are."""
    return json.dumps(value, sort_keys=True)


def _walk_mapping(before: Mapping[str, Any], after: Mapping[str, Any], path: str) -> Iterator[Change]:
    for key in [*before, *(k for k in after if k not in before)]:
        sub = f"{path}.{key}" if path else str(key)
        if key not in after:
            yield {"path": sub, "op": "removed", "before": before[key]}
        elif key not in before:
            yield {"path": sub, "op": "added", "after": after[key]}
        else:
            yield from _walk(before[key], after[key], sub)


def _is_record_list(value: Any) -> bool:
    """A non-empty list of mappings (compared item by item, not as one value)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _identity(items: Sequence[Mapping[str, Any]]) -> str | None:
    """The key that names every item of one list uniquely (``name``, ``index``), if any."""
    for key in _IDENTITY_KEYS:
        values = [item.get(key) for item in items]
        if None not in values and len(set(map(repr, values))) == len(values):
            return key
    return None


def _walk_records(before: list[Mapping[str, Any]], after: list[Mapping[str, Any]],
                  path: str) -> Iterator[Change]:
    key = _identity(before) if _identity(before) == _identity(after) else None
    if key is None:
        old = {f"[{i}]": v for i, v in enumerate(before)}
        new = {f"[{i}]": v for i, v in enumerate(after)}
    else:
        label = "[{}]" if key in ("index", "pool") else f"[{key}={{}}]"
        old = {label.format(v[key]): v for v in before}
        new = {label.format(v[key]): v for v in after}
    for sub in [*old, *(k for k in new if k not in old)]:
        if sub not in new:
            yield {"path": path + sub, "op": "removed", "before": old[sub]}
        elif sub not in old:
            yield {"path": path + sub, "op": "added", "after": new[sub]}
        else:
            yield from _walk(old[sub], new[sub], path + sub)


# --- text ----------------------------------------------------------------------------

_SECTIONS = (("custom_job", "CustomJob"), ("hyperparameter_tuning_job", "HyperparameterTuningJob"),
             ("bandwidth", "Bandwidth plan"), ("cost", "Cost plan"))


def after_label(after: str, again: bool, after_flags: Sequence[str]) -> str:
    """What the ``+++`` line names: AFTER, or BEFORE again with the after-only flags, or
    (neither given) BEFORE again, saying so: "no changes" then has its reason beside it."""
    if not again:
        return after
    if after_flags:
        return f"{after} with {' '.join(after_flags)}"
    return f"{after} again (no AFTER, --after-overlay or --after-set: the spec is compared with itself)"


def text_lines(doc: Mapping[str, Any], after: str | None = None) -> list[tuple[str, str]]:
    """(style, line) pairs of the readable diff: ``-``/``+`` lines per section; ``after``
    names the after side on the ``+++`` line (default: its file)."""
    lines = [("bold", f"--- {doc['before']}"), ("bold", f"+++ {after or doc['after']}")]
    for key, title in _SECTIONS:
        if doc.get(key) is None:
            continue
        lines.append(("bold", f"{title}: {len(doc[key]) or 'no'} change{'' if len(doc[key]) == 1 else 's'}"))
        for change in doc[key]:
            lines += _change_lines(change)
    return lines


def _change_lines(change: Change) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if "before" in change:
        out.append(("red", f"- {change['path']}: {_value(change['before'])}"))
    if "after" in change:
        out.append(("green", f"+ {change['path']}: {_value(change['after'])}"))
    return out


def _value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _print_text(doc: Mapping[str, Any], old: Result, new: Result, after: str) -> None:
    c.print_diagnostics([*old.diagnostics, *new.diagnostics])
    if doc["same"] is None:
        return
    styled_lines(text_lines(doc, after))


def register(app: typer.Typer) -> None:
    """Add the ``diff`` command."""

    @c.command(app, "diff")
    def _cmd(
        before: Annotated[str, typer.Argument(metavar="BEFORE", help="The spec before (e.g. the base branch's).")],
        after: Annotated[Optional[str], typer.Argument(metavar="[AFTER]", help="The spec after (default: BEFORE again, with --after-overlay/--after-set).")] = None,
        after_overlay: Annotated[Optional[list[str]], typer.Option("--after-overlay", help="Overlay applied to the after side only.")] = None,
        after_set: Annotated[Optional[list[str]], typer.Option("--after-set", help="dotted.key=value applied to the after side only.")] = None,
        output: c.OutputOpt = c.OutputFormat.text,
        overlay: c.OverlayOpt = None,
        set_: c.SetOpt = None,
        var: c.VarOpt = None,
        project: c.ProjectOpt = None,
        region: c.RegionOpt = None,
        strict: c.StrictOpt = False,
    ) -> None:
        opts = c.make_options(overlay=overlay, set_=set_, var=var, project=project, region=region,
                              strict=strict)
        after_opts = c.make_options(overlay=[*(overlay or ()), *(after_overlay or ())],
                                    set_=[*(set_ or ()), *(after_set or ())], var=var,
                                    project=project, region=region, strict=strict)
        after_flags = [*(f"--after-overlay {o}" for o in after_overlay or ()),
                       *(f"--after-set {s}" for s in after_set or ())]
        raise typer.Exit(diff(before, after, opts, after_opts, output, after_flags))
