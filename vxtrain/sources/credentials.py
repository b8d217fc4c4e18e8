"""Files a source folder must not carry into an image or a package: credentials, and
names a container runtime reads as deletions.

One table for both (``build.source`` and ``python_package.source``): an image is pushed
to a registry that every reader of the project can pull, a package is uploaded to a
bucket; either way a credential inside is handed to everyone who can read it. A file
in the table is refused by validate, plan and submit, naming each one and the fix:
list it in ``.vxtrainignore`` (or ``.gitignore``) in the folder, or move it out. An
ignored file is never read, hashed nor packaged (vxtrain.sources.folder), so that is
the way to keep one next to the code.

The table matches names: a name is what each tool looks for, so it is what a copied
home folder or a careless ``cp -r ~/.config`` brings in. Two kinds are found by
content, because they have no fixed name:

- a private key (``server.pem``, ``deploy_key``, a key pasted into ``key.txt``, into a
  string of code, or into a notebook's cell): an armored ``-----BEGIN ... PRIVATE KEY-----``
  block, PEM or OpenSSH's, with its body and its END line, in the first KEY_SCAN_BYTES of
  a file (a key file is a few KB; a server's PEM bundle puts its certificates first), or
  anywhere in a notebook up to NOTEBOOK_SCAN_BYTES (its outputs' images come before a
  later cell);
- a Google credential JSON (a service account key, ``GOOGLE_APPLICATION_CREDENTIALS=key.json``),
  the credential a Vertex AI project most often holds, told by its ``"type"``; only
  ``.json`` files up to KEY_FILE_MAX bytes count (a key is about 2.3 KB).

Each packaged file is opened once for both, and only its first KEY_SCAN_BYTES are read
(a notebook's first NOTEBOOK_SCAN_BYTES): the whole folder is read once more by its hash,
not here.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from vxtrain.vocab.reads import read_up_to

__all__ = ["CREDENTIALS", "Credential", "GOOGLE_KEY", "KEY_FILE_MAX", "KEY_SCAN_BYTES", "NOTEBOOK_SCAN_BYTES",
           "PRIVATE_KEY", "WHITEOUT_PREFIX", "credential_files", "private_key", "whiteout_names"]

#: A layer entry whose name starts with this is a whiteout: the runtime deletes the file
#: of that name in the layers below, and shows neither
#: (https://github.com/opencontainers/image-spec/blob/main/layer.md#whiteouts; ``.wh..wh..opq``,
#: the opaque whiteout, hides a whole folder). A user's file of that name would be pushed
#: and then vanish, taking a file of the base with it.
WHITEOUT_PREFIX = ".wh."


class Credential(NamedTuple):
    """One kind of credential file: its name (path parts at the end of a file's path, or a
    folder whose every file counts), and why it is refused. (A NamedTuple: validate's cold
    start imports this table: 0.17 ms to run this module, 0.40 ms with a frozen dataclass.)"""

    parts: tuple[str, ...]
    folder: bool  # every file under a folder of this name (path) counts
    why: str

    def matches(self, rel: PurePosixPath) -> bool:
        """True when the relative path ``rel`` of a file is this credential."""
        names, n = rel.parts, len(self.parts)
        if not self.folder:
            return names[-n:] == self.parts
        return any(names[i:i + n] == self.parts for i in range(len(names) - n))

    @property
    def pattern(self) -> str:
        """The ignore-file line that leaves it out (``**/.ssh/``, ``**/.netrc``)."""
        return "**/" + "/".join(self.parts) + ("/" if self.folder else "")


_SSH_KEY = "an SSH private key: whoever holds it logs in as you"
_GCLOUD = "gcloud's credentials: whoever holds them acts as you on Google Cloud"
#: dotenv's local files (Vite and Next.js load them): ".env.*.local files are local-only and can
#: contain sensitive variables" (https://vite.dev/guide/env-and-mode, read 2026-11-27).
_LOCAL_ENV = "a local environment file (dotenv's .env.local, .env.MODE.local): where secrets are kept"
#: Each entry's source is the tool's own documentation of where it keeps credentials:
#: ssh(1) FILES; `gcloud info` (its config folder) and
#: https://cloud.google.com/docs/authentication/application-default-credentials;
#: https://docs.docker.com/reference/cli/docker/login/; curl's and Python's netrc(5);
#: https://git-scm.com/docs/git-credential-store;
#: https://docs.aws.amazon.com/cli/latest/userguide/cli-configure-files.html;
#: https://kubernetes.io/docs/concepts/configuration/organize-cluster-access-kubeconfig/;
#: https://packaging.python.org/en/latest/specifications/pypirc/ (read 2026-11-27).
CREDENTIALS: tuple[Credential, ...] = (
    Credential((".ssh",), True, "SSH keys and the hosts they open: whoever holds them logs in as you"),
    Credential(("id_rsa",), False, _SSH_KEY),
    Credential(("id_dsa",), False, _SSH_KEY),
    Credential(("id_ecdsa",), False, _SSH_KEY),
    Credential(("id_ed25519",), False, _SSH_KEY),
    Credential(("id_ecdsa_sk",), False, _SSH_KEY),
    Credential(("id_ed25519_sk",), False, _SSH_KEY),
    Credential(("gcloud", "credentials.db"), False, _GCLOUD),
    Credential(("gcloud", "access_tokens.db"), False, _GCLOUD),
    Credential(("gcloud", "legacy_credentials"), True, _GCLOUD),
    Credential(("application_default_credentials.json",), False,
               "Application Default Credentials: whoever holds them acts as you on Google Cloud"),
    Credential((".docker", "config.json"), False, "Docker's registry logins (auths): whoever holds them "
               "pushes and pulls as you"),
    Credential((".netrc",), False, "machine passwords (curl, pip, git and ftp read them)"),
    Credential(("_netrc",), False, "machine passwords (netrc's Windows name)"),
    Credential((".env",), False, "an environment file: where API keys and passwords are kept"),
    Credential((".env.local",), False, _LOCAL_ENV),
    Credential((".env.development.local",), False, _LOCAL_ENV),
    Credential((".env.production.local",), False, _LOCAL_ENV),
    Credential((".env.test.local",), False, _LOCAL_ENV),
    Credential((".git-credentials",), False, "git's stored passwords and tokens, in plain text"),
    Credential((".aws", "credentials"), False, "AWS access keys"),
    Credential((".kube", "config"), False, "Kubernetes clusters' credentials (kubeconfig)"),
    Credential((".pypirc",), False, "package index upload passwords and tokens"),
    Credential((".pgpass",), False, "PostgreSQL passwords"),
    Credential((".gnupg",), True, "GnuPG private keys"),
)


#: The names a credential's path can hold (its file's name, or its folder's): a file with
#: none of them in its path is no credential, found with one set lookup per part.
_NAMES = frozenset(entry.parts[0] if entry.folder else entry.parts[-1] for entry in CREDENTIALS)


#: The ``"type"`` of the credential files google-auth loads that hold a secret (a private key
#: or a refresh token): google-auth's ``google.auth._default._VALID_TYPES`` (read 2026-11-27;
#: not imported: validate never imports google), less ``external_account``, a workload
#: identity configuration that names where its token comes from and holds none. Compiled on
#: first use (re's own cache): ~0.4 ms of every cold start, for folders with .json files only.
_GOOGLE_TYPE = (rb'"type"\s*:\s*"(?:service_account|authorized_user|external_account_authorized_user|'
                rb'impersonated_service_account|gdch_service_account)"')
#: JSON files larger than this are not read for a key (a service account key is ~2.3 KB).
KEY_FILE_MAX = 64 * 1024
#: What a Google credential JSON found by its content is refused as (its name is its own).
GOOGLE_KEY = "a Google Cloud credential file (a service account key or a login's refresh token): whoever " \
             "holds it acts as that account"


#: Bytes read of each packaged file for a private key: its first 64 KiB. A key file is a few KB
#: (an RSA 4096 PEM 3.2 KB), a bundle of a server's certificate chain and key well under this.
KEY_SCAN_BYTES = 64 * 1024
#: Bytes read of a notebook (``.ipynb``) for a private key: a cell's key may come after outputs
#: of many KB each (a plot is a base64 PNG), and a notebook is read whole by the hash anyway.
NOTEBOOK_SCAN_BYTES = 16 * 1024 * 1024
#: What a file holding a private key is refused as.
PRIVATE_KEY = "a private key: whoever holds it signs, decrypts or logs in as its owner"
#: The BEGIN line of an armored private key: RFC 7468's ``PRIVATE KEY`` (PKCS #8, sec. 10) and
#: ``ENCRYPTED PRIVATE KEY`` (sec. 11); OpenSSL's traditional ``RSA``/``EC``/``DSA PRIVATE KEY``
#: (pem(3ossl), with ``Proc-Type``/``DEK-Info`` headers when encrypted); OpenSSH's ``OPENSSH
#: PRIVATE KEY`` (https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.key);
#: OpenPGP's ``PGP PRIVATE KEY BLOCK`` (RFC 4880, sec. 6.2; read 2026-12-01). Anywhere in a
#: line: a key pasted into a string of code (``KEY = """-----BEGIN``), a notebook's JSON
#: (``"-----BEGIN ...-----\n",``) or indented YAML is the same key. Compiled on first use
#: (re's own cache), for files that hold the words only.
_KEY_BEGIN = rb"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
#: A string's escapes of a line end or a slash (JSON writes ``\/`` too): a key in a string of
#: code or a notebook's JSON has its line ends written so.
_ESCAPES = ((b"\\n", b"\n"), (b"\\r", b"\n"), (b"\\t", b" "), (b"\\/", b"/"))
#: What a string around a key's lines adds: its quotes, and the commas between a notebook's lines.
_QUOTING = b"\"',"
#: A header line of an armored block (``Proc-Type: 4,ENCRYPTED``, PGP's ``Version: GnuPG v2``).
_KEY_HEADER = rb"[A-Za-z][A-Za-z-]*: .*"
#: A line of a key's base64 body; one this long or longer (keys write 64 or 70 characters a
#: line) is a key's, so a block whose lines are all shorter (``MIIE``) holds none.
_KEY_LINE = rb"[A-Za-z0-9+/=]*"
_KEY_LINE_MIN = 16


