"""The base's Python as its files show it, for a base whose config does not say it.

A base's config may say its Python (``PYTHON_VERSION``, the official python images';
vxtrain.images.image.python_of). Where it does not, the wheels of the dependency layer
would be picked for ``build.python`` (or the base tag's ``pyNNN``) on trust, and a wrong
guess pushes an image whose extension modules cannot import (``cp312`` wheels over
Debian's Python 3.11). So the base's layers are read, as tar listings streamed from
the registry (never written to disk, nothing extracted), from the top layer down,
and the first layer that shows a Python decides:

- ``python3`` in a folder of the image's ``PATH`` (the first such folder), when it is a
  link to ``python3.X`` (Debian's ``/usr/bin/python3 -> python3.11``, the official
  images' ``/usr/local/bin/python3 -> python3.12``, conda's ``/opt/conda/bin/python3``);
- else the standard library that layer installs, ``PREFIX/lib/python3.X/os.py``
  (``usr/lib/python3.X``, ``usr/local/lib/python3.X``, ``opt/conda/lib/python3.X``):
  one version decides; two in one layer say nothing certain.

A layer with neither (the code, a ``pip install`` into ``site-packages``) is passed
over, so the layers read are the top ones down to the one that installed Python: the
large OS layers below it are never read. Whiteouts are not followed (a layer that
removes a Python installed below is taken to have left it). What a base showed is
remembered by its layers' digests (content addresses: the same digests, the same
files) in the user's cache, ``$XDG_CACHE_HOME/vxtrain/bases``, signed as every cache
of vxtrain's is (vxtrain.private), so a base is read once per machine.
"""
from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from vxtrain.diagnostics import error
from vxtrain.errors import BuildKeyError
from vxtrain.private import cache_home, folder_key, mac, read_own, sha256, trusted, verified, write_private

__all__ = ["BasePythonError", "Remembered", "Scan", "Shown", "base_key", "cache_dir", "decide", "remember",
           "remembered", "scan_layer"]

#: ``python3.X`` as a file name (a link's target, the interpreter's own name).
_VERSIONED = re.compile(r"python(3\.\d+)")
#: A standard library's ``os.py``: the folder a Python's own installation makes.
_STDLIB = re.compile(r"(?:(.*)/)?lib/python(3\.\d+)/os\.py")


class BasePythonError(BuildKeyError):
    """The image's Python (``build.python``, or the base tag's ``pyNNN``) that the base itself
    does not confirm: a mistake of the spec found at push time (exit 1), nothing pushed.
    ``role`` and ``key`` (``python`` or ``base``): the pool key it is about, which the caller
    locates in the spec (this layer knows no positions)."""

    def __init__(self, code: str, message: str, role: str, key: str) -> None:
        super().__init__([error(code, message, path=f"{role}.build.{key}")], role, key)


@dataclass
class Scan:
    """What one layer shows of Python: the ``python3`` entries in the PATH folders (folder →
    the link's target, "" for a file) and the standard libraries (prefix → X.Y)."""

    commands: dict[str, str] = field(default_factory=dict)
    stdlibs: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Shown:
    """The base's Python as a layer shows it: ``version`` (X.Y), or None when it shows
    several; ``evidence``: the files that say so, for messages."""

    version: str | None
    evidence: str


def scan_layer(chunks: Iterable[bytes], path_dirs: Sequence[str]) -> Scan:
    """The Python entries of one layer blob (a tar, gzipped or not), read as it streams
    (tarfile's stream mode: each entry's data is read past, never kept)."""
    wanted = {d.strip("/"): d for d in path_dirs if d.strip("/")}
    out = Scan()
    with tarfile.open(fileobj=_Stream(iter(chunks)), mode="r|*") as tar:
        for member in tar:
            name = _normal(member.name)
            folder, _, base = name.rpartition("/")
            if base == "python3" and folder in wanted:
                out.commands.setdefault(folder, member.linkname if member.issym() or member.islnk() else "")
            found = _STDLIB.fullmatch(name)
            if found is not None:
                out.stdlibs[found.group(1) or ""] = found.group(2)
    return out


