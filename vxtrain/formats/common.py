"""What the format converters share: building a native dict with its origin map.

Converters build the native dict through :class:`Conversion`, which also
records, for every native key path it writes, the source key path it came
from (``NativeSpec.origin``): a later rule that complains about
``workers.machine_type`` then points at ``workerPoolSpecs[1].machineSpec.machineType``
with the line and column the user wrote.
"""
from __future__ import annotations

import copy
import difflib
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import Document, Format, KeyPath, NativeSpec, format_path
from vxtrain.model import merge_defaults

if TYPE_CHECKING:  # annotations only (validate's path)
    from vxtrain.diagnostics import Location
    from vxtrain.vocab.jobjson import JsonObject

# --- building a native dict with its origin map ------------------------------------

def _set_path(root: JsonObject, path: KeyPath, value: Any) -> None:
    """Set ``value`` at ``path``, creating dicts (str keys) and lists (int keys) on the way."""
    cur: Any = root
    for key, nxt in zip(path, path[1:]):
        make: type = list if isinstance(nxt, int) else dict
        if isinstance(key, int):
            while len(cur) <= key:
                cur.append(make())
        elif not isinstance(cur.get(key), make):
            cur[key] = make()
        cur = cur[key]
    last = path[-1]
    if isinstance(last, int):
        while len(cur) <= last:
            cur.append({})
    cur[last] = value


def suggest(key: str, allowed: Iterable[str]) -> str | None:
    """The accepted key closest to ``key`` (difflib), if any is close enough."""
    close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.6)
    return close[0] if close else None


@dataclass
class Conversion:
    """A native dict under construction, with its origin map and diagnostics. ``data`` holds the
    user's values as written (a YAML document in the native shape: checked later, by the schema)."""

    document: Document
    data: JsonObject = field(default_factory=dict)
    origin: dict[KeyPath, KeyPath] = field(default_factory=lambda: {(): ()})
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def link(self, native: KeyPath, source: KeyPath) -> None:
        """Record that native key path ``native`` came from ``source``."""
        self.origin[native] = source

    def put(self, native: KeyPath, value: Any, source: KeyPath, *, items: bool = True) -> None:
        """Write ``value`` at ``native`` and link it to ``source``.

        With ``items``, list items and map keys beneath are linked one to one too.
        """
        _set_path(self.data, native, value)
        self.link(native, source)
        if not items:
            return
        if isinstance(value, list):
            for i in range(len(value)):
                self.link(native + (i,), source + (i,))
        elif isinstance(value, Mapping):
            for k in value:
                self.link(native + (k,), source + (k,))

    def where(self, source: KeyPath) -> Location:
        """Diagnostic location keywords of a source key path."""
        pos = self.document.locate(source)
        return {"path": format_path(source), "file": pos.file if pos else self.document.file,
                "line": pos.line if pos else None, "column": pos.column if pos else None}

    def error(self, code: str, message: str, source: KeyPath) -> None:
        """Add an error located at a source key path."""
        self.diagnostics.append(error(code, message, **self.where(source)))

    def warning(self, code: str, message: str, source: KeyPath) -> None:
        """Add a warning located at a source key path."""
        self.diagnostics.append(warning(code, message, **self.where(source)))

    def check_keys(self, mapping: Mapping[str, Any], allowed: Iterable[str], source: KeyPath,
                   hints: Mapping[str, str] | None = None) -> None:
        """An ``unknown-key`` error (with a did-you-mean) for each key of ``mapping`` not in ``allowed``."""
        accepted = sorted(set(allowed))
        for key in mapping:
            if key in accepted:
                continue
            close = suggest(str(key), accepted)
            hint = (hints or {}).get(str(key)) or (
                f"did you mean '{close}'?" if close else "accepted keys: " + ", ".join(accepted))
            where = format_path(source) or "the document root"
            self.error("unknown-key", f"unknown key '{key}' in {where}; {hint}", source + (key,))

    def mapping(self, value: Any, source: KeyPath, what: str) -> Mapping[str, Any] | None:
        """``value`` when it is a mapping; else a ``wrong-type`` error and None (None stays silent)."""
        if value is None or isinstance(value, Mapping):
            return value
        self.error("wrong-type", f"{what} must be a mapping, got {describe(value)}", source)
        return None

    def result(self, fmt: Format) -> tuple[NativeSpec, list[Diagnostic]]:
        """The finished NativeSpec and the diagnostics of the conversion."""
        return NativeSpec(data=self.data, format=fmt, source=self.document, origin=self.origin), self.diagnostics


def describe(value: Any) -> str:
    """``value`` as short JSON, for messages that name the bad value."""
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def as_int(value: Any) -> int | None:
    """An int from an int or a decimal string (int64 fields are strings in proto JSON)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and _DECIMAL.fullmatch(value.strip()):
        return int(value.strip())
    return None


#: ASCII digits only: str.isdigit() also takes "²" (which int() refuses) and "٣".
_DECIMAL = re.compile(r"-?[0-9]+")


def int_or_same(value: Any) -> Any:
    """``as_int(value)`` when it is a whole number, else ``value`` itself (the schema
    check then reports it with the user's own spelling)."""
    number = as_int(value)
    return value if number is None else number


def humanize_seconds(seconds: int) -> str:
    """``86400`` → ``1d``, ``5400`` → ``90m``, ``61`` → ``61s`` (the native duration forms)."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def proto_duration(value: Any) -> str | None:
    """Proto JSON duration (``"86400s"``, ``"1.5s"``) or a number of seconds → native form."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return humanize_seconds(value) if value >= 0 else None
    if isinstance(value, float):
        seconds = value
    elif isinstance(value, str) and value.strip().endswith("s"):
        try:
            seconds = float(value.strip()[:-1])
        except ValueError:
            return None
    else:
        return None
    # NaN and infinity ("infs", .inf) are no duration: the caller reports the value.
    return humanize_seconds(int(seconds)) if math.isfinite(seconds) and seconds >= 0 else None
