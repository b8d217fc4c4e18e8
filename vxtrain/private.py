"""The user's own private folders: where vxtrain keeps what a later run trusts.

The compiled-schema cache (vxtrain.validation.compiled) holds code that every
``validate`` runs, and the dependency-layer cache (vxtrain.images.dependencies)
holds files that ``submit`` pushes into an image: another local user who can write
either runs code as this one. So a cache folder is used only when it is this
user's own and nobody else can change it, checked each time it is opened:

- the folder itself: a real folder (not a link), owned by the effective user, mode
  0700 (``mode & 0o077 == 0``); a missing one is made so, whatever the umask (the
  XDG base directory spec: "created with permission 0700"), and one that others may
  read but never could write (0755) is made 0700; one that others could write (0777:
  made under ``umask 000``) is not used, since anyone may have put anything in it;
- every folder above it, as the kernel walks the path (each link followed where it
  points): owned by this user or root, and writable by nobody else unless sticky
  (``/tmp``), so nobody else can rename it away and put another in its place (``su``
  without ``-`` keeps the caller's ``XDG_CACHE_HOME``, which is then another user's
  folder); and every link on the way owned by this user or root, since a link's owner
  can point it elsewhere between the check and the use (a link of another user's in
  ``/tmp`` as ``XDG_CACHE_HOME``);
- each file read: opened without following a link, a regular file owned by this
  user and writable by nobody else.

A folder that fails is not used (the caller works without its cache) and a warning
saying why, with the fix, goes to stderr once per folder and process. What a cache
keeps is also signed, HMAC-SHA256 (RFC 2104) under a random key of the folder's own
(:func:`folder_key`, mode 0600), and read only when the signature holds: a file
that was not written by vxtrain for this user is never loaded, even should the
checks above be fooled.

This module imports nothing of vxtrain's and only what ``validate`` already loads,
since the schema cache is on its cold-start path.
"""
from __future__ import annotations

import os
import stat
import sys
from _operator import _compare_digest  # hmac.compare_digest itself, without hmac's import of hashlib
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:  # the same type as hashlib's
    from hashlib import sha256
else:
    try:  # sha256 without hashlib, whose import loads OpenSSL's libcrypto: ~3.5 ms of validate's
        # cold start (-X importtime). The same digests; built into CPython 3.11.
        from _sha256 import sha256
    except ImportError:  # Python 3.12+ (_sha2), or a build without the builtin hashes
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256

__all__ = ["KEY_FILE", "MAC_SIZE", "cache_home", "folder_key", "mac", "make_own", "open_own", "problem", "read_own",
           "read_secret", "sha256", "trusted", "verified", "write_private"]

#: The file in each private folder holding its signing key.
KEY_FILE = ".vxtrain-key"
#: Bytes of a signature (HMAC-SHA256).
MAC_SIZE = 32
_KEY_SIZE = 32
_BLOCK = 64  # SHA-256's block size, RFC 2104's B
#: Folders already warned about in this process.
_WARNED: set[str] = set()


