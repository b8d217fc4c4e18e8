"""``vxtrain quota FILE``: the job's quota needs against the project's limits in its region.

The limits come from the Cloud Quotas API (Application Default Credentials), or from
the emulator at ``--endpoint``; exit 5 when a need is above a limit, 0 otherwise
(an unknown limit is not a shortage: the service decides).
"""
from __future__ import annotations

import typer

from vxtrain import api
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.errors import NoCapacity
from vxtrain.render.progress import reporting
from vxtrain.render.quota import quota_text


def quota(path: str, options: Options, *, output: c.OutputFormat = c.OutputFormat.text,
          endpoint: str | None = None) -> int:
    """Print the quota report; 5 when a need is above a limit."""
    with reporting():
        report = api.quota(path, options, endpoint=endpoint)
    if output is c.OutputFormat.json:
        c.emit_json(report.to_json())
    else:
        quota_text(report)
    return 0 if report.fits else NoCapacity.exit_code  # docs/cli.md, "Exit codes": no capacity


def register(app: typer.Typer) -> None:
    """Add the ``quota`` command."""

    @c.command(app, "quota")
    @c.spec_options
    def _cmd(
        path: c.SpecArg,
        endpoint: c.EndpointOpt = None,
        output: c.OutputOpt = c.OutputFormat.text,
        strict: c.StrictOpt = False,
        *,
        options: Options,
    ) -> None:
        raise typer.Exit(quota(path, options, output=output, endpoint=endpoint))
