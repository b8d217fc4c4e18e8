"""``vxtrain validate PATH...``: every problem of every spec, at once."""
from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Annotated

import typer

from vxtrain import api
from vxtrain.api import Options, Result
from vxtrain.commands import _common as c
from vxtrain.errors import UsageError
from vxtrain.render import console, diagnostics_text, summary_line


def validate(paths: Sequence[str], options: Options, output: c.ReportFormat = c.ReportFormat.text) -> int:
    """Validate files and folders (recursively *.yaml, *.yml); exit 1 when any is invalid."""
    results = api.validate(paths, options)
    if not results:
        raise UsageError(f"no *.yaml or *.yml files under {', '.join(paths)}")
    if output == c.ReportFormat.json:
        c.emit_json({"files": [_file_json(r) for r in results]})
    elif output in (c.ReportFormat.github, c.ReportFormat.markdown):
        # lazy: GitHub's renderings (and the plan's sections they reuse), asked for by --output alone
        from vxtrain.render import github

        diags = [d for r in results for d in r.diagnostics]
        sys.stdout.write(github.annotation_lines(diags) if output == c.ReportFormat.github
                         else github.validate_markdown(results))
    else:
        _print_text(results)
    return 0 if all(r.valid for r in results) else 1


def _file_json(result: Result) -> dict[str, object]:
    return {"path": result.file, "valid": result.valid,
            "diagnostics": [d.to_json() for d in result.diagnostics]}


def _print_text(results: Sequence[Result]) -> None:
    diags = [d for r in results for d in r.diagnostics]
    diagnostics_text(diags, stderr=False)
    errors = sum(d.severity == "error" for d in diags)
    invalid = sum(not r.valid for r in results)
    console().print(summary_line(len(results), invalid, errors, len(diags) - errors))


def register(app: typer.Typer) -> None:
    """Add the ``validate`` command."""

    @c.command(app, "validate")
    @c.spec_options
    def _cmd(
        paths: Annotated[list[str], typer.Argument(metavar="PATH...", help="Spec files or folders (recursed for *.yaml, *.yml).")],
        output: c.ReportOpt = c.ReportFormat.text,
        strict: c.StrictOpt = False,
        *,
        options: Options,
    ) -> None:
        raise typer.Exit(validate(paths, options, output))
