"""``vxtrain schema``: the JSON Schema of the native format, for editors and CI.

What it prints is the shipped validation schema (vxtrain/validation/schema.json)
enriched at print time with the catalog, so yaml-language-server can complete
and hover machine and accelerator types:

- ``machine_type``: ``anyOf: [{enum: <types Vertex AI training offers>}, {type: string}]``.
  Editors offer the types ``validate`` accepts; any other string stays valid
  for the schema because the rules refuse it with a better message (the
  nearest offered types), located like every other diagnostic.
- ``accelerator.type``: ``enum`` of the installed google-cloud-aiplatform's
  AcceleratorType, the real API enum. The shipped schema keeps a plain string
  there, so that ``validate`` reports a bad accelerator through its rules,
  whose message names the accelerators the machine takes.

Use it from a spec's first line::

    # yaml-language-server: $schema=./vxtrain.schema.json
"""
from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import typer

from vxtrain import catalog
from vxtrain.commands import _common as c
from vxtrain.validation.schema import schema as native_schema

if TYPE_CHECKING:  # annotations only
    from vxtrain.vocab.jobjson import JsonObject

_MACHINE_KEYS = ("machine_type",)


def enriched_schema() -> JsonObject:
    """The shipped native schema plus catalog enums for editors (a new dict each call)."""
    out = copy.deepcopy(native_schema())
    machines = catalog.training_machine_types()
    for prop in _properties_named(out, _MACHINE_KEYS):
        prop["anyOf"] = [{"enum": machines}, {"type": "string"}]
    accelerator_type = out["$defs"]["accelerator"]["properties"]["type"]
    accelerator_type["enum"] = catalog.accelerator_types()
    return out


def _properties_named(node: Any, names: tuple[str, ...]) -> Iterator[JsonObject]:
    """Every property schema under ``node`` whose key is one of ``names``."""
    if isinstance(node, dict):
        for key, sub in (node.get("properties") or {}).items():
            if key in names and isinstance(sub, dict):
                yield sub
        for value in node.values():
            yield from _properties_named(value, names)
    elif isinstance(node, list):
        for item in node:
            yield from _properties_named(item, names)


def schema() -> int:
    """Print the enriched native-format JSON Schema (Draft 2020-12) to stdout."""
    typer.echo(json.dumps(enriched_schema(), indent=2))
    return 0


def register(app: typer.Typer) -> None:
    """Add the ``schema`` command."""

    @c.command(app, "schema")
    def _cmd() -> None:
        raise typer.Exit(schema())
