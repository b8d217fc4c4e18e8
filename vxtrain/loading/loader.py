"""Load a spec: the steps in order, and the promise never to raise for bad input.

1. ``read.py`` reads the file, bounded by ``MAX_FILE_BYTES`` (``limits.py``),
   and decodes it as UTF-8.
2. ``events.py`` builds plain data and the position of every key from the
   YAML event stream, within the limits, substituting ``${NAME}`` references
   (``variables.py``) as it goes; syntax errors get a hint (``hints.py``).
3. ``overlays.py`` merges the overlays (``-f``), each loaded by steps 1–2,
   then applies the ``--set`` assignments.

Every file is checked and all its problems are reported (up to
``MAX_ERRORS``), each naming its own file. Each step turns the errors that mean
bad input (an unreadable or missing file, bytes that are not UTF-8, YAML that
does not parse, a value its tag refuses, a limit passed) into diagnostics where
it meets them; anything else is a bug of vxtrain's and propagates, to the
command line's one handler ("unexpected error" and a log file), never dressed
as a problem of the spec.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document
from vxtrain.loading.events import parse
from vxtrain.loading.limits import MAX_FILE_BYTES
from vxtrain.loading.overlays import SetAssignment, apply_set, merge, parse_set
from vxtrain.loading.read import decode, read, too_large

__all__ = ["load", "load_text"]


def load_text(text: str | bytes, file: str = "<string>", *, variables: Mapping[str, str] = {},
              environ: Mapping[str, str] | None = None) -> tuple[Document | None, list[Diagnostic]]:
    """Load one spec from text (or UTF-8 bytes): steps 1–2 of the module docstring.

    Returns ``(Document, warnings)``, or ``(None, diagnostics)`` with at least
    one error when the text cannot be used. Never raises for bad input.
    """
    env = os.environ if environ is None else environ
    if isinstance(text, bytes):
        if len(text) > MAX_FILE_BYTES:
            return None, [too_large(len(text), file)]
        decoded, diags = decode(text, file)
        if decoded is None:
            return None, diags
        text = decoded
    data, positions, diags = parse(text, file, variables, env)
    if data is None:
        return None, diags
    return Document(data=data, file=file, positions=positions), diags


def _load_file(path: str | Path, variables: Mapping[str, str],
               environ: Mapping[str, str]) -> tuple[Document | None, list[Diagnostic]]:
    """Steps 1–2 for one file (the base or an overlay)."""
    text, diags = read(path)
    if text is None:
        return None, diags
    return load_text(text, str(path), variables=variables, environ=environ)


def load(path: str | Path, *, overlays: Sequence[str | Path] = (), sets: Sequence[str] = (),
         variables: Mapping[str, str] = {},
         environ: Mapping[str, str] | None = None) -> tuple[Document | None, list[Diagnostic]]:
    """Load a spec file, merge ``overlays`` over it in order, then apply ``sets``.

    Overlay semantics: mappings merge recursively, lists and scalars replace,
    and an overlay value of ``null`` deletes the key from the result. Every
    file is checked (all problems are reported, each naming its own file).
    Returns ``(Document, warnings)`` or ``(None, diagnostics)``; never raises for bad input.
    """
    env = os.environ if environ is None else environ
    doc, diags = _load_file(path, variables, env)
    for overlay in overlays:
        over, more = _load_file(overlay, variables, env)
        diags += more
        if doc is not None and over is not None:
            merge(doc.data, over.data, (), doc.positions, over.positions)
    assignments: list[SetAssignment | None] = []
    for index, arg in enumerate(sets):
        parsed, more = parse_set(arg, index + 1)
        diags += more
        assignments.append(parsed)
    if doc is None or any(d.severity == "error" for d in diags):
        return None, diags
    for parsed in assignments:
        diags += apply_set(doc, *parsed) if parsed else []
    return (None if any(d.severity == "error" for d in diags) else doc), diags

