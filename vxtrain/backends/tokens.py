"""Where an emulator's bearer token is: one home for the emulator that makes it
(vxtrain.backends.emulator.auth) and for vxtrain's clients that send it
(vxtrain.backends.vertex, for every client built for ``--endpoint HOST:PORT``).

The emulator runs the command of every job it is sent, so every call must carry
``authorization: Bearer TOKEN``, as calls to Vertex AI carry theirs. A client finds
the token of the emulator on a port, in this order:

1. the private token of an emulator this process started (``--target local``),
   held in memory only (:func:`holding`);
2. ``VXTRAIN_EMULATOR_TOKEN`` (tests, CI, another user's emulator);
3. the file the emulator on that port wrote (:func:`token_file`), which only the
   user who started it can read.
"""
from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

#: The token, when given: the emulator serves with it and clients send it.
TOKEN_ENV = "VXTRAIN_EMULATOR_TOKEN"

#: Tokens of the emulators this process serves privately, by port.
_HELD: dict[int, str] = {}
_HELD_LOCK = threading.Lock()


def token_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The user's private folder for token files: ``$XDG_RUNTIME_DIR/vxtrain`` (the
    user's own 0700 folder on a tmpfs, emptied at logout: a token never reaches a disk),
    else ``$XDG_CACHE_HOME/vxtrain`` or ``~/.cache/vxtrain``."""
    env = os.environ if environ is None else environ
    runtime = env.get("XDG_RUNTIME_DIR", "")
    if os.path.isabs(runtime) and _own_folder(runtime):
        return Path(runtime) / "vxtrain"
    cache = env.get("XDG_CACHE_HOME", "")
    return (Path(cache) if os.path.isabs(cache) else Path.home() / ".cache") / "vxtrain"


def _own_folder(path: str) -> bool:
    """Whether ``path`` is a folder of this user's: ``su`` (without ``-``) keeps the caller's
    XDG_RUNTIME_DIR, which is then another user's folder, not this one's."""
    try:
        info = os.stat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def token_file(port: int, environ: Mapping[str, str] | None = None) -> Path:
    """The file the emulator on ``port`` writes its token to (one per port: two emulators never clash)."""
    return token_folder(environ) / f"emulator-{port}.token"


def find_token(port: int, environ: Mapping[str, str] | None = None) -> str | None:
    """The token to send to the emulator on ``port``, or None when there is none to be found."""
    with _HELD_LOCK:
        held = _HELD.get(port)
    if held is not None:
        return held
    env = os.environ if environ is None else environ
    given = env.get(TOKEN_ENV, "").strip()
    if given:
        return given
    try:
        return token_file(port, env).read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError):  # no emulator of this user's there, or not readable by us
        return None


@contextmanager
def holding(port: int, token: str) -> Iterator[None]:
    """While the block runs, this process's clients send ``token`` to the emulator on ``port``
    (an in-process emulator's private token, never written anywhere)."""
    with _HELD_LOCK:
        _HELD[port] = token
    try:
        yield
    finally:
        with _HELD_LOCK:
            if _HELD.get(port) == token:
                del _HELD[port]


def how_to_give() -> str:
    """How a client gets an emulator's token (for the message of a refused call)."""
    return (f"export {TOKEN_ENV} with the token the emulator was started with, or run vxtrain as the user "
            f"who started it (vxtrain then reads the token from the file the emulator wrote, "
            f"in {token_folder()})")