def cache_home() -> Path:
    """``$XDG_CACHE_HOME``, else ``~/.cache`` (a relative XDG_CACHE_HOME is ignored, as the
    XDG base directory spec says)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return Path(base) if os.path.isabs(base) else Path(os.path.expanduser("~"), ".cache")


def trusted(folder: Path, what: str) -> bool:
    """Whether ``folder`` is this user's private folder (made so when missing), for ``what``
    (words such as "the compiled-schema cache"). False, silently, when it cannot be made (a
    read-only home); False with a warning on stderr, once, when it is there but not private."""
    try:
        make_own(folder)
    except OSError:
        return False
    why = problem(folder)
    if why is None:
        return True
    if str(folder) not in _WARNED:
        _WARNED.add(str(folder))
        sys.stderr.write(f"vxtrain: warning: {what} in {folder} is not used: {why}\n")
    return False


def problem(folder: Path) -> str | None:
    """Why ``folder`` is not this user's private folder (a sentence ending with the fix), or None
    when it is. Reads only: a missing folder is a problem too."""
    uid = os.geteuid()
    try:
        real_parent = os.path.realpath(folder.parent)
        info = os.lstat(os.path.join(real_parent, folder.name))
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if stat.S_ISLNK(info.st_mode):
        return "it is not a folder but a link; remove it (vxtrain makes the folder itself, mode 0700)"
    if not stat.S_ISDIR(info.st_mode):
        return "it is not a folder; remove it"
    if info.st_uid != uid:
        return (f"it belongs to another user (uid {info.st_uid}), not to this one (uid {uid}); remove it, "
                "or set XDG_CACHE_HOME to a folder of your own")
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        return (f"it is open to other users (mode {mode:04o}), so what is in it cannot be trusted; "
                "remove it (vxtrain makes it again, mode 0700)")
    return _open_way(os.path.join(os.getcwd(), folder.parent), uid)


#: Links followed before a path is given up on (Linux's MAXSYMLINKS).
_MAX_LINKS = 40


def _open_way(path: str, uid: int) -> str | None:
    """Why another user could change where ``path`` leads (None: nobody can), walked as the
    kernel resolves it: from ``/``, each link followed where it points. Every folder passed
    through must be this user's or root's and writable by nobody else unless sticky; every
    link must be this user's or root's (only its owner, or root, can replace a link in a
    sticky folder such as ``/tmp``). Checking the resolved folders alone missed the links:
    another user's link as ``XDG_CACHE_HOME`` passed, then was pointed at that user's
    folder between the check and the use (gRPC connects, and reconnects, later)."""
    names = [name for name in reversed(path.split("/")) if name not in ("", ".")]
    current, links = "/", 0
    why = _open_folder(current, uid)
    while names and why is None:
        name = names.pop()
        if name == "..":  # the real parent: ``current`` has no link left in it
            current = os.path.dirname(current)
            continue
        step = os.path.join(current, name)
        try:
            info = os.lstat(step)
        except OSError as exc:
            return f"{step} cannot be read ({exc.strerror or exc})"
        if not stat.S_ISLNK(info.st_mode):
            current, why = step, _open_folder(step, uid)
            continue
        links += 1
        if info.st_uid not in (uid, 0):
            return (f"{step} is a link of another user's (uid {info.st_uid}), who can point it at another folder; "
                    "set XDG_CACHE_HOME to a folder of your own, not through that link")
        if links > _MAX_LINKS:
            return f"{path} cannot be read (too many levels of links)"
        try:
            target = os.readlink(step)
        except OSError as exc:
            return f"{step} cannot be read ({exc.strerror or exc})"
        names.extend(name for name in reversed(target.split("/")) if name not in ("", "."))
        current = "/" if target.startswith("/") else current
    return why


def _open_folder(folder: str, uid: int) -> str | None:
    """Why another user can replace what is in ``folder`` (a folder reached with no link left
    in its path), or None."""
    try:
        info = os.lstat(folder)
    except OSError as exc:
        return f"{folder} cannot be read ({exc.strerror or exc})"
    if info.st_uid not in (uid, 0):
        return (f"{folder} belongs to another user (uid {info.st_uid}), who can put another folder in its "
                "place; set XDG_CACHE_HOME to a folder of your own")
    if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
        return (f"{folder} is writable by other users (mode {stat.S_IMODE(info.st_mode):04o}), who can put "
                f"another folder in its place; run `chmod go-w {folder}`, or set XDG_CACHE_HOME elsewhere")
    return None


def make_own(folder: Path) -> None:
    """Make ``folder`` (and the missing folders above it) mode 0700, or make an existing one of
    this user's that others may read but not write 0700; anything else is left for
    :func:`problem` to judge. Raises OSError when a folder cannot be made."""
    _make(folder)
    _tighten(folder)


def _tighten(folder: Path) -> None:
    """Make a folder of this user's that others may read but not write mode 0700: what is in it
    was written by this user (or root) alone, so it stays usable (``mkdir`` under the usual umask
    022 makes 0755: vxtrain's own folders were so before they were checked)."""
    info = os.lstat(folder)
    mode = stat.S_IMODE(info.st_mode)
    if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and mode & 0o077 and not mode & 0o022:
        os.chmod(folder, 0o700, follow_symlinks=False)


def _make(folder: Path) -> None:
    """Make ``folder`` and the missing folders above it, each mode 0700 whatever the umask
    (a folder that is there is left as it is: :func:`problem` judges it)."""
    missing = []
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            break
        missing.append(path)
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue  # made meanwhile by another process: judged as it is
        os.chmod(path, 0o700)  # mkdir's mode is masked by the umask; the umask is the process's, not ours to set


def open_own(path: Path, *, secret: bool = False) -> BinaryIO | None:
    """``path`` opened for reading, when it is a regular file owned by this user that nobody else
    can write (nor read, when ``secret``), opened without following a link; None when absent or not so."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        info = None
    if (info is None or not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid()
            or info.st_mode & (0o077 if secret else 0o022)):
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


def read_secret(path: Path, what: str, fix: str) -> bytes | None:
    """The bytes of ``path``, a secret (``what``, e.g. "the emulator's token"), when it is a regular
    file of this user's that nobody else can read or write, opened without following a link (the
    rule of :func:`open_own` with ``secret``, which ssh applies to a private key); None when it is
    absent. One that is there but not so is not read: None, with a warning on stderr, once per
    file and process, saying why and ``fix`` (what makes a new one, since others may have read it)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: a link (O_NOFOLLOW); EACCES: not ours to read
        _refused(path, what, "it is a link, not a file" if os.path.islink(path)
                 else f"it cannot be read ({exc.strerror or exc})", fix)
        return None
    with os.fdopen(fd, "rb") as opened:
        why = _not_secret(os.fstat(fd))
        try:
            data = opened.read() if why is None else None
        except OSError as exc:
            why = f"it cannot be read ({exc.strerror or exc})"
    if why is not None:
        _refused(path, what, why, fix)
        return None
    return data


