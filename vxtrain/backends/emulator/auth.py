"""Who may talk to the emulator: the bearer token every call must carry, and the private
socket vxtrain's clients send it through.

The emulator runs the command of every job it is sent, as the user who started it,
so loopback alone is not enough on a shared host: every call, gRPC and REST, must
carry ``Authorization: Bearer TOKEN`` (gRPC metadata ``authorization``), as calls to
Vertex AI carry theirs; anything else is UNAUTHENTICATED (HTTP 401).

The token is, in this order: one the caller hands over (``--target local``'s private
one, held in memory only: :func:`private`), ``VXTRAIN_EMULATOR_TOKEN``, or a random
one written to a file only its user can read (:meth:`Token.write`; where:
vxtrain.backends.tokens), which gcloud reads as ``auth/access_token_file``
(https://cloud.google.com/sdk/gcloud/reference/config/set, "access_token_file: A file
path to read the access token") and vxtrain's clients find by the port.

vxtrain's clients send the token through the Unix socket :func:`claim_socket` readies
beside the token file, never over TCP, where another user may be listening on the same
port at the other loopback address (vxtrain.backends.tokens says why).
"""
from __future__ import annotations

import fcntl
import hmac
import os
import secrets
import socket
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import grpc

from vxtrain.backends.tokens import SOCKET_PATH_MAX, TOKEN_ENV, folder_problem, refusal, socket_file, token_file
from vxtrain.errors import VxtrainError
from vxtrain.private import make_own

#: The scheme of the Authorization header (RFC 6750, section 2.1; compared case-insensitively, RFC 9110 11.1).
SCHEME = "bearer"
#: gRPC carries the header as this metadata key (lower case, as gRPC requires of keys).
METADATA_KEY = "authorization"
#: gcloud's ``auth/access_token_file`` property as an environment variable (``CLOUDSDK_SECTION_PROPERTY``).
GCLOUD_TOKEN_FILE_ENV = "CLOUDSDK_AUTH_ACCESS_TOKEN_FILE"
#: How long a start waits for a socket left on its port to answer (a live emulator's answers at once).
PROBE_SECONDS = 1.0


class Token:
    """The emulator's token: its value, where a client finds it, and the file it was written to."""

    def __init__(self, value: str, where: str, *, needs_file: bool = False) -> None:
        self.value = value
        #: True until :meth:`write` has put it where clients find it (a token neither given nor private).
        self.needs_file = needs_file
        #: Where the token is, as the refusal says it ("in FILE", "VXTRAIN_EMULATOR_TOKEN", …).
        self.where = where
        #: The file it was written to (None: given in the environment, or private to this process).
        self.file: Path | None = None
        #: The file, open and locked (flock) while the emulator serves: a live emulator's mark.
        self._held: int | None = None

    def __repr__(self) -> str:  # never the value: a repr ends up in logs
        return f"Token({self.where})"

    def authorize(self, header: str | None) -> bool:
        """Whether an Authorization header value (None: none sent) is ``Bearer`` with this token."""
        return authorize(self.value, header)

    def refusal(self, header: str | None) -> str:
        """The UNAUTHENTICATED message for a call that sent ``header`` (gRPC and REST alike)."""
        return refusal(header, self.where)

    def write(self, port: int, environ: Mapping[str, str] | None = None) -> Path:
        """Write the token to the port's file (mode 0600, in the user's private folder) and remember it.

        Called once the port is bound (exclusively): a file left by an emulator that was
        killed on this port is stale and is replaced. The file is held locked while the
        emulator serves, so a file still locked is a live emulator's: one of this user's on
        the same port number at another loopback address (127.0.0.1 and ::1 are bound
        apart). Its file is left alone (replacing it would lock that emulator's clients out,
        and either one's stop would remove the other's file) and this one is refused.
        """
        path = token_file(port, environ)
        try:
            _private_folder(path.parent)
            if _locked(path):
                raise VxtrainError(f"another emulator of this user's serves port {port} (at another address) and "
                                   f"its token is in {path}; pick another --port (0: any free port), or set "
                                   f"{TOKEN_ENV} to a token of your choosing")
            path.unlink(missing_ok=True)
            # O_EXCL | O_NOFOLLOW: never write through a link or into a file someone else made.
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise VxtrainError(f"cannot write the emulator's token to {path}: {exc.strerror or exc}; "
                               f"set {TOKEN_ENV} to a token of your choosing instead") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else has it open: never blocks
            os.write(fd, self.value.encode())  # gcloud's file holds "an access token with no other information"
        except OSError:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        self._held = fd
        self.file, self.needs_file = path, False
        self.where = f"is in {path} (readable only by the user who started the emulator)"
        return path

    def remove(self) -> None:
        """Remove the file it was written to, if any, then let go of its lock (idempotent)."""
        if self.file is not None:
            self.file.unlink(missing_ok=True)
            self.file = None
        if self._held is not None:
            os.close(self._held)
            self._held = None


