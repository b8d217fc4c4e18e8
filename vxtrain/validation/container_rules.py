"""What runs in the containers: exactly one of ``image``, ``python_package`` or ``build`` per pool
(build's own clashes: image_rules),
and environment variables (C identifiers, at most 100, secret-looking names warned about).
"""
from __future__ import annotations

import re
from collections.abc import Iterator, Mapping

from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.formats.wording import wording
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import CODE_KEYS, Job, key_path_of
from vxtrain.validation._common import RS, key_path

#: EnvVar.name "Must be a valid C identifier"; at most 100 variables per
#: container (google/cloud/aiplatform/v1/env_var.proto, custom_job.proto).
MAX_ENV_VARS = 100
_C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Name parts that suggest a secret value. Matched on whole ``_``-separated
#: words, so MAX_TOKENS or TOKENIZER_DIR do not trip it.
_SECRET_WORDS = frozenset({"PASSWORD", "PASSWD", "SECRET", "TOKEN", "CREDENTIALS", "CREDENTIAL",
                           "APIKEY", "PASSPHRASE"})
_SECRET_PAIRS = frozenset({("API", "KEY"), ("PRIVATE", "KEY"), ("ACCESS", "KEY"),
                           ("SECRET", "KEY"), ("AUTH", "KEY")})
#: Names of files or references that are not secrets themselves.
_NOT_SECRETS = frozenset({"GOOGLE_APPLICATION_CREDENTIALS"})
#: A name ending like this points at a secret (a file, a Secret Manager name), not the secret.
_REFERENCE_WORDS = frozenset({"FILE", "PATH", "DIR", "NAME", "ID", "URI", "REF"})


def code_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Every pool but Reduction Server runs exactly one of ``image``, ``python_package`` or ``build``."""
    for pool in job.ordered_pools():
        if pool.role == RS:
            continue  # the Reduction Server image is chosen by vxtrain
        if pool.image is None and pool.python_package is None and pool.build is None:
            # Code ``extra:`` gives is on these keys (formats.gcloud.as_sent), unless it gives both
            # tasks, which extra.py reports (extra-oneof): not a pool that runs nothing.
            if not _present(native, pool.role, *CODE_KEYS) and not _extra_tasks(job, pool.index):
                hint = wording(native.format).code_hint_for(pool.index)
                yield error("missing-image", f"{pool.role} runs nothing: {hint}", **native.where((pool.role,)))
            continue
        if pool.build is not None and (pool.image is not None or pool.python_package is not None):
            other = "image" if pool.image is not None else "python_package"
            yield error("build-and-image", f"{pool.role} gives both build and {other}: build makes the pool's image "
                        f"from a folder; remove {other} (or build)",
                        **native.where(key_path(native, pool.role, "build")))
        if pool.image is not None and pool.python_package is not None:
            yield error("image-and-package", f"{pool.role} gives both image ({pool.image}) and python_package; "
                        "Vertex AI takes one (containerSpec or pythonPackageSpec): remove one",
                        **native.where(key_path(native, pool.role, "python_package")))


def _extra_tasks(job: Job, index: int) -> bool:
    """Whether ``extra.jobSpec.workerPoolSpecs[index]`` gives both a containerSpec and a pythonPackageSpec."""
    spec = job.extra.get("jobSpec")
    pools = spec.get("workerPoolSpecs") if isinstance(spec, Mapping) else None
    raw = pools[index] if isinstance(pools, list) and index < len(pools) else None
    return isinstance(raw, Mapping) and all(isinstance(raw.get(task), Mapping)
                                            for task in ("containerSpec", "pythonPackageSpec"))


def _present(native: NativeSpec, role: str, *keys: str) -> bool:
    """Any of ``keys`` written (even with a wrong type, which the schema reports)."""
    return any(key_path(native, role, k) != (role,) for k in keys)


def env_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Env var names are C identifiers, ≤ 100 per container; secret-looking names warn."""
    seen: set[KeyPath] = set()
    for pool in job.ordered_pools():
        if len(pool.env) > MAX_ENV_VARS:
            yield error("too-many-env", f"{pool.role} has {len(pool.env)} env vars; Vertex AI allows at most "
                        f"{MAX_ENV_VARS} per container", **native.where(key_path(native, pool.role, "env")))
        for name in pool.env:
            path = _env_path(native, pool.role, name)
            if path not in seen:
                seen.add(path)
                yield from _env_name(name, native, path)


def _env_path(native: NativeSpec, role: str, name: str) -> KeyPath:
    """Where variable ``name`` was written: the pool's ``env``, else that of ``defaults``."""
    return key_path_of(native.data, role, "env", name)


def _env_name(name: str, native: NativeSpec, path: KeyPath) -> Iterator[Diagnostic]:
    if not _C_IDENTIFIER.match(name):
        yield error("bad-env-name", f'env var name "{name}" is not a C identifier: use letters, digits and '
                    "'_', not starting with a digit (e.g. MY_VAR)", **native.where(path))
    elif looks_secret(name):
        yield warning("secret-env", f'env var "{name}" looks like a secret: env values are visible in the '
                      "job spec to anyone who can view the job; use Secret Manager instead",
                      **native.where(path))


def looks_secret(name: str) -> bool:
    """True for names like DB_PASSWORD, HF_TOKEN, OPENAI_API_KEY (not MAX_TOKENS, TOKEN_FILE)."""
    words = name.upper().split("_")
    if words[-1] in _REFERENCE_WORDS or name.upper() in _NOT_SECRETS:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))