def credential_files(files: Iterable[PurePosixPath], root: Path | None = None) -> list[tuple[PurePosixPath, Credential]]:
    """The files (relative paths, in the order given) that are credentials, each with its entry;
    with ``root`` (the folder they are in), also those that are by content: a private key, a
    Google credential JSON."""
    found = []
    for rel in files:
        hit = None if _NAMES.isdisjoint(rel.parts) else next((e for e in CREDENTIALS if e.matches(rel)), None)
        why = None if hit is not None or root is None else _by_content(root / rel, rel.suffix == ".json")
        if why is not None:
            hit = Credential(rel.parts, False, why)
        if hit is not None:
            found.append((rel, hit))
    return found


def _by_content(path: Path, json: bool) -> str | None:
    """Why the file ``path`` is a credential by its first KEY_SCAN_BYTES (a private key; for a
    small ``json`` file, a Google credential), or None."""
    scan = NOTEBOOK_SCAN_BYTES if path.suffix == ".ipynb" else KEY_SCAN_BYTES
    try:  # os.open and os.read: no buffered file object per file (the walk may open thousands)
        fd = os.open(path, os.O_RDONLY)
        try:
            head, size = read_up_to(fd, scan), os.fstat(fd).st_size
        finally:
            os.close(fd)
    except OSError:  # unreadable: the walk's own check says so
        return None
    if b"PRIVATE KEY" in head and private_key(head):
        return PRIVATE_KEY
    if json and size <= KEY_FILE_MAX and re.search(_GOOGLE_TYPE, head) is not None:
        return GOOGLE_KEY
    return None


