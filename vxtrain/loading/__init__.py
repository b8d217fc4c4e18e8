"""Stage 1, load: YAML text → a document with the position of every key.

Nothing here knows about job formats. Where each piece lives:

* ``loader.py`` — ``load`` and ``load_text``: the steps in order, never raising.
* ``read.py`` — reading a file, bounded, and decoding it as UTF-8.
* ``limits.py`` — the size, depth, node, character and error limits.
* ``events.py`` — the YAML event builder: plain data, key positions, duplicate
  keys, tags, aliases, the limits enforced while building.
* ``scalars.py`` — typing scalars as PyYAML's SafeLoader does.
* ``variables.py`` — ``${NAME}`` / ``${NAME:-default}`` substitution.
* ``hints.py`` — YAML syntax errors, located, with a hint.
* ``overlays.py`` — overlays (``-f``, deep merge) and ``--set dotted.key=value``.
* ``document.py`` — the Document / NativeSpec / Position types every stage uses.

``load`` and ``load_text`` are exported here, imported on first use: the
loader imports PyYAML (~20 ms), and every stage imports ``document.py``
through this package without needing it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vxtrain.loading.loader import load, load_text

__all__ = ["load", "load_text"]


def __getattr__(name: str) -> Any:
    """``load`` / ``load_text`` from ``loader.py``, imported when first asked for."""
    if name in __all__:
        from vxtrain.loading import loader  # lazy: +16 ms (PyYAML) that the stages importing document never need

        value = getattr(loader, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
