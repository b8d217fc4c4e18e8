"""A loaded document: plain data plus the file position of every key.

Stages work on plain dicts and lists (fast, easy to test); positions live in a
side table keyed by the key path, so any stage can point a diagnostic at
``FILE:LINE:COL`` without carrying wrapper objects through the pipeline.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

Key = Union[str, int]
KeyPath = tuple[Key, ...]
Format = Literal["native", "gcloud", "legacy"]
#: The file name of a spec read from standard input.
STDIN = "-"


@dataclass(frozen=True)
class Position:
    """Where a key (or a sequence item) starts: file name, 1-based line and column."""

    file: str
    line: int
    column: int


def format_path(path: Sequence[Key]) -> str:
    """``("workerPoolSpecs", 2, "machineSpec")`` → ``workerPoolSpecs[2].machineSpec``."""
    out = ""
    for key in path:
        if isinstance(key, int):
            out += f"[{key}]"
        else:
            out += f".{key}" if out else str(key)
    return out


def spec_folder(file: str) -> Path:
    """The folder a spec's relative paths (``local.workdir``, ``python_package.source``,
    ``--package-path``) resolve against: the spec file's own, or the current
    directory for a spec read from standard input (``-``) or given as text."""
    if not file or file == STDIN:
        return Path.cwd()
    return Path(file).resolve().parent


@dataclass
class Document:
    """YAML data of one spec (after overlays, --set and ${VAR}) and its positions."""

    data: Any
    file: str
    positions: dict[KeyPath, Position] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        """The folder the spec's relative paths resolve against (see :func:`spec_folder`)."""
        return spec_folder(self.file)

    def locate(self, path: Sequence[Key]) -> Position | None:
        """Position of ``path`` or of its nearest ancestor that has one."""
        probe = tuple(path)
        while True:
            pos = self.positions.get(probe)
            if pos is not None or not probe:
                return pos
            probe = probe[:-1]


@dataclass
class NativeSpec:
    """A spec in the native shape, whatever format it was written in.

    ``origin`` maps native key paths to the source document's key paths (empty
    for native input, where they are the same); diagnostics about the native
    shape are reported at the place the user actually wrote.
    """

    data: dict[str, Any]
    format: Format
    source: Document
    origin: dict[KeyPath, KeyPath] = field(default_factory=dict)
    #: The spec as sent (formats.gcloud.as_sent): a native key path whose value
    #: ``extra:`` set (or that a pool inherits from ``defaults``) → the native key path
    #: that wrote it; the longest written prefix decides. Empty: every value is where it sits.
    sent: dict[KeyPath, KeyPath] = field(default_factory=dict)

    def source_path(self, path: Sequence[Key]) -> KeyPath:
        """The source document's key path for a native key path."""
        native = tuple(path)
        if self.sent:
            native = self._written(native)
        if not self.origin:
            return native
        for cut in range(len(native), -1, -1):
            mapped = self.origin.get(native[:cut])
            if mapped is not None:
                return mapped
        return native

    def _written(self, path: KeyPath) -> KeyPath:
        for cut in range(len(path), 0, -1):
            mapped = self.sent.get(path[:cut])
            if mapped is not None:
                return mapped
        return path

    def where(self, path: Sequence[Key]) -> dict[str, Any]:
        """Keyword arguments locating a diagnostic: path, file, line, column."""
        src = self.source_path(path)
        pos = self.source.locate(src)
        return {
            "path": format_path(src),
            "file": pos.file if pos else self.source.file,
            "line": pos.line if pos else None,
            "column": pos.column if pos else None,
        }


def get_path(data: Any, path: Sequence[Key]) -> Any:
    """Value at ``path`` inside nested dicts/lists, or None when absent."""
    cur = data
    for key in path:
        if isinstance(cur, Mapping) and isinstance(key, str):
            cur = cur.get(key)
        elif isinstance(cur, list) and isinstance(key, int) and -len(cur) <= key < len(cur):
            cur = cur[key]
        else:
            return None
    return cur
