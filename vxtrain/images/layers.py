"""Layer tarballs that are the same bytes for the same files, on every machine.

A layer is a gzipped tar. The manifest names it by the digest of the gzipped
bytes, the config's ``rootfs.diff_ids`` by that of the tar itself (ggcr's
"Anatomy of an image upload"). Both are computed while the file is written, one
pass, streamed: no file is held whole in memory.

Reproducible entries, as ko and jib write them: sorted by name, directories
made explicit, mtime 0, uid/gid 0 with no user names, modes normalised to 0755
(directories and executables) or 0644, and gzip with no name and no timestamp.

Compression: ISA-L's deflate (python-isal, its library built into the wheel) at
level GZIP_LEVEL, fed in fixed CHUNK-sized pieces. No deflate promises the same
bytes across implementations, versions or platforms (zlib-ng's maintainers, citing
zlib's: https://github.com/zlib-ng/zlib-ng/issues/2216), and Python's ``zlib`` is
whatever the machine links (zlib-ng-compat on some distributions); a pinned wheel is
one compressor everywhere the wheel is the same build. It is also about six times
faster than zlib at the same ratio (docs/performance.md). What names the content
does not depend on it: the tag hashes the inputs and ``diff_id`` the tar.
tests/images/test_layer_bytes.py pins the bytes of a tiny layer, so a new compressor is
noticed (docs/decisions.md, "Image files and their speed").

What goes into the dependency layer (pip, for the image's Python and platform) is
vxtrain.images.dependencies.
"""
from __future__ import annotations

import hashlib
import tarfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from isal import isal_zlib

from vxtrain.errors import VxtrainError
from vxtrain.images.recipe import CODE_DIR
from vxtrain.sources.credentials import WHITEOUT_PREFIX
from vxtrain.sources.folder import ContentHash, Source, iter_files, packaged_mode

#: ISA-L's deflate level (0-3): fixed, as the bytes depend on it. 2 (python-isal's default)
#: packs as tightly as zlib's level 1 at ISA-L's level 1 speed (docs/performance.md).
GZIP_LEVEL = 2
#: Read files, and feed the compressor, this many bytes at a time.
CHUNK = 1024 * 1024
#: A gzip member's header (RFC 1952): deflate, no flags, mtime 0, no extra flags, OS
#: "unknown" (255), as Python's gzip writes with mtime=0: no name, no time, no machine.
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


class LayerError(VxtrainError):
    """A file that cannot go into a layer as it is (exit 1, before anything is pushed)."""


@dataclass(frozen=True)
class Layer:
    """A layer tarball on disk and its two digests."""

    path: Path
    digest: str  # sha256:… of the gzipped bytes (the manifest's)
    diff_id: str  # sha256:… of the tar (the config's rootfs.diff_ids)
    size: int  # bytes of the gzipped file
    files: int
    content: str | None = None  # the code layer's: its files' Source digest, as they were read into it


def digest_of(data: bytes) -> str:
    """``sha256:<hex>`` of ``data``: how the registry names a blob or manifest."""
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


class _Hashing:
    """A write-only stream that hashes and counts what passes through to ``target``."""

    def __init__(self, target: BinaryIO) -> None:
        self.target, self.sha, self.size = target, hashlib.sha256(), 0

    def write(self, data: bytes) -> int:
        """Hash, count, pass on."""
        self.sha.update(data)
        self.size += len(data)
        return self.target.write(data)

    def flush(self) -> None:
        """Flush the target."""
        self.target.flush()


class _Gzip:
    """A write-only stream that gzips what it is given into ``target``: one member, the
    deflate stream fed in CHUNK-sized pieces whatever sizes the writes come in (ISA-L's
    output may depend on where its input is cut), then the CRC-32 and size (RFC 1952)."""

    def __init__(self, target: _Hashing) -> None:
        self.target, self.pending, self.crc, self.size = target, bytearray(), 0, 0
        self.deflate = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED, -isal_zlib.MAX_WBITS)
        target.write(GZIP_HEADER)

    def write(self, data: bytes) -> int:
        """Buffer ``data``; compress every whole CHUNK."""
        self.pending += data
        if len(self.pending) >= CHUNK:
            whole = len(self.pending) - len(self.pending) % CHUNK
            view = memoryview(self.pending)
            for start in range(0, whole, CHUNK):
                self._deflate(view[start:start + CHUNK])
            view.release()
            del self.pending[:whole]
        return len(data)

    def _deflate(self, piece: bytes | memoryview) -> None:
        self.crc = isal_zlib.crc32(piece, self.crc)
        self.size += len(piece)
        self.target.write(self.deflate.compress(piece))

    def flush(self) -> None:
        """Nothing to do: only close ends the stream."""

    def close(self) -> None:
        """Compress the rest and write the trailer."""
        self._deflate(bytes(self.pending))
        self.pending.clear()
        self.target.write(self.deflate.flush() + self.crc.to_bytes(4, "little")
                          + (self.size & 0xFFFFFFFF).to_bytes(4, "little"))


