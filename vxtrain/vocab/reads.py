"""Reading an open file descriptor in bounded pieces, shared by the spec reader
(``loading.read``) and the credential scan of a source folder (``sources.credentials``):
both use ``os.open``/``os.read`` rather than a buffered file object per file."""
from __future__ import annotations

import os


def read_up_to(fd: int, size: int) -> bytes:
    """Up to ``size`` bytes from ``fd``, fewer only at the end of the file (what a buffered
    file object's ``read(size)`` returns): one ``os.read`` returns at most ~2 GiB, and a
    pipe's or a network file's less, so it loops."""
    chunks: list[bytes] = []
    while size > 0:
        chunk = os.read(fd, size)
        if not chunk:
            break
        chunks.append(chunk)
        size -= len(chunk)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
