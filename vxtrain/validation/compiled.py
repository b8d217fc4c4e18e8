"""fastjsonschema's compiled validator, cached in the user's cache folder.

Compiling the native schema costs ~0.1 s (fastjsonschema writes ~220 KB of
Python, then Python compiles it): more than the rest of a ``vxtrain
validate``. The compiled code object is kept in
``$XDG_CACHE_HOME/vxtrain`` (``~/.cache/vxtrain``), one file per key — the
hash of the schema, the compile options, fastjsonschema's version and the
interpreter's bytecode tag — so a changed schema, a new fastjsonschema or
another Python never reads a stale file (files of other keys are left for
the interpreters that use them; each is ~160 KB). The file is written atomically
(a temporary file, then a rename); when the folder cannot be written (a
read-only home, a sandbox) or a cached file is unreadable or corrupt, the
validator is compiled in memory as before. Nothing is written into the
installed package, so a read-only install works.
"""
from __future__ import annotations

import json
import marshal
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from types import CodeType
from typing import TYPE_CHECKING, Any

import fastjsonschema

if TYPE_CHECKING:  # the same type as hashlib's
    from hashlib import sha256
else:
    try:  # sha256 without hashlib, whose import loads OpenSSL's libcrypto: ~3.5 ms of validate's
        # cold start (-X importtime), for one hash of ~30 KB. The same digests; built into CPython 3.11.
        from _sha256 import sha256
    except ImportError:  # Python 3.12+ (_sha2), or a build without the builtin hashes
        try:
            from _sha2 import sha256
        except ImportError:
            from hashlib import sha256

#: Bumped when what is cached, or how, changes.
_FORMAT = "1"
_MAGIC = b"vxtrain-fastjsonschema\n"
_PREFIX = "schema-"
_SUFFIX = ".marshal"


def cache_dir() -> Path:
    """The user's cache folder for vxtrain: ``$XDG_CACHE_HOME/vxtrain``, else ``~/.cache/vxtrain``
    (a relative XDG_CACHE_HOME is ignored, as the XDG spec says)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "vxtrain")


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
    cached = _read(path, key)
    if cached is not None:
        try:
            return _validator(cached)
        except Exception:  # a file that loads but does not run: compile it again
            pass
    source = fastjsonschema.compile_to_code(dict(definition), use_default=False)
    code = compile(source, f"<fastjsonschema {key[:12]}>", "exec")
    _write(folder, path, key, code)
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


def _read(path: Path, key: str) -> CodeType | None:
    """The cached code of ``key``, or None when absent, unreadable or corrupt."""
    header = _MAGIC + key.encode("ascii") + b"\n"
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(header):
        return None
    try:
        code = marshal.loads(data[len(header):])
    except (ValueError, EOFError, TypeError):
        return None
    return code if isinstance(code, CodeType) else None


def _write(folder: Path, path: Path, key: str, code: CodeType) -> None:
    """Write the cache file atomically; do nothing when the folder is not writable."""
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{_PREFIX}", dir=folder)
        with os.fdopen(fd, "wb") as out:
            out.write(_MAGIC + key.encode("ascii") + b"\n" + marshal.dumps(code))
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass  # a read-only or full disk: the validator in memory serves this process
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass

