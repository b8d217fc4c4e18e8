"""pip's errors that quote no line of a requirements file.

pip's own errors are shown through ``safe_pip_error``: every line of a requirements
file that pip read is replaced by where it is (``<line 3 of requirements.txt>``), so
a secret that found its way into one is not echoed either. Which files pip reads (the
``-r``/``-c`` includes, kept inside the project) is vxtrain.sources.requirements'.
"""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from vxtrain.sources.requirements import MAX_REQUIREMENTS_BYTES

__all__ = ["safe_pip_error"]

#: Lines of a file shorter than this are not replaced in pip's output (``a``, ``#``):
#: replacing them would garble every word that contains them, and they hide nothing.
_SHORTEST_QUOTED = 4


def safe_pip_error(stderr: str, files: Sequence[Path]) -> str:
    """pip's ``stderr`` with every line of ``files`` (the requirements files pip read) it
    quotes replaced by where that line is: ``<line 3 of requirements.txt>``."""
    quoted: dict[str, str] = {}
    for path in files:
        try:
            with path.open("rb") as f:
                text = f.read(MAX_REQUIREMENTS_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if len(line.strip()) >= _SHORTEST_QUOTED:
                quoted.setdefault(line.strip(), f"<line {n} of {path.name}>")
    out = stderr
    for line in sorted(quoted, key=len, reverse=True):  # a whole line before any part of it
        out = out.replace(line, quoted[line])
    return out
