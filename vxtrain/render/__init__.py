"""Text output for people: diagnostics like a compiler's, tables with rich.

Colour only on a terminal; rich honours NO_COLOR and FORCE_COLOR. JSON output
never comes through here. This package is the only one that imports rich (an
import-linter contract in pyproject.toml); the layers below return data or
report events, and the commands print through here:

- this module: the consoles, diagnostics, plain and styled lines;
- ``plan``: ``vxtrain plan``'s text, section by section;
- ``bandwidth``, ``cost``: the plans' tables and lines;
- ``packaging``: what a submit would build, and the upload bar;
- ``study``: search spaces, trial tables, the best trial.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any, TextIO

from vxtrain.diagnostics import Diagnostic, plural

_STYLE = {"error": "bold red", "warning": "bold yellow"}


@cache
def console(stderr: bool = False) -> Any:
    """A rich Console on stdout or stderr (created once, lazily: rich costs startup time)."""
    from rich.console import Console  # lazy: +16 ms that --output json (never printing through rich) saves

    # emoji=False: a ":name:" in a job's strings is printed as written (and rich's emoji
    # table stays unloaded: cold start).
    out = Console(stderr=stderr, highlight=False, soft_wrap=True, emoji=False)
    if not out.is_terminal and "COLUMNS" not in os.environ:
        # Piped output (CI logs, files) has no width; 80 columns squeeze the plan table.
        out.width = 120
    return out


def diagnostics_text(diagnostics: Sequence[Diagnostic], *, stderr: bool = True) -> None:
    """Print diagnostics one per line: ``FILE:LINE:COL: error: MESSAGE [code] (at path)``."""
    from rich.markup import escape  # lazy: as console()

    out = console(stderr)
    for d in diagnostics:
        head, _, rest = d.render().partition(f": {d.severity}: ")
        out.print(f"[bold]{escape(head)}[/]: [{_STYLE[d.severity]}]{d.severity}[/]: {escape(rest)}")


def styled_lines(lines: Iterable[tuple[str, str]]) -> None:
    """Print ``(style, text)`` pairs on stdout: each text as written (never markup) in its rich style."""
    from rich.markup import escape  # lazy: as console()

    out = console()
    for style, line in lines:
        out.print(f"[{style}]{escape(line)}[/]")


def summary_line(n_files: int, n_invalid: int, n_errors: int, n_warnings: int) -> str:
    """``3 files checked: 2 valid, 1 invalid (2 errors, 1 warning)``."""
    return (f"{plural(n_files, 'file')} checked: {n_files - n_invalid} valid, {n_invalid} invalid "
            f"({plural(n_errors, 'error')}, {plural(n_warnings, 'warning')})")


def write(text: str, stream: TextIO | None = None) -> None:
    """Plain text to stdout (or ``stream``)."""
    (stream or sys.stdout).write(text if text.endswith("\n") else text + "\n")
