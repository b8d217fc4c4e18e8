"""Requirements files that stay in the project, and pip errors that quote no file.

``build.requirements`` and every file it includes (``-r``/``-c``, as pip reads them:
relative to the including file) must resolve, links followed, inside the spec's folder
or the build's source folder. A line naming a file elsewhere (``-r
../../../../etc/shadow``) is refused before anything reads that file, naming the
requirements file and line, never quoting what the named file holds: pip would read
it and quote its first line in its error, and that error is printed and kept in CI
logs.

pip's own errors are shown through ``safe_pip_error``: every line of a requirements
file that pip read is replaced by where it is (``<line 3 of requirements.txt>``), so
a secret that found its way into one is not echoed either.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["INCLUDE", "Include", "includes", "outside_includes", "requirement_files", "safe_pip_error"]

#: A line of a requirements file that includes another file: ``-r F``, ``--requirement=F``,
#: ``-c F``, ``--constraint F`` (https://pip.pypa.io/en/stable/reference/requirements-file-format/).
INCLUDE = re.compile(r"^\s*(?:-[rc]\s*|--(?:requirement|constraint)(?:\s*=\s*|\s+))(\S+)")
#: What a written include is when it is not a local path: pip fetches these (not read here).
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
#: Bytes read of one requirements file while following includes: the tag's own bound
#: (vxtrain.images.recipe.MAX_REQUIREMENTS_BYTES) refuses more, with its own error.
_READ_LIMIT = 1 << 20
#: Lines of a file shorter than this are not replaced in pip's output (``a``, ``#``):
#: replacing them would garble every word that contains them, and they hide nothing.
_SHORTEST_QUOTED = 4


@dataclass(frozen=True)
class Include:
    """One ``-r``/``-c`` line: the file it is in, its line number, what it names as written
    and as resolved."""

    file: Path
    line: int
    written: str
    resolved: Path


def includes(data: bytes) -> list[tuple[int, str]]:
    """The files a requirements file's ``-r``/``-c`` lines name: (line number, as written), in order."""
    text = data.decode("utf-8", "replace")
    return [(n, m.group(1)) for n, line in enumerate(text.splitlines(), 1)
            if (m := INCLUDE.match(line.split(" #")[0]))]


def _inside(path: Path, roots: Sequence[Path]) -> bool:
    return any(path.is_relative_to(root) for root in roots)


def outside_includes(requirements: Path, roots: Sequence[Path]) -> list[Include]:
    """The ``-r``/``-c`` lines, in ``requirements`` and the files it includes (recursively),
    that name a local file outside every folder of ``roots`` (resolved), in the order met.
    A file outside is never opened; neither is ``requirements`` itself when it is outside
    (its own entry is then line 0). URLs are left to pip."""
    roots = [root.resolve() for root in roots]
    top = requirements.resolve()
    if not _inside(top, roots):
        return [Include(requirements, 0, str(requirements), top)]
    return [found for found in _walk(top, lambda target: _inside(target, roots))
            if not _inside(found.resolved, roots)]


def requirement_files(requirements: Path) -> list[Path]:
    """``requirements`` and the local files it includes (recursively, each once, resolved)."""
    top = requirements.resolve()
    out = [top]
    for found in _walk(top, Path.is_file):
        if found.resolved not in out and found.resolved.is_file():
            out.append(found.resolved)
    return out


def _walk(top: Path, enter: Callable[[Path], bool]) -> Iterator[Include]:
    """Every ``-r``/``-c`` line naming a local file, met breadth-first from ``top``: each file
    read once, and only those ``enter`` admits (the rest are named, never opened)."""
    seen, todo = {top}, [top]
    while todo:
        current = todo.pop(0)
        try:
            with current.open("rb") as f:
                data = f.read(_READ_LIMIT)
        except OSError:
            continue  # unreadable or not a file: the tag's reading says so in its own words
        for line, written in includes(data):
            if _URL.match(written):
                continue
            target = (current.parent / written).resolve()
            yield Include(current, line, written, target)
            if target not in seen and enter(target):
                seen.add(target)
                todo.append(target)


def safe_pip_error(stderr: str, files: Sequence[Path]) -> str:
    """pip's ``stderr`` with every line of ``files`` (the requirements files pip read) it
    quotes replaced by where that line is: ``<line 3 of requirements.txt>``."""
    quoted: dict[str, str] = {}
    for path in files:
        try:
            with path.open("rb") as f:
                text = f.read(_READ_LIMIT).decode("utf-8", "replace")
        except OSError:
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if len(line.strip()) >= _SHORTEST_QUOTED:
                quoted.setdefault(line.strip(), f"<line {n} of {path.name}>")
    out = stderr
    for line in sorted(quoted, key=len, reverse=True):  # a whole line before any part of it
        out = out.replace(line, quoted[line])
    return out
