"""The rungs of a spec's ``fallback:`` ladder, each a whole spec of its own.

Each entry of ``fallback:`` is an overlay on the spec (deep-merged as ``-f``
merges: mappings key by key, lists and scalars replace, ``null`` deletes), never
on the previous entry: rung N is the spec with ``fallback[N-1]`` merged over it,
and rung 0 is the spec itself. A rung is a NativeSpec over the *same* source
document, with an origin map that sends every key the overlay wrote to the
overlay's own lines (``fallback[1].workers.machine_type``); keys the rung
inherits keep pointing at the spec's lines.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from vxtrain.loading.document import KeyPath, NativeSpec, Position
from vxtrain.loading.events import copy_data
from vxtrain.loading.overlays import merge, subpaths

#: The spec key that lists the rungs after rung 0.
FALLBACK_KEY = "fallback"


@dataclass
class Rung:
    """One rung of the ladder: its number (1 = ``fallback[0]``), its whole spec, and the
    key paths whose value its entry wrote (set, replaced or deleted) in that spec."""

    number: int
    spec: NativeSpec
    written: frozenset[KeyPath] = frozenset()

    @property
    def entry(self) -> KeyPath:
        """The key path of the overlay this rung comes from: ``("fallback", number - 1)``."""
        return (FALLBACK_KEY, self.number - 1)


def entries(native: NativeSpec) -> list[Any]:
    """The ``fallback:`` list as written (empty when absent, or not a list: the schema says so)."""
    raw = native.data.get(FALLBACK_KEY)
    return raw if isinstance(raw, list) else []


def rungs(native: NativeSpec, limit: int | None = None) -> list[Rung]:
    """Rungs 1..N of ``native`` (rung 0 is ``native`` itself), or only those of the first
    ``limit`` entries. An entry that is not a mapping makes no rung: the schema check of
    rung 0 reports it."""
    return [Rung(index + 1, *_rung_spec(native, index, over))
            for index, over in enumerate(entries(native)[:limit]) if isinstance(over, dict)]


def equal(a: Any, b: Any) -> bool:
    """``a == b`` for YAML data, types and all (``1``, ``1.0`` and ``true`` compare equal in
    Python, but a job compiled from each differs)."""
    if type(a) is not type(b):
        return False
    if type(a) is dict:
        return a.keys() == b.keys() and all(equal(v, b[k]) for k, v in a.items())
    if type(a) is list:
        return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))
    return bool(a == b)


def _rung_spec(native: NativeSpec, index: int, over: dict[str, Any]) -> tuple[NativeSpec, frozenset[KeyPath]]:
    """The spec with entry ``index`` merged over it (and no ``fallback:`` of its own), and the
    key paths the entry wrote."""
    base = {k: copy_data(v) for k, v in native.data.items() if k != FALLBACK_KEY}
    entry: KeyPath = (FALLBACK_KEY, index)
    # merge() moves positions along; here the origin map does that job, so the
    # positions it is given are throwaway tables.
    scratch: dict[KeyPath, Position] = {}
    over = copy_data(over)
    merge(base, over, (), scratch, {})
    origin = dict(native.origin)
    written = frozenset(_written(over, base, ()))
    for path in written:
        origin[path] = native.source_path(entry) + path
    return NativeSpec(data=base, format=native.format, source=native.source, origin=origin), written


def _written(over: dict[str, Any], merged: dict[str, Any], path: KeyPath) -> Iterator[KeyPath]:
    """The key paths whose value comes from the overlay ``over``: every node of a value it
    set, not the mappings it only merged into (those stay the spec's)."""
    for key, value in over.items():
        here = path + (key,)
        if type(value) is dict and type(merged.get(key)) is dict and not _replaced(value, merged[key]):
            yield from _written(value, merged[key], here)
            continue
        yield from subpaths(here, merged.get(key))


def _replaced(over: dict[str, Any], merged: dict[str, Any]) -> bool:
    """True when the mapping in the result is the overlay's own (the spec had none there)."""
    return over is merged
