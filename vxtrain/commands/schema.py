"""``vxtrain schema``: the JSON Schema of the native format (for editors and CI)."""
from __future__ import annotations

import json

import typer


def schema() -> int:
    """Print the native-format JSON Schema (Draft 2020-12) to stdout."""
    from vxtrain.spec.schema import schema as native_schema

    typer.echo(json.dumps(native_schema(), indent=2))
    return 0


def register(app: typer.Typer) -> None:
    """Add the ``schema`` command."""

    @app.command("schema")
    def _cmd() -> None:
        """Print the JSON Schema of the native spec format (use with yaml-language-server)."""
        raise typer.Exit(schema())
