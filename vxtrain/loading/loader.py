"""Load a spec: the steps in order, and the promise never to raise.

1. ``read.py`` reads the file, bounded by ``MAX_FILE_BYTES`` (``limits.py``),
   and decodes it as UTF-8.
2. ``events.py`` builds plain data and the position of every key from the
   YAML event stream, within the limits, substituting ``${NAME}`` references
   (``variables.py``) as it goes; syntax errors get a hint (``hints.py``).
3. ``overlays.py`` merges the overlays (``-f``), each loaded by steps 1–2,
   then applies the ``--set`` assignments.

Every file is checked and all its problems are reported (up to
``MAX_ERRORS``), each naming its own file.
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from vxtrain.diagnostics import Diagnostic, error
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
    one error when the text cannot be used. Never raises for any input.
    """
    env = os.environ if environ is None else environ
    try:
        if isinstance(text, bytes):
            if len(text) > MAX_FILE_BYTES:
                return None, [too_large(len(text), file)]
            decoded, diags = decode(text, file)
            if decoded is None:
                return None, diags
            text = decoded
        data, positions, diags = parse(text, file, variables, env)
    except Exception as exc:  # a bug in vxtrain: report it, never a traceback
        return None, [_internal(exc, file)]
    if data is None:
        return None, diags
    return Document(data=data, file=file, positions=positions), diags


def _internal(exc: Exception, file: str) -> Diagnostic:
    """An ``internal-error``: a bug in vxtrain, reported like a problem of the file."""
    return error("internal-error", f"vxtrain could not load this file ({type(exc).__name__}: "
                 f"{exc}); please report it", file=file)


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
    Returns ``(Document, warnings)`` or ``(None, diagnostics)``; never raises.
    """
    env = os.environ if environ is None else environ
    try:
        return _load(path, overlays, sets, variables, env)
    except Exception as exc:  # a bug in vxtrain: report it, never a traceback
        return None, [_internal(exc, str(path))]


def _load(path: str | Path, overlays: Sequence[str | Path], sets: Sequence[str],
          variables: Mapping[str, str],
          environ: Mapping[str, str]) -> tuple[Document | None, list[Diagnostic]]:
    doc, diags = _load_file(path, variables, environ)
    for overlay in overlays:
        over, more = _load_file(overlay, variables, environ)
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

