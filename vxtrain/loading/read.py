"""Reading a spec file: bounded by ``MAX_FILE_BYTES``, decoded as UTF-8.

The file is opened without blocking and ``fstat``-ed before it is read, and the
read itself is bounded, so a 50 MB file costs nothing and anything that is not
a regular file (a FIFO, whose plain ``open`` waits for a writer forever; a
device such as ``/dev/zero``; a socket) is refused at once; each problem
(missing, a folder, not a regular file, unreadable, too large, not UTF-8) is
one located diagnostic.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading.limits import MAX_FILE_BYTES
from vxtrain.vocab.reads import read_up_to

# O_NONBLOCK: opening a FIFO for reading otherwise blocks until a writer opens it (forever,
# for a spec named by mistake); with it, the open returns at once and fstat says what it is.
# On a regular file the flag changes nothing (POSIX: reads of regular files never block).
_FLAGS = os.O_RDONLY | getattr(os, "O_BINARY", 0) | getattr(os, "O_NONBLOCK", 0)

#: What a stat's file type is called in a diagnostic.
_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def read(path: str | Path) -> tuple[str | None, list[Diagnostic]]:
    """The text of a spec file, or diagnostics (missing, a folder, too large, not UTF-8).

    Bulk validation reads thousands of small files, so the common case is one
    ``open``, ``fstat`` and bounded ``read`` on the descriptor: no ``stat`` of the
    path first, no buffered file object (``open()`` adds an ``isatty`` call).
    Anything that stops the ``open`` takes the stat-first path, which names the
    problem (missing, a folder, unreadable) as it always has.
    """
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return _read_named(path)
    except ValueError as exc:  # a path no file can have (a NUL byte in it): bad input, said as such
        return None, [error("file-unreadable", f"cannot read {str(path)!r}: {exc}", file=str(path))]
    return _read_open(fd, str(path))


def _read_open(fd: int, file: str) -> tuple[str | None, list[Diagnostic]]:
    """``read`` of an open descriptor (closed here): fstat first, then a bounded read."""
    try:
        st = os.fstat(fd)
        problem = _stat_problem(st, file)
        if problem is not None:
            return None, [problem]
        # bounded: the file may have grown since fstat
        first = st.st_size + 1
        raw = read_up_to(fd, first)
        if len(raw) == first and first <= MAX_FILE_BYTES:
            raw += read_up_to(fd, MAX_FILE_BYTES + 1 - first)
    except OSError as exc:
        return None, [_unreadable(file, exc)]
    finally:
        os.close(fd)
    if len(raw) > MAX_FILE_BYTES:
        return None, [too_large(None, file)]
    return decode(raw, file)


def _stat_problem(st: os.stat_result, file: str) -> Diagnostic | None:
    """What a stat already says is wrong with a spec file: a folder, not a regular file, or too large."""
    if stat.S_ISDIR(st.st_mode):
        return error("file-unreadable", f"{file} is a directory, not a spec file", file=file)
    if not stat.S_ISREG(st.st_mode):
        kind = next((name for test, name in _KINDS if test(st.st_mode)), "neither a regular file nor a folder")
        return error("file-unreadable", f"{file} is {kind}, not a spec file: give a regular file "
                     "(save the output to a file first)", file=file)
    if st.st_size > MAX_FILE_BYTES:
        return too_large(st.st_size, file)
    return None


def _unreadable(file: str, exc: OSError) -> Diagnostic:
    """The ``file-unreadable`` diagnostic of an open, stat or read that failed."""
    return error("file-unreadable", f"cannot read {file}: {exc.strerror or exc}", file=file)


def _read_named(path: str | Path) -> tuple[str | None, list[Diagnostic]]:
    """``read`` for a path that could not be opened: the stat says why (a folder
    that cannot be listed is still "a directory"), then the open's own error."""
    file = str(path)
    try:
        problem = _stat_problem(os.stat(path), file)
        if problem is not None:
            return None, [problem]
        fd = os.open(path, _FLAGS)  # fails again with the open's own error (or, raced, opens)
    except FileNotFoundError:
        return None, [error("file-not-found", f"no such file: {file}", file=file)]
    except OSError as exc:
        return None, [_unreadable(file, exc)]
    return _read_open(fd, file)


#: codecs.BOM_UTF8.
_BOM = b"\xef\xbb\xbf"


def decode(raw: bytes, file: str) -> tuple[str | None, list[Diagnostic]]:
    """``raw`` as UTF-8 text (a BOM is dropped), or an ``encoding`` diagnostic at the bad byte."""
    # What the "utf-8-sig" codec does, without its lookup and module import (~0.3 ms of a cold start).
    skipped = len(_BOM) if raw.startswith(_BOM) else 0
    body = raw[skipped:]
    try:
        return body.decode("utf-8"), []
    except UnicodeDecodeError as exc:  # exc.start counts from the end of the BOM: lines and columns too
        line = body.count(b"\n", 0, exc.start) + 1
        column = exc.start - (body.rfind(b"\n", 0, exc.start) + 1) + 1  # in bytes: the text is not decodable
        return None, [error("encoding", f"the file is not UTF-8 text (byte 0x{body[exc.start]:02x} "
                            f"at offset {exc.start + skipped}): save it as UTF-8", file=file, line=line,
                            column=column)]


def too_large(size: int | None, file: str) -> Diagnostic:
    """The ``too-large`` diagnostic; ``size`` in bytes when known."""
    said = f"{size:,} bytes" if size is not None else f"more than {MAX_FILE_BYTES:,} bytes"
    return error("too-large", f"the file is too large ({said}; the limit is {MAX_FILE_BYTES:,} "
                 "bytes): a spec needs far less", file=file)