def authorize(token: str, header: str | None) -> bool:
    """Whether ``header`` (an Authorization value) is ``Bearer TOKEN``, compared in constant time."""
    if header is None:
        return False
    scheme, _, credential = header.strip().partition(" ")
    return scheme.lower() == SCHEME and hmac.compare_digest(credential.strip().encode(), token.encode())


def private(value: str | None = None) -> Token:
    """A token held in memory only (``value``, else a random one), for an emulator one process
    starts for itself: that process passes it to the clients it builds."""
    return Token(value or secrets.token_urlsafe(32), "is private to the process that started it "
                 "(vxtrain --target local)")


def serving_token(environ: Mapping[str, str]) -> Token:
    """The token an emulator serves with: ``VXTRAIN_EMULATOR_TOKEN`` when set, else a new random
    one (to be written with :meth:`Token.write` once the port is known)."""
    given = environ.get(TOKEN_ENV, "").strip()
    if given:
        return Token(given, f"is the value of {TOKEN_ENV} it was started with")
    return Token(secrets.token_urlsafe(32), "is in its token file", needs_file=True)


def _locked(path: Path) -> bool:
    """Whether ``path`` is a token file a live emulator holds (locked); False when it is
    missing or stale (its emulator was killed: the kernel let go of its lock)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _private_folder(folder: Path) -> None:
    """Make ``folder`` as every private folder of vxtrain's is made (private.make_own: 0700,
    the folders above it too; an existing one of this user's that others may read but not
    write tightened, never one others could write into), then check that it is this user's
    own and private, and that no folder above it lets another user replace it."""
    make_own(folder)
    problem = folder_problem(folder)
    if problem is not None:
        raise VxtrainError(f"cannot keep the emulator's token and socket in {folder}: {problem}; fix it, or point "
                           f"XDG_RUNTIME_DIR or XDG_CACHE_HOME at a private folder of yours")


def claim_socket(port: int, environ: Mapping[str, str] | None = None) -> Path:
    """The path of the Unix socket the emulator on ``port`` serves on, ready to bind: in the
    user's private folder, where no other user can make or replace a file, so a client that
    finds a socket of its user's there knows whose emulator answers (tokens.own_socket).

    A socket left by an emulator that was killed (nothing answers it) is removed; one that
    answers is a live emulator of this user's on the same port number at another loopback
    address, which is refused (gRPC would silently take its path over).
    """
    path = socket_file(port, environ)
    _private_folder(path.parent)
    if len(os.fsencode(path)) > SOCKET_PATH_MAX:
        raise VxtrainError(f"cannot serve the emulator's socket at {path}: the path is longer than a Unix socket "
                           f"takes ({SOCKET_PATH_MAX} bytes); point XDG_RUNTIME_DIR or XDG_CACHE_HOME at a "
                           f"shorter folder")
    if _answers(path):
        raise VxtrainError(f"another emulator of this user's serves port {port} (at another address) and "
                           f"answers on {path}; pick another --port (0: any free port)")
    try:
        path.unlink(missing_ok=True)
    except OSError as exc:
        raise VxtrainError(f"cannot remove the stale socket {path}: {exc.strerror or exc}") from exc
    return path


def _answers(path: Path) -> bool:
    """Whether a process listens on the Unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_SECONDS)
        try:
            probe.connect(str(path))
        except OSError:  # missing, not a socket, or nothing listening (ECONNREFUSED): stale
            return False
    return True


# --- gRPC ------------------------------------------------------------------------

class BearerInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc's classes are unannotated
    """Refuses (UNAUTHENTICATED) every call, unary or streaming, whose ``authorization``
    metadata is not ``Bearer TOKEN``; the method's own handler never runs for it."""

    def __init__(self, token: Token) -> None:
        self.token = token

    def intercept_service(self, continuation: Callable[[Any], Any], details: Any) -> Any:
        """The method's handler for an authorized call, else one that refuses it."""
        header = next((str(v) for k, v in details.invocation_metadata or () if k == METADATA_KEY), None)
        handler = continuation(details)
        if handler is None or self.token.authorize(header):
            return handler  # None: an unknown method, UNIMPLEMENTED either way
        return _refusing(handler, self.token.refusal(header))


def _refusing(handler: Any, message: str) -> Any:
    """A handler of the same shape as ``handler`` (unary or streaming, each side) that aborts
    with UNAUTHENTICATED before reading a request (no deserializer: nothing unasked is parsed)."""
    def refuse(_request: Any, context: grpc.ServicerContext) -> Any:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, message)

    make = {(False, False): grpc.unary_unary_rpc_method_handler,
            (False, True): grpc.unary_stream_rpc_method_handler,
            (True, False): grpc.stream_unary_rpc_method_handler,
            (True, True): grpc.stream_stream_rpc_method_handler}[
        (bool(handler.request_streaming), bool(handler.response_streaming))]
    return make(refuse, response_serializer=handler.response_serializer)
