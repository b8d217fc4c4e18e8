"""Overlays (``-f``) merged over the base spec, then ``--set`` assignments.

Overlays are loaded like the base and deep-merged over it in order: mappings
merge key by key, lists and scalars replace, and an overlay value of ``null``
deletes the key. Merged-in positions point at the overlay file.

``--set dotted.key[N]=value`` assignments come last, values typed by YAML
rules (``x=`` is the empty string; no ``${}`` substitution — the shell already
had its chance). Missing intermediate mappings are created; an index may
replace an item or append one at the end of a list. What a value sets is
located at ``--set:1:N`` (the Nth ``--set``).
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading.document import Document, KeyPath, Position, format_path
from vxtrain.loading.events import copy_data, parse
from vxtrain.loading.limits import MAX_DEPTH

_MISSING: Any = object()


def merge(base: dict[str, Any], over: dict[str, Any], path: KeyPath,
          positions: dict[KeyPath, Position], over_positions: Mapping[KeyPath, Position]) -> None:
    """Deep-merge ``over`` into ``base`` in place (null deletes), moving positions along."""
    for key, value in over.items():
        kp = path + (key,)
        old = base.get(key, _MISSING)
        if type(old) is dict and type(value) is dict:
            merge(old, value, kp, positions, over_positions)
            continue
        if old is not _MISSING:
            _drop(positions, kp, old)
            del base[key]
        if value is not None:
            base[key] = value
            _graft(positions, over_positions, kp, value)


def subpaths(path: KeyPath, value: Any) -> Iterator[KeyPath]:
    """``path`` and the path of every node under it."""
    yield path
    if type(value) is dict:
        for key, child in value.items():
            yield from subpaths(path + (key,), child)
    elif type(value) is list:
        for index, child in enumerate(value):
            yield from subpaths(path + (index,), child)


def _drop(positions: dict[KeyPath, Position], path: KeyPath, value: Any) -> None:
    for sub in subpaths(path, value):
        positions.pop(sub, None)


def _graft(positions: dict[KeyPath, Position], source: Mapping[KeyPath, Position],
           path: KeyPath, value: Any) -> None:
    for sub in subpaths(path, value):
        pos = source.get(sub)
        if pos is not None:
            positions[sub] = pos


# ---------------------------------------------------------------- --set

#: One dotted segment; compiled on first use (re's own cache): only --set reads it.
_SEGMENT = r"(?P<name>[^.\[\]]+)(?P<indices>(?:\[\d+\])*)\Z"
_SET_HELP = "write --set dotted.key=value, e.g. workers.replicas=4 or defaults.args[0]=--epochs=5"


#: One parsed --set: key path, typed value, its Position, and the argument as given.
SetAssignment = tuple[KeyPath, Any, Position, str]


def parse_set(arg: str, column: int = 1) -> tuple[SetAssignment | None, list[Diagnostic]]:
    """Parse one ``--set`` argument into (key path, typed value, position, arg).

    ``column`` is the 1-based index of the argument among the --set options;
    it becomes the Position (file ``--set``, line 1) of what the value sets.
    """
    def bad(why: str) -> tuple[None, list[Diagnostic]]:
        return None, [error("set-syntax", f"--set {arg!r}: {why}; {_SET_HELP}",
                            file="--set", line=1, column=column)]

    key, eq, text = arg.partition("=")
    if not eq:
        return bad("no '=' between the key and the value")
    path: list[str | int] = []
    for segment in key.split("."):
        m = re.match(_SEGMENT, segment)
        if m is None:
            return bad(f"bad key segment {segment!r} (empty, or a malformed [N] index)")
        path.append(m.group("name"))
        path += [int(i) for i in re.findall(r"\[(\d+)\]", m.group("indices"))]
    value, diags = _set_value(text)
    if diags:
        return bad(f"the value is not valid YAML ({diags[0].message})")
    depth = len(path) + _depth(value)  # the mappings the path makes, then the value's own nesting
    if depth > MAX_DEPTH:
        shown = arg if len(arg) <= 60 else arg[:57] + "..."
        return None, [error("too-deep", f"--set {shown!r}: nesting {depth} levels deep, deeper than "
                                        f"{MAX_DEPTH}; a spec needs a handful",
                            file="--set", line=1, column=column)]
    return (tuple(path), value, Position("--set", 1, column), arg), []


def _depth(value: Any) -> int:
    """Nesting of a parsed value (0 for a scalar); the parser bounds it by MAX_DEPTH."""
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def _set_value(text: str) -> tuple[Any, list[Diagnostic]]:
    """The typed value of a ``--set`` (parsed as a YAML document of any root), or its errors."""
    if not text.strip():
        return text, []
    value, _, diags = parse(text, "--set", None, {}, any_root=True)
    if any(d.code == "empty-spec" for d in diags):  # only a comment, e.g. x=#ff0000
        return text, []
    return value, [d for d in diags if d.severity == "error"]


def apply_set(doc: Document, path: KeyPath, value: Any, pos: Position, arg: str) -> list[Diagnostic]:
    """Assign ``value`` at ``path`` in ``doc``, creating intermediate mappings."""
    cur: Any = doc.data
    for depth, key in enumerate(path):
        where = path[:depth + 1]
        last = depth == len(path) - 1
        problem = _set_step_problem(cur, key, last, path[:depth])
        if problem:
            return [error("set-syntax", f"--set {arg!r}: {problem}", format_path(where),
                          file="--set", line=pos.line, column=pos.column)]
        if last:
            _assign(doc.positions, cur, key, value, where, pos)
            break
        if type(cur) is dict and cur.get(key) is None and isinstance(path[depth + 1], str):
            cur[key] = {}  # an intermediate mapping, created (missing or null)
            doc.positions[where] = pos
        cur = cur.get(key) if type(cur) is dict else cur[key]
    return []


def _set_step_problem(cur: Any, key: str | int, last: bool, parent: KeyPath) -> str:
    """Why ``key`` cannot be used on ``cur`` (empty when it can)."""
    shown = format_path(parent) or "the document root"
    if isinstance(key, int):
        if type(cur) is not list:
            kind = "missing" if cur is None else f"a {type(cur).__name__}"
            return f"{shown} is {kind}, not a list, so [{key}] cannot index it"
        limit = len(cur) if last else len(cur) - 1
        return "" if key <= limit else f"index [{key}] is past the end of {shown} ({len(cur)} items)"
    if type(cur) is not dict:
        kind = "missing" if cur is None else f"a {type(cur).__name__}"
        return f"{shown} is {kind}, not a mapping, so it has no key {key!r}"
    return ""


def _assign(positions: dict[KeyPath, Position], cur: list[Any] | dict[str, Any], key: str | int,
            value: Any, path: KeyPath, pos: Position) -> None:
    """``cur[key] = value`` (``_set_step_problem`` checked that the key fits ``cur``)."""
    if isinstance(cur, list):
        assert isinstance(key, int)
        if key == len(cur):
            cur.append(None)
        else:
            _drop(positions, path, cur[key])
        cur[key] = copy_data(value)
    else:
        assert isinstance(key, str)
        _drop(positions, path, cur.get(key))
        cur[key] = copy_data(value)
    for sub in subpaths(path, value):
        positions[sub] = pos