def _not_secret(info: os.stat_result) -> str | None:
    """Why a file of this ``fstat`` is not a secret of this user's (None: it is)."""
    uid, mode = os.geteuid(), stat.S_IMODE(info.st_mode)
    if not stat.S_ISREG(info.st_mode):
        return "it is not a regular file"
    if info.st_uid != uid:
        return f"it belongs to another user (uid {info.st_uid}), not to this one (uid {uid}), who chose what it holds"
    if mode & 0o077:
        return f"other users may read or change it (mode {mode:04o})"
    return None


def _refused(path: Path, what: str, why: str, fix: str) -> None:
    """Say (once per file and process) that ``what`` in ``path`` is not used, and why."""
    if str(path) not in _WARNED:
        _WARNED.add(str(path))
        sys.stderr.write(f"vxtrain: warning: {what} in {path} is not used: {why}; {fix}\n")


def read_own(path: Path, *, secret: bool = False) -> bytes | None:
    """The bytes of ``path`` when :func:`open_own` opens it, else None."""
    opened = open_own(path, secret=secret)
    if opened is None:
        return None
    with opened:
        try:
            return opened.read()
        except OSError:
            return None


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file beside it, then a rename),
    mode 0600 whatever the umask: a file others could write would not be read back. OSError
    when it cannot be written."""
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        partial.unlink(missing_ok=True)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(partial, path)
    finally:
        try:
            partial.unlink()
        except OSError:
            pass


def folder_key(folder: Path) -> bytes | None:
    """The signing key of ``folder`` (a :func:`trusted` one): KEY_FILE's 32 bytes, made (random,
    mode 0600) when absent; None when there is none to be had (a read-only folder without one,
    or a file that is not a key of ours: nothing is then signed or read)."""
    path = folder / KEY_FILE
    if not os.path.lexists(path):
        _new_key(folder, path)
    key = read_own(path, secret=True)
    return key if key is not None and len(key) == _KEY_SIZE else None


def _new_key(folder: Path, path: Path) -> None:
    """Write a random key to ``path`` whole or not at all: a temporary file, then a hard link
    (which fails when another process linked its key first; that one is then read)."""
    tmp = folder / f"{KEY_FILE}.{os.getpid()}.part"
    try:
        tmp.unlink(missing_ok=True)  # a killed process's leftover under this pid
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(os.urandom(_KEY_SIZE))
        os.link(tmp, path)
    except OSError:
        pass  # read-only, or another process's key is there now
    finally:
        try:
            tmp.unlink()
        except OSError:
            pass


def mac(key: bytes, data: bytes) -> bytes:
    """HMAC-SHA256 of ``data`` under ``key`` (RFC 2104; the same bytes as
    ``hmac.digest(key, data, "sha256")``, computed without hmac's import of hashlib)."""
    if len(key) > _BLOCK:
        key = sha256(key).digest()
    padded = key.ljust(_BLOCK, b"\0")
    inner = sha256(bytes(b ^ 0x36 for b in padded))
    inner.update(data)
    return sha256(bytes(b ^ 0x5C for b in padded) + inner.digest()).digest()


def verified(key: bytes, data: bytes, signature: bytes) -> bool:
    """Whether ``signature`` is ``mac(key, data)``, compared in constant time."""
    return _compare_digest(mac(key, data), signature)