def write_layer(files: Iterable[tuple[PurePosixPath, Path]], dest: Path, content: ContentHash | None = None) -> Layer:
    """A gzipped tar at ``dest`` of ``files`` (path in the image → file here), with every
    parent directory as its own entry, in sorted order. LayerError, before anything is
    written, for a name a runtime reads as a whiteout (``.wh.``). ``content``: fed each file
    (its path under CODE_DIR) and the bytes written, for the layer's ``content``."""
    entries = _with_parents(dict(files))
    _refuse_whiteouts(entries)
    with dest.open("wb") as raw:
        outer = _Hashing(raw)
        gz = _Gzip(outer)
        inner = _Hashing(gz)  # type: ignore[arg-type]
        with tarfile.open(fileobj=inner, mode="w|", format=tarfile.PAX_FORMAT) as tar:  # type: ignore[call-overload]
            for name in sorted(entries, key=lambda n: n.encode("utf-8", "surrogateescape")):
                _add(tar, name, entries[name], content)
        gz.close()
    return Layer(dest, f"sha256:{outer.sha.hexdigest()}", f"sha256:{inner.sha.hexdigest()}", outer.size,
                 sum(1 for p in entries.values() if p is not None), content.digest() if content else None)


def write_code_layer(source: Source, dest: Path) -> Layer:
    """The code layer of ``source`` at ``dest``, its ``content`` the digest of the files as
    they were read into it (the names are CODE_DIR/rel, so the tar's order is the hash's)."""
    return write_layer(code_files(source.path), dest, ContentHash(source.kind))


def _refuse_whiteouts(entries: dict[str, Path | None]) -> None:
    """LayerError naming the entries with a part starting ``.wh.``: the OCI layer format's
    whiteouts (https://github.com/opencontainers/image-spec/blob/main/layer.md#whiteouts),
    which the runtime deletes, with the base's file of that name."""
    bad = [name for name in entries if any(part.startswith(WHITEOUT_PREFIX) for part in name.split("/"))]
    if bad:
        files = [str(entries[name]) for name in bad if entries[name] is not None] or bad
        raise LayerError(f"{', '.join(sorted(files)[:10])}: a name starting with {WHITEOUT_PREFIX} is a deletion in "
                         "an image layer (the runtime removes it, and the base's file of that name): rename it, or "
                         "leave it out; nothing was pushed")


def _with_parents(files: dict[PurePosixPath, Path]) -> dict[str, Path | None]:
    """Entry name → file (None: a directory), names relative to ``/`` as layers write them."""
    out: dict[str, Path | None] = {}
    for target, path in files.items():
        rel = target.relative_to("/") if target.is_absolute() else target
        out[rel.as_posix()] = path
        for parent in rel.parents:
            if parent != PurePosixPath("."):
                out.setdefault(parent.as_posix() + "/", None)
    return out


class _Feeding:
    """A file read by tarfile, each chunk also fed to a ContentHash."""

    def __init__(self, f: BinaryIO, content: ContentHash) -> None:
        self.f, self.content = f, content

    def read(self, size: int = -1) -> bytes:
        """Read, and feed what was read."""
        data = self.f.read(size)
        self.content.update(data)
        return data


def _add(tar: tarfile.TarFile, name: str, path: Path | None, content: ContentHash | None = None) -> None:
    """One normalised entry: a directory, or a regular file streamed from ``path`` (and fed to
    ``content`` under its path relative to CODE_DIR)."""
    info = tarfile.TarInfo(name.rstrip("/"))
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    if path is None:
        info.type, info.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(info)
        return
    st = path.stat()
    info.size, info.mode = st.st_size, packaged_mode(st.st_mode)
    with path.open("rb") as f:
        if content is None:
            tar.addfile(info, f)
            return
        content.file(PurePosixPath("/" + name).relative_to(CODE_DIR), st.st_mode, st.st_size)
        tar.addfile(info, _Feeding(f, content))


def code_files(root: Path) -> Iterator[tuple[PurePosixPath, Path]]:
    """The source folder's files (the packages' exclusions: vxtrain.sources.folder) under CODE_DIR."""
    for rel in iter_files(root):
        yield CODE_DIR / rel, root / rel
