"""Text output for people: diagnostics like a compiler's, tables with rich.

Colour only on a terminal; rich honours NO_COLOR and FORCE_COLOR. JSON output
never comes through here. This package is the only one that imports rich (an
import-linter contract in pyproject.toml); the layers below return data or
report events, and the commands print through here:

- this module: the consoles, diagnostics, plain and styled lines, the emulator's start lines;
- ``plan``: ``vxtrain plan``'s text, section by section;
- ``github``: ``--output github`` (workflow-command annotations) and ``--output markdown``
  (the plan as GitHub-flavoured tables), loaded only when asked for;
- ``bandwidth``, ``cost``: the plans' tables and lines;
- ``packaging``: what a submit would build, and the upload bar;
- ``study``: search spaces, trial tables, the best trial.
"""
from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterable, Mapping, Sequence
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
    out = console(stderr)
    for d in diagnostics:
        head, _, rest = d.render().partition(f": {d.severity}: ")
        out.print(f"[bold]{_escape(head)}[/]: [{_STYLE[d.severity]}]{d.severity}[/]: {_escape(rest)}")


def styled_lines(lines: Iterable[tuple[str, str]]) -> None:
    """Print ``(style, text)`` pairs on stdout: each text as written (never markup) in its rich style."""
    out = console()
    for style, line in lines:
        out.print(f"[{style}]{_escape(line)}[/]")


def _escape(text: str) -> str:
    """``text`` with rich's markup escaped: printed as written."""
    from rich.markup import escape  # lazy: as console()

    return escape(text)


def summary_line(n_files: int, n_invalid: int, n_errors: int, n_warnings: int) -> str:
    """``3 files checked: 2 valid, 1 invalid (2 errors, 1 warning)``."""
    return (f"{plural(n_files, 'file')} checked: {n_files - n_invalid} valid, {n_invalid} invalid "
            f"({plural(n_errors, 'error')}, {plural(n_warnings, 'warning')})")


def emulator_started(address: str, http_url: str | None = None, environment: Mapping[str, str] | None = None,
                     stream: TextIO | None = None) -> None:
    """The emulator's start lines on stderr: ``vxtrain emulator listening on ADDRESS`` first
    (scripts wait for it; its last word is the gRPC address), the REST URL, then gcloud's
    settings as ``NAME=VALUE`` lines a shell can source."""
    lines = [f"vxtrain emulator listening on {address}"]
    if http_url is not None:
        lines.append(f"vxtrain emulator serving REST on {http_url}")
    lines += [f"{name}={shlex.quote(value)}" for name, value in (environment or {}).items()]
    if http_url is not None and not any(name.startswith("CLOUDSDK_AUTH_") for name in environment or {}):
        # The given token is not written for gcloud (docs/decisions.md): the user picks the file.
        lines.append("vxtrain emulator: gcloud reads a token only from a file: "
                     "(umask 077; printf %s \"$VXTRAIN_EMULATOR_TOKEN\" > FILE), then set "
                     "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE=FILE")
    out = stream or sys.stderr
    out.write("\n".join(lines) + "\n")
    out.flush()


def write(text: str, stream: TextIO | None = None) -> None:
    """Plain text to stdout (or ``stream``)."""
    (stream or sys.stdout).write(text if text.endswith("\n") else text + "\n")
