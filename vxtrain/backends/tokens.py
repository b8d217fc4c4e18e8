"""Where an emulator's bearer token and socket are: one home for the emulator that makes
them (vxtrain.backends.emulator.auth) and for vxtrain's clients that use them
(vxtrain.backends.vertex, for every client built for ``--endpoint HOST:PORT``).

The emulator runs the command of every job it is sent, so every call must carry
``Authorization: Bearer TOKEN``, as calls to Vertex AI carry theirs. A TCP port on
loopback proves nothing about who listens on it: another local user may listen on
``[::1]:PORT`` while the emulator serves ``127.0.0.1:PORT`` (``localhost`` then reaches
theirs), or on the port after the emulator stopped. So vxtrain's clients never send the
token over TCP. Every emulator also serves on a Unix socket beside its token file, in
the user's own private folder (:func:`token_folder`), which no other user can create a
file in; a client sends the token through that socket only, after checking that the
folder and every folder above it are safe from other users and that the socket is this
user's (:func:`own_socket`). A loopback endpoint's port names the socket
(``emulator-PORT.sock``).

The token a client sends is, in this order: the one its caller hands over (``--target
local``'s private one, which the code that started the emulator passes along),
``VXTRAIN_EMULATOR_TOKEN`` (tests, CI), or the file the emulator on that port wrote
(:func:`token_file`), which only the user who started it can read. That file is read only
when it is so: a regular file (not a link) of this user's that nobody else may read or
write, as ssh reads a private key (vxtrain.private.read_secret); another is not used, and
a warning says why and how to get a new one, since a token others could read is no secret.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from vxtrain.private import problem, read_secret

#: The token, when given: the emulator serves with it and clients send it.
TOKEN_ENV = "VXTRAIN_EMULATOR_TOKEN"
#: Google's words for a call without a credential, and with a wrong one (what Vertex AI answers).
MISSING = "Request is missing required authentication credential."
INVALID = "Request had invalid authentication credentials."
#: The longest path a Unix socket address holds (``sun_path``: 108 bytes on Linux, 104 on
#: macOS, with the terminating NUL): a longer token folder cannot hold the emulator's socket.
SOCKET_PATH_MAX = 103


def token_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The user's private folder for token files and sockets: ``$XDG_RUNTIME_DIR/vxtrain``
    (the user's own 0700 folder on a tmpfs, emptied at logout: a token never reaches a disk),
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


def socket_file(port: int, environ: Mapping[str, str] | None = None) -> Path:
    """The Unix socket the emulator on ``port`` serves on, beside its token file."""
    return token_folder(environ) / f"emulator-{port}.sock"


def folder_problem(folder: Path) -> str | None:
    """Why ``folder`` cannot hold what only this user may reach (None: it can): the check every
    private folder of vxtrain's passes (vxtrain.private.problem: a folder, not a link, of this
    user's that no one else may enter, and no folder above it that lets another user rename or
    replace what it holds, the rule ssh applies to ``~/.ssh``: sshd_config(5), StrictModes)."""
    return problem(folder)


def own_socket(port: int, environ: Mapping[str, str] | None = None) -> Path | None:
    """The Unix socket of this user's emulator on ``port``, when a token may be sent
    through it: a socket of this user's in a safe folder (:func:`folder_problem`); else None."""
    path = socket_file(port, environ)
    if folder_problem(path.parent) is not None:
        return None
    try:
        info = path.lstat()
    except OSError:  # no emulator of this user's on that port
        return None
    return path if stat.S_ISSOCK(info.st_mode) and info.st_uid == os.geteuid() else None


def find_token(port: int, environ: Mapping[str, str] | None = None) -> str | None:
    """The token to send to the emulator on ``port`` when the caller has none in hand:
    ``VXTRAIN_EMULATOR_TOKEN``, else the file it wrote, when that is this user's own and private
    (others may neither read nor write it; else a warning once, with the fix); None when there
    is none to be found."""
    env = os.environ if environ is None else environ
    given = env.get(TOKEN_ENV, "").strip()
    if given:
        return given
    path = token_file(port, env)
    data = read_secret(path, "the emulator's token", f"stop the emulator on port {port}, remove the file and start "
                       "it again: it writes a new token, mode 0600 (chmod alone keeps a token others may have read)")
    try:
        return None if data is None else data.decode("utf-8").strip() or None
    except UnicodeDecodeError:  # not a token the emulator wrote
        return None


def refusal(header: str | None, where: str) -> str:
    """The emulator's UNAUTHENTICATED message, gRPC and REST alike, for a call that sent
    ``header`` (None: no Authorization): Google's words, then where its token is (``where``,
    e.g. "is in FILE"; a private token's says so, and never names VXTRAIN_EMULATOR_TOKEN)."""
    said = MISSING if header is None else INVALID
    return (f"{said} This emulator answers only calls that carry its token as 'Authorization: Bearer TOKEN' "
            f"(gRPC: the metadata 'authorization'); its token {where}.")


def how_to_give(environ: Mapping[str, str] | None = None) -> str:
    """How vxtrain's client gets an emulator's token to it (for the message of a refused call)."""
    folder = token_folder(environ)
    problem = folder_problem(folder) if folder.exists() else None
    unsafe = f" ({problem}, so vxtrain sends no token through it)" if problem else ""
    return (f"vxtrain sends an emulator's token only through the socket the emulator makes beside its token "
            f"file, in {folder}{unsafe}, never over TCP; so run vxtrain as the user who started it, with the "
            f"same XDG_RUNTIME_DIR and XDG_CACHE_HOME (vxtrain then reads the token from the file the emulator "
            f"wrote), and if it was started with {TOKEN_ENV}, export {TOKEN_ENV} with that token")
