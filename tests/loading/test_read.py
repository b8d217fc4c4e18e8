"""Reading spec files: missing, unreadable, not UTF-8 (vxtrain/loading/read.py)."""
from __future__ import annotations

import contextlib
import os
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.loading.helpers import NO_ENV, ok, write
from vxtrain.loading import load, load_text
from vxtrain.loading.document import Position


def test_load_file_positions_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "job.yaml", "a: 1\n")
    doc, diags = load(path, environ=NO_ENV)
    assert doc is not None and diags == []
    assert doc.file == str(path)
    assert doc.positions[("a",)] == Position(str(path), 1, 1)


@pytest.mark.parametrize(("make", "code", "fragment"), [
    (lambda p: p / "missing.yaml", "file-not-found", "no such file"),
    (lambda p: p, "file-unreadable", "is a directory"),
    (lambda p: _bytes(p, b"a: 1\n") / "x.yaml", "file-unreadable", "cannot read"),
    (lambda p: _bytes(p, b"a: \xff\xfe\n"), "encoding", "not UTF-8"),
    (lambda p: _bytes(p, b"\x00\x00\xfe\xff"), "encoding", "not UTF-8"),
    (lambda p: _bytes(p, b""), "empty-spec", "empty spec"),
])
def test_file_problems(tmp_path: Path, make: Any, code: str, fragment: str) -> None:
    path = make(tmp_path)
    doc, diags = load(path, environ=NO_ENV)
    assert doc is None
    assert [d.code for d in diags] == [code]
    assert fragment in diags[0].message and diags[0].file == str(path)


def _bytes(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "raw.yaml"
    path.write_bytes(raw)
    return path


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.yaml", "a: 1\n")
    path.chmod(0)
    doc, diags = load(path, environ=NO_ENV)
    assert doc is None and [d.code for d in diags] == ["file-unreadable"]


def test_utf8_bom_and_bytes_are_accepted() -> None:
    assert ok("\ufeffa: 1\n".encode()).data == {"a": 1}
    assert ok("name: caf\u00e9\n".encode()).data == {"name": "caf\u00e9"}


def test_encoding_errors_have_a_line_and_column() -> None:
    _, diags = load_text(b"a: 1\nb: x\xff\n", "e.yaml", environ={})
    assert [(d.code, d.line, d.column) for d in diags] == [("encoding", 2, 5)]


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
@pytest.mark.parametrize(("body", "line", "column", "offset"), [
    (b"chief:\n  machine_type: n1-\xff\n", 2, 20, 26),
    (b"a: \xfe\n", 1, 4, 3),
])
def test_a_bad_byte_is_named_where_it_is_with_or_without_a_bom(tmp_path: Path, bom: bytes, body: bytes,
                                                               line: int, column: int, offset: int) -> None:
    """The BOM is not text: lines and columns count as without it; the offset is the file's."""
    path = tmp_path / "job.yaml"
    path.write_bytes(bom + body)
    _, diags = load(path, environ=NO_ENV)
    [d] = diags
    assert (d.code, d.line, d.column) == ("encoding", line, column)
    assert f"byte 0x{body[offset]:02x} at offset {offset + len(bom)}" in d.message


def _load_within(path: Path, seconds: float) -> tuple[Any, list[Any]] | None:
    """``load(path)`` in a thread: its answer, or None when it did not return within ``seconds``."""
    answer: list[tuple[Any, list[Any]]] = []
    thread = threading.Thread(target=lambda: answer.append(load(path, environ=NO_ENV)), daemon=True)
    thread.start()
    thread.join(seconds)
    return answer[0] if answer else None


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    """A plain open of a FIFO waits for a writer: validate and plan hung forever on one."""
    fifo = tmp_path / "job.yaml"
    os.mkfifo(fifo)
    try:
        answer = _load_within(fifo, 10)
    finally:  # a reader stuck in open() is let go by a writer's open (ENXIO: no reader waits)
        with contextlib.suppress(OSError):
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
    assert answer is not None, "the load waited on the FIFO"
    doc, diags = answer
    assert doc is None and [d.code for d in diags] == ["file-unreadable"]
    assert diags[0].message == f"{fifo} is a FIFO (named pipe), not a spec file: give a regular file " \
                               "(save the output to a file first)"


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="needs Unix sockets")
def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        doc, diags = load(path, environ=NO_ENV)
    assert doc is None and [d.code for d in diags] == ["file-unreadable"]
    assert "is a socket, not a spec file" in diags[0].message
