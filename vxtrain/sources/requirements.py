"""The requirements files a ``build:`` reads: their ``-r``/``-c`` includes, kept inside the
project, what the image tag covers of them, and their local path requirements.

``build.requirements`` and every file it includes (``-r``/``-c``, as pip reads them:
relative to the including file) must resolve, links followed, inside the spec's folder
or the build's source folder. A line naming a file elsewhere (``-r
../../../../etc/shadow``) is refused before anything reads that file, naming the
requirements file and line, never quoting what the named file holds: pip would read
it and quote its first line in its error, and that error is printed and kept in CI
logs (vxtrain.images.safety keeps pip's own errors from quoting them).

Pure file reading, no pip: validation checks these files with it, ``plan`` hashes them
into the image's tag (vxtrain.images.recipe), and the dependency layer installs from
them (vxtrain.images.dependencies).
"""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO
from urllib.parse import unquote, urlparse

from vxtrain.errors import VxtrainError
from vxtrain.sources.folder import describe

__all__ = ["INCLUDE", "Include", "LocalRequirement", "MAX_REQUIREMENTS_BYTES", "RequirementsError", "includes",
           "local_requirements", "outside_includes", "requirement_files", "requirements_bytes"]

#: A line of a requirements file that includes another file: ``-r F``, ``--requirement=F``,
#: ``-c F``, ``--constraint F`` (https://pip.pypa.io/en/stable/reference/requirements-file-format/).
INCLUDE = re.compile(r"^\s*(?:-[rc]\s*|--(?:requirement|constraint)(?:\s*=\s*|\s+))(\S+)")
#: What a written include is when it is not a local path: pip fetches these (not read here).
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
#: At most this many bytes of requirements, the file and its includes together (1 MiB):
#: real ones are a few KiB, and a ``-r`` naming a data file must not be read whole.
#: Also what is read of one file while following includes (requirements_bytes says
#: when they pass it, in its own words).
MAX_REQUIREMENTS_BYTES = 1 << 20


class RequirementsError(VxtrainError):
    """A requirements file (or one it includes) that cannot be read, or past the bound."""


@dataclass(frozen=True)
class Include:
    """One ``-r``/``-c`` line: the file it is in, its line number, what it names as written
    and as resolved (for a URL, which pip fetches and nothing here reads, a path that
    means nothing)."""

    file: Path
    line: int
    written: str
    resolved: Path

    @property
    def url(self) -> bool:
        """True when the line names a URL, not a local file."""
        return _URL.match(self.written) is not None


def includes(data: bytes) -> list[tuple[int, str]]:
    """The files a requirements file's ``-r``/``-c`` lines name: (line number, as written), in order."""
    return [(n, m.group(1)) for n, text in _lines(data) if (m := INCLUDE.match(text))]


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
    return [found for found, _ in _walk(top, lambda target: _inside(target, roots))
            if not found.url and not _inside(found.resolved, roots)]


def requirement_files(requirements: Path) -> list[Path]:
    """``requirements`` and the local files it includes (recursively, each once, resolved)."""
    top = requirements.resolve()
    return [top, *(found.resolved for found, body in _walk(top, _is_file) if body is not None)]


def requirements_bytes(path: Path, folders: Sequence[Path] = ()) -> bytes:
    """The bytes the tag covers for the requirements file ``path``: its own, then each file it
    includes (``-r``/``-c``, recursively, each once) framed by the name it was written as,
    then the content of each local path requirement (a wheel's bytes, a folder's files:
    an edited wheel is a new image). An include that is not a local file (a URL, a missing
    one) counts by its name only. ``folders``: where local paths resolve from (the first) and
    must stay in (see local_requirements; default the file's folder). RequirementsError past
    MAX_REQUIREMENTS_BYTES in all, or for a file it cannot read."""
    left = MAX_REQUIREMENTS_BYTES

    def read(file: Path) -> bytes:
        nonlocal left
        data = _read_bounded(file, left, path)
        left -= len(data)
        return data

    first = read(path)
    out, seen = [first], {path.resolve()}
    for found, body in _walk(path, _is_there, read, first):
        if found.resolved in seen:
            continue
        seen.add(found.resolved)
        out.append(b"\0include\0" + found.written.encode() + b"\0" + str(len(body or b"")).encode() + b"\0"
                   + (body or b""))
        if body is not None:
            _no_local_paths(found.resolved, body, (folders or (path.parent,))[0])
    for local in local_requirements(path, first, folders or (path.parent,)):
        out.append(b"\0local\0" + local.written.encode() + b"\0" + local.content_digest().encode())
    return b"".join(out)


