"""fastjsonschema's compiled validator, cached in the user's cache folder.

Compiling the native schema costs ~0.1 s (fastjsonschema writes ~220 KB of
Python, then Python compiles it): more than the rest of a ``vxtrain
validate`` (without the cache, validate's cold start is ~1.9x our dependencies'
import, against a budget of 1.25x). The compiled code object is kept in
``$XDG_CACHE_HOME/vxtrain`` (``~/.cache/vxtrain``), one file per key — the
hash of the schema, the compile options, fastjsonschema's version and the
interpreter's bytecode tag — so a changed schema, a new fastjsonschema or
another Python never reads a stale file (files of other keys are left for
the interpreters that use them; each is ~310 KB). The file is written atomically
(a temporary file, then a rename); when the folder cannot be written (a
read-only home, a sandbox) or a cached file is unreadable or corrupt, the
validator is compiled in memory as before. Nothing is written into the
installed package, so a read-only install works.

The cache is code that validate runs, so it is trusted only as far as
vxtrain.private allows: the folder must be this user's own 0700 folder (else it is
not used, with a warning), and each file carries an HMAC-SHA256 of its key and code
under the folder's own random key, checked before ``marshal.loads`` sees a byte
(marshal is not safe against crafted data: https://docs.python.org/3/library/marshal.html).
A file another user planted, or one copied from another machine, is compiled again.
"""
from __future__ import annotations

import json
import marshal
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from types import CodeType
from typing import Any

import fastjsonschema

from vxtrain.private import MAC_SIZE, cache_home, folder_key, mac, read_own, sha256, trusted, verified, write_private

#: Bumped when what is cached, or how, changes (2: signed).
_FORMAT = "2"
_MAGIC = b"vxtrain-fastjsonschema\n"
_PREFIX = "schema-"
_SUFFIX = ".marshal"
#: How the warning of a folder that is not private names this cache.
_WHAT = "the compiled-schema cache"


def cache_dir() -> Path:
    """The user's cache folder for vxtrain: ``$XDG_CACHE_HOME/vxtrain``, else ``~/.cache/vxtrain``
    (a relative XDG_CACHE_HOME is ignored, as the XDG spec says)."""
    return cache_home() / "vxtrain"


def cache_key(definition: Mapping[str, Any]) -> str:
    """The hex digest naming the cached validator of ``definition``."""
    text = json.dumps(definition, sort_keys=True, separators=(",", ":"))
    parts = (_FORMAT, fastjsonschema.VERSION, sys.implementation.cache_tag or "", text)
    return sha256("\0".join(parts).encode("utf-8")).hexdigest()


def compile_validator(definition: Mapping[str, Any], folder: Path | None = None) -> Callable[[Any], Any]:
    """fastjsonschema's validator of ``definition`` (draft 7, defaults never filled in).

    Read from the cache in ``folder`` (default: ``cache_dir()``) when there,
    else compiled and written there when it can be.
    """
    folder = cache_dir() if folder is None else folder
    key = cache_key(definition)
    path = folder / f"{_PREFIX}{key}{_SUFFIX}"
    signing = folder_key(folder) if trusted(folder, _WHAT) else None
    cached = None if signing is None else _read(path, key, signing)
    if cached is not None:
        try:
            return _validator(cached)
        except Exception:  # a file that loads but does not run: compile it again
            pass
    source = fastjsonschema.compile_to_code(dict(definition), use_default=False)
    code = compile(source, f"<fastjsonschema {key[:12]}>", "exec")
    if signing is not None:
        _write(path, key, code, signing)
    return _validator(code)


def compile_predicate(definition: Mapping[str, Any], folder: Path | None = None) -> Callable[[Any], bool]:
    """Whether data conforms to ``definition``: compile_validator's validator as a predicate
    (fastjsonschema stops at the first error, so it answers only that)."""
    validate = compile_validator(definition, folder)

    def conforms(data: Any) -> bool:
        try:
            validate(data)
        except fastjsonschema.JsonSchemaException:
            return False
        return True

    return conforms


def _validator(code: CodeType) -> Callable[[Any], Any]:
    """Run the compiled module and return its entry point, as fastjsonschema.compile does."""
    namespace: dict[str, Any] = {}
    exec(code, namespace)  # the code fastjsonschema generated for our own schema
    # fastjsonschema names the entry point after the schema's $id: the first function.
    names = [n for n, v in namespace.items() if n.startswith("validate") and callable(v)]
    if not names:
        raise ValueError("the compiled schema defines no validate function")
    return namespace[names[0]]  # type: ignore[no-any-return]


def _read(path: Path, key: str, signing: bytes) -> CodeType | None:
    """The cached code of ``key``, or None when absent, unreadable, corrupt, not this user's
    file, or not signed with ``signing`` (checked before marshal reads it)."""
    header = _MAGIC + key.encode("ascii") + b"\n"
    data = read_own(path)
    if data is None or not data.startswith(header):
        return None
    signature, body = data[len(header):len(header) + MAC_SIZE], data[len(header) + MAC_SIZE:]
    if not verified(signing, header + body, signature):
        return None
    try:
        code = marshal.loads(body)
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _write(path: Path, key: str, code: CodeType, signing: bytes) -> None:
    """Write the cache file atomically (private.write_private: a temporary file, then a rename),
    signed, mode 0600; do nothing when the folder is not writable."""
    header, body = _MAGIC + key.encode("ascii") + b"\n", marshal.dumps(code)
    try:
        write_private(path, header + mac(signing, header + body) + body)
    except OSError:
        pass  # a read-only or full disk: the validator in memory serves this process
