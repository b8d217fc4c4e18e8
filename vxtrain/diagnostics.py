"""Diagnostic records and their text / JSON rendering.

A diagnostic is what every stage returns instead of raising: the loader, the
format converters, the schema check and the semantic rules all produce lists
of them, so ``validate`` can report every problem of a file at once. ``plural``
is here, at the bottom, so every layer's messages count things the same way.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal, TypedDict

Severity = Literal["error", "warning"]

# Annotations only: every command imports this module, and a TypedDict class costs ~15 µs a
# field to create (measured).
if TYPE_CHECKING:
    class Location(TypedDict):
        """Where a diagnostic points, as keywords for :func:`error` and :func:`warning`: the key
        path as the user wrote it and its file, line and column (None where not known)."""

        path: str
        file: str | None
        line: int | None
        column: int | None


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a spec, located by file, line, column and key path."""

    severity: Severity
    code: str
    message: str
    path: str = ""
    line: int | None = None
    column: int | None = None
    file: str | None = None

    def to_json(self) -> dict[str, object]:
        """The Contract's D shape (``file`` only when known)."""
        out: dict[str, object] = {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "column": self.column,
        }
        if self.file is not None:
            out["file"] = self.file
        return out

    def with_file(self, file: str) -> Diagnostic:
        """A copy located in ``file`` unless it already names one."""
        return self if self.file else replace(self, file=file)

    def render(self) -> str:
        """Compiler-style text: ``FILE:LINE:COL: error: MESSAGE [code] (at path)``."""
        where = self.file or "<input>"
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        at = f" (at {self.path})" if self.path else ""
        return f"{where}: {self.severity}: {self.message} [{self.code}]{at}"


def plural(n: int, word: str) -> str:
    """``1 GPU``, ``2 GPUs``: the one wording of a count in messages (validation, local runs, render)."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def error(code: str, message: str, path: str = "", **where: object) -> Diagnostic:
    """Shorthand for an error diagnostic."""
    return Diagnostic("error", code, message, path, **where)  # type: ignore[arg-type]


def warning(code: str, message: str, path: str = "", **where: object) -> Diagnostic:
    """Shorthand for a warning diagnostic."""
    return Diagnostic("warning", code, message, path, **where)  # type: ignore[arg-type]


def has_errors(diagnostics: Iterable[Diagnostic], strict: bool = False) -> bool:
    """True when any diagnostic is an error (or any at all under ``strict``)."""
    return any(d.severity == "error" or strict for d in diagnostics)


def sort_key(d: Diagnostic) -> tuple[str, int, int, str]:
    """Order diagnostics as a reader expects: by file, then position."""
    return (d.file or "", d.line or 0, d.column or 0, d.code)