def _head(path: Path) -> bytes | None:
    """The first MAX_REQUIREMENTS_BYTES of ``path``; None when it cannot be read or is no file
    (the tag's reading, requirements_bytes, says so in its own words)."""
    try:
        with _open_regular(path) as f:
            return f.read(MAX_REQUIREMENTS_BYTES)
    except OSError:
        return None


class _NotRegular(OSError):
    """A name that is there but is no regular file (a FIFO, a socket, a device, a folder)."""


def _open_regular(path: Path) -> BinaryIO:
    """``path`` opened for reading when it is a regular file; _NotRegular when it is something
    else. Opened with O_NONBLOCK, then fstat-ed: opening a FIFO blocks until a writer comes, so
    ``-r fifo`` hung validate and plan forever (as a FIFO spec did: loading.read)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _NotRegular(f"{path} is not a regular file")
    return os.fdopen(fd, "rb")


def _walk(top: Path, enter: Callable[[Path], bool], read: Callable[[Path], bytes | None] = _head,
          data: bytes | None = None) -> Iterator[tuple[Include, bytes | None]]:
    """Every ``-r``/``-c`` line met breadth-first from ``top`` (its bytes ``data``, else ``read``
    reads them). Each comes with the bytes of the file it names when this line is the first to
    name it and ``enter`` admits it (read once, by ``read``), else None: a file not admitted, a
    URL, one named again is never opened. One walker for the three readers: what validation
    checks is what the tag covers and what pip's errors are cleaned of.

    Followed as pip follows them (``req_file.py``: ``os.path.join(os.path.dirname(filename),
    req_path)``): from the folder of the name the including file was reached by, not of a
    link's target, so ``-r ../x.txt`` in ``sub/more.txt``, a link to ``a/b/more.txt``, is
    ``x.txt`` beside ``sub/``. A file met again by a name in another folder is read again
    from there, as pip does; its bytes are the same."""
    seen = {(top.resolve(), top.parent.resolve())}  # (the file, the folder its includes are read from)
    todo = [(top, read(top) if data is None else data)]
    while todo:
        current, body = todo.pop(0)
        if body is None:
            continue  # unreadable: requirements_bytes' reader raises instead
        for line, written in includes(body):
            named = current.parent / written  # as pip names it: the next level's includes are read from its folder
            found = Include(current, line, written, named.resolve())
            entered = None
            key = (found.resolved, named.parent.resolve())
            if not found.url and key not in seen and enter(found.resolved):
                seen.add(key)
                entered = read(found.resolved)
                todo.append((named, entered))
            yield found, entered


def _is_there(path: Path) -> bool:
    """Whether ``path`` names something other than a folder: it is read, and refused when it is
    no regular file (a missing include, or a folder, counts by its name: pip says what is wrong)."""
    return os.path.exists(path) and not os.path.isdir(path)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name part past 255 bytes: no such file
        return False


def _read_bounded(path: Path, budget: int, top: Path) -> bytes:
    """At most ``budget`` bytes of ``path`` (RequirementsError when it holds more, or cannot be read)."""
    named = "" if path == top else f" (included by {top.name})"
    try:
        with _open_regular(path) as f:
            data = f.read(budget + 1)
    except _NotRegular as exc:
        raise RequirementsError(f"{path}{named} is not a regular file (a FIFO, a socket or a device), "
                                "which pip would wait on or refuse: name a requirements file") from exc
    except OSError as exc:
        raise RequirementsError(f"cannot read {path} ({exc.strerror or exc}): make it readable") from exc
    if len(data) > budget:
        raise RequirementsError(f"{path}{named} passes the {MAX_REQUIREMENTS_BYTES // 1024:,} KiB that "
                                "requirements (the file and its -r/-c includes) may take: a requirements file "
                                "lists packages; name data files nowhere in it")
    return data


#: A requirement line that is a local path: ``./libs/pkg``, ``../x.whl``, ``/abs``, ``.``, ``file:…``,
#: optionally ``-e``/``--editable``, then extras and markers (``[gpu]; python_version < "3.11"``).
_LOCAL = re.compile(r"^\s*(?P<editable>(?:-e|--editable)(?:\s*=\s*|\s+))?"
                    r"(?:[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?\s*@\s*)?"
                    r"(?P<path>(?:\.{1,2}/|/|file:)[^\s;\[]*|\.{1,2}(?=[\s;\[]|$)"
                    # pip takes any name with a slash for a path (req_install._looks_like_path), and an
                    # archive's file name for that file when it exists: a URL (scheme:) or an option is neither
                    r"|(?![A-Za-z][A-Za-z0-9+.-]*:|-)[^\s;\[@=<>!~/]*/[^\s;\[]*"
                    r"|(?!-)[^\s;\[/@=<>!~:]+\.(?:whl|zip|tar\.gz|tgz|tar\.bz2|tbz|tar\.xz|txz|tar)(?=[\s;\[]|$))"
                    r"(?P<rest>.*)$")
#: ``-e NAME``: pip installs the folder NAME (from the working directory) when there is one, else
#: refuses the line (an editable is a path or a VCS URL, never an index name).
_EDITABLE_NAME = re.compile(r"^\s*(?P<editable>(?:-e|--editable)(?:\s*=\s*|\s+))"
                            r"(?P<path>[^\s;\[/:@=<>!~]+)(?P<rest>.*)$")


def _local_match(line: str, spec_folder: Path) -> re.Match[str] | None:
    """The line's local path (pip's reading of it, from ``spec_folder``), or None for an index
    requirement, a URL or an option."""
    found = _LOCAL.match(line)
    if found is not None:
        return found
    editable = _EDITABLE_NAME.match(line)
    if editable is not None and (spec_folder / editable.group("path")).is_dir():
        return editable
    return None


@dataclass(frozen=True)
class LocalRequirement:
    """A requirements line that names a local wheel or project folder (not an index package)."""

    file: Path
    line: int
    written: str  # the path as written (``./wh/x-1.0-py3-none-any.whl``)
    path: Path  # resolved from the spec's folder, links followed
    editable: bool
    rest: str  # extras and markers after the path, as written

    @property
    def wheel(self) -> bool:
        """True for a wheel file (used as it is), False for a project folder (built into a wheel)."""
        return self.path.suffix == ".whl"

    def content_digest(self) -> str:
        """What the tag covers of it: the wheel's bytes, or the folder's files (vxtrain.sources.folder)."""
        if self.wheel:
            # lazy: hashlib loads OpenSSL's libcrypto, ~3.5 ms (-X importtime); validation reads this
            # module for every build.requirements, and only a local wheel needs it
            import hashlib

            with self.path.open("rb") as f:
                return hashlib.file_digest(f, "sha256").hexdigest()
        return describe(self.path).digest


def _local_path(written: str, spec_folder: Path) -> Path:
    """A local requirement's path: ``file:`` URLs decoded, relative paths from the spec's folder
    (pip would take them from the working directory: the same spec would build another image
    from elsewhere)."""
    if written.startswith("file:"):
        parsed = urlparse(written)
        written = unquote(parsed.path if parsed.netloc in ("", "localhost") else "//" + parsed.netloc + parsed.path)
    return (spec_folder / written).resolve()


def local_requirements(path: Path, data: bytes, folders: Sequence[Path]) -> list[LocalRequirement]:
    """The local path requirements of the requirements file ``path`` (holding ``data``), resolved
    from ``folders[0]``; RequirementsError for one that is missing or outside every folder of
    ``folders`` (the spec's and the source's: nothing else on this machine goes into an image)."""
    roots = [folder.resolve() for folder in folders]
    out = []
    for number, line in _lines(data):
        found = _local_match(line, roots[0])
        if found is None:
            continue
        written = found.group("path")
        local = LocalRequirement(path, number, written, _local_path(written, roots[0]),
                                 found.group("editable") is not None, found.group("rest").strip())
        where = f"{path}:{number}: {written}"
        if not any(local.path.is_relative_to(root) for root in roots):
            raise RequirementsError(f"{where} is {local.path}, outside the spec's folder and the source folder: "
                                    "a local requirement must be in the project; copy it in")
        if not (local.path.is_dir() if not local.wheel else local.path.is_file()):
            raise RequirementsError(f"{where} is not a {'wheel file' if local.wheel else 'folder'} (looked for "
                                    f"{local.path}; local paths are relative to the spec's folder)")
        out.append(local)
    return out


def _no_local_paths(path: Path, data: bytes, spec_folder: Path) -> None:
    """RequirementsError for a local path in an included file: pip would take it from the working
    directory (``spec_folder``) and build it here; vxtrain handles them in build.requirements itself."""
    for number, line in _lines(data):
        found = _local_match(line, spec_folder)
        if found:
            raise RequirementsError(f"{path}:{number}: {found.group('path')} is a local path in an included "
                                    "requirements file: name local wheels and folders in build.requirements itself")


def _lines(data: bytes) -> Iterator[tuple[int, str]]:
    """(number, text) of each line of a requirements file, its comment cut off."""
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        text = line.split(" #")[0].strip()
        if text and not text.startswith("#"):
            yield number, text
