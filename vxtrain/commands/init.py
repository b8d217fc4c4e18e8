"""``vxtrain init``: write a commented starter spec for a chosen job shape.

The templates are package data (vxtrain/templates/*.yaml), each a valid spec
(tests/test_init.py validates every one), so a new user starts from something
``vxtrain validate`` accepts and edits from there.
"""
from __future__ import annotations

import re
from enum import Enum
from importlib import resources
from pathlib import Path
from typing import Annotated, Optional

import typer
import yaml

from vxtrain.commands import _common as c
from vxtrain.errors import UsageError, VxtrainError

_DISPLAY_NAME = re.compile(r"^display_name: .*$", re.MULTILINE)
STDOUT = "-"


class Shape(str, Enum):
    """``--shape`` choices: one template each."""

    single = "single"
    parameter_servers = "parameter-servers"
    reduction_server = "reduction-server"
    study = "study"
    tpu = "tpu"


def template_text(shape: Shape, display_name: str | None = None) -> str:
    """The starter spec of ``shape`` (with ``display_name`` set when given)."""
    source = resources.files("vxtrain").joinpath("templates", f"{shape.value}.yaml")
    text = source.read_text(encoding="utf-8")
    if display_name:
        text = _DISPLAY_NAME.sub(lambda _: f"display_name: {_quote(display_name)}", text, count=1)
    return text


def _quote(value: str) -> str:
    """A YAML scalar for ``value`` (quoted only when it needs to be)."""
    return str(yaml.safe_dump(value, default_style=None).splitlines()[0])


def init(shape: Shape, output_file: str, *, force: bool = False, display_name: str | None = None) -> int:
    """Write the starter spec to ``output_file`` (``-``: stdout); never overwrite without ``force``."""
    text = template_text(shape, display_name)
    if output_file == STDOUT:
        typer.echo(text, nl=False)
        return 0
    target = Path(output_file)
    try:
        if target.is_dir():  # --force overwrites a file, never a folder
            raise UsageError(f"--output-file {target} is a folder: give a file name, e.g. {target / 'job.yaml'}")
        if target.exists() and not force:
            raise VxtrainError(f"{target} already exists; pass --force to overwrite it, "
                               f"or --output-file to write elsewhere")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:  # a parent that is a file, no permission, a name part past 255 bytes
        raise VxtrainError(f"cannot write {target} ({exc.strerror or exc}): give --output-file a path "
                           "you can write") from exc
    typer.echo(f"wrote {target} ({shape.value}); next: vxtrain validate {target}", err=True)
    return 0


def register(app: typer.Typer) -> None:
    """Add the ``init`` command."""

    @c.command(app, "init")
    def _cmd(
        shape: Annotated[Shape, typer.Option("--shape", help="single, parameter-servers, reduction-server, study or tpu.")] = Shape.single,
        output_file: Annotated[str, typer.Option("--output-file", help="Where to write the spec (- for stdout).")] = "job.yaml",
        force: Annotated[bool, typer.Option("--force", help="Overwrite the output file if it exists.")] = False,
        display_name: Annotated[Optional[str], typer.Option("--display-name", help="display_name of the new spec.")] = None,
    ) -> None:
        raise typer.Exit(init(shape, output_file, force=force, display_name=display_name))