def private_key(data: bytes) -> bool:
    """True when ``data`` holds an armored private key: its BEGIN line, a body of base64 lines
    (one of 16 characters or more) as a file, a string or a notebook writes it, and its END
    line with the same label."""
    for begin in re.finditer(_KEY_BEGIN, data):
        end = data.find(b"-----END " + begin.group(1) + b"-----", begin.end())
        if end == -1:
            continue
        if _key_body(data[begin.end():end]):
            return True
    return False


def _key_body(body: bytes) -> bool:
    """Whether ``body`` (between a BEGIN and an END line) is a key's body, however it is written
    down: base64 lines and headers, in a file, a string (``\\n`` escapes, quotes) or a notebook
    (a JSON list of lines), indented or not. Anything else (``...``, a placeholder in a README;
    code that parses keys) is no key."""
    for escape, plain in _ESCAPES:
        body = body.replace(escape, plain)
    lines = body.translate(None, _QUOTING).replace(b"\r", b"\n").split(b"\n")
    long_line = False
    for line in (raw.strip() for raw in lines):
        if re.fullmatch(_KEY_LINE, line) is not None:
            long_line = long_line or len(line) >= _KEY_LINE_MIN
        elif re.fullmatch(_KEY_HEADER, line) is None:
            return False
    return long_line


def whiteout_names(files: Iterable[PurePosixPath]) -> list[PurePosixPath]:
    """The files (relative paths) with a part that a runtime reads as a whiteout."""
    return [rel for rel in files if any(part.startswith(WHITEOUT_PREFIX) for part in rel.parts)]