def decide(scan: Scan, path_dirs: Sequence[str]) -> Shown | None:
    """The Python ``scan`` (one layer) shows, or None when it shows none (read the layer below)."""
    for folder in (d.strip("/") for d in path_dirs):
        target = scan.commands.get(folder)
        if target is None:
            continue
        named = _VERSIONED.fullmatch(target.rpartition("/")[2])
        if named is not None:
            return Shown(named.group(1), f"/{folder}/python3 -> {target}")
        prefix = folder.rpartition("/")[0]  # a file: the standard library beside it (usr/local/bin → usr/local)
        if prefix in scan.stdlibs:
            return Shown(scan.stdlibs[prefix], f"/{folder}/python3 and /{_lib(prefix, scan.stdlibs[prefix])}")
        break
    versions = sorted(set(scan.stdlibs.values()))
    if not versions:
        return None
    evidence = ", ".join(f"/{_lib(prefix, v)}" for prefix, v in sorted(scan.stdlibs.items()))
    return Shown(versions[0] if len(versions) == 1 else None, evidence)


def _normal(name: str) -> str:
    """A tar entry's name as a path in the image, without a leading ``./`` or ``/``."""
    while name.startswith(("./", "/")):
        name = name[2:] if name.startswith("./") else name[1:]
    return name


def _lib(prefix: str, version: str) -> str:
    return f"{prefix}/lib/python{version}" if prefix else f"lib/python{version}"


@dataclass(frozen=True)
class Remembered:
    """What a base showed when it was read before (``shown`` None: no Python)."""

    shown: Shown | None


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/vxtrain/bases``: what each base's layers showed."""
    return cache_home() / "vxtrain" / "bases"


def base_key(layers: Sequence[str], path_dirs: Sequence[str]) -> str:
    """The name a base's answer is remembered under: its layers' digests, in order, and its PATH."""
    return sha256("\0".join(["vxtrain-base-python-1", *layers, ":".join(path_dirs)]).encode()).hexdigest()


def remembered(key: str) -> Remembered | None:
    """What the base ``key`` showed when read before, or None (never read, or not trusted)."""
    folder = cache_dir()
    signing = folder_key(folder) if trusted(folder, "the base-image cache") else None
    data = read_own(folder / f"{key}.json") if signing is not None else None
    if signing is None or data is None:
        return None
    try:
        record = json.loads(data)
        fields = {"version": record["version"], "evidence": record["evidence"]}
        signature = bytes.fromhex(record["mac"])
    except (ValueError, KeyError, TypeError):
        return None
    if not verified(signing, _signed(key, fields), signature):
        return None
    if fields["evidence"] is None:
        return Remembered(None)
    return Remembered(Shown(fields["version"], str(fields["evidence"])))


def remember(key: str, shown: Shown | None) -> None:
    """Keep what the base ``key`` showed (best effort: a read-only cache keeps nothing)."""
    folder = cache_dir()
    signing = folder_key(folder) if trusted(folder, "the base-image cache") else None
    if signing is None:
        return
    fields = {"version": shown.version if shown else None, "evidence": shown.evidence if shown else None}
    record = {**fields, "mac": mac(signing, _signed(key, fields)).hex()}
    try:
        write_private(folder / f"{key}.json", json.dumps(record).encode())
    except OSError:
        pass  # a read-only or full disk: the base is read again next time


def _signed(key: str, fields: dict[str, str | None]) -> bytes:
    return f"{key}\0{json.dumps(fields, sort_keys=True)}".encode()


class _Stream(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (tarfile reads the blob as it arrives)."""

    def __init__(self, chunks: Iterator[bytes]) -> None:
        self._chunks, self._left = chunks, memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        while not self._left:
            chunk = next(self._chunks, None)
            if chunk is None:
                return 0
            self._left = memoryview(chunk)  # a view: handing out a piece copies only that piece
        n = min(len(buffer), len(self._left))
        buffer[:n] = self._left[:n]
        self._left = self._left[n:]
        return n
