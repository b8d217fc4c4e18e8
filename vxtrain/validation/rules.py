"""Semantic validation rules: what Vertex AI would reject (errors) or what is
probably a mistake (warnings), checked before any API call.

``check`` runs after the JSON-schema check (vxtrain/validation/schema.py), which
already reports wrong types, unknown keys, missing required keys, enums
(scheduling.strategy), duration syntax, ``replicas``/``count`` below 1, the
display_name length and incomplete ``python_package`` blocks. The rules here
do what a schema cannot: cross-field checks and lookups in the machine
catalog. They read the lenient job model, so any field may be None.

Every message names the bad value and what would be accepted; the Vertex doc
that forced a rule is linked beside it.
"""
from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.validation import extra as extra_rules
from vxtrain.validation import package_rules, region_rules, study_rules
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Accelerator, Job, Pool
from vxtrain.slots import TRAINING_ROLES

Rule = Callable[[Job, NativeSpec], Iterable[Diagnostic]]

RS = "reduction_server"
DISTRIBUTED_DOC = "https://cloud.google.com/vertex-ai/docs/training/distributed-training"
#: Vertex AI training's machine types, GPUs and N1 GPU limits (the catalog's
#: training_*.csv and n1_gpu_limits.csv were read from it, 2026-11-23).
TRAINING_MACHINES_DOC = "https://cloud.google.com/vertex-ai/docs/training/configure-compute"
TENSORBOARD_DOC = "https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-training"
LABELS_DOC = "https://cloud.google.com/resource-manager/docs/labels-overview#requirements"
K80_DOC = "https://cloud.google.com/compute/docs/eol/k80-eol"

#: Label requirements: ≤ 64 labels per resource, keys/values ≤ 63 characters of
#: lowercase letters, digits, '-' and '_' (international letters allowed), keys
#: start with a lowercase letter (LABELS_DOC). ``submit`` adds one label of its
#: own (the idempotency key), so a spec may carry one fewer.
MAX_LABELS = 64
MAX_USER_LABELS = MAX_LABELS - 1
MAX_LABEL_CHARS = 63
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
FLEX_START = "FLEX_START"


def check(job: Job, native: NativeSpec) -> list[Diagnostic]:
    """Every semantic diagnostic of ``job`` (located through ``native``)."""
    out: list[Diagnostic] = []
    for rule in RULES:
        out += rule(job, native)
    # A mistake in ``defaults`` shows in every pool that inherits it: report it once.
    return list(dict.fromkeys(out))


# --- where things are ------------------------------------------------------------

def _raw_pool(native: NativeSpec, role: str) -> Mapping[str, Any]:
    raw = native.data.get(role)
    return raw if isinstance(raw, Mapping) else {}


def _defaults(native: NativeSpec) -> Mapping[str, Any]:
    raw = native.data.get("defaults")
    return raw if isinstance(raw, Mapping) else {}


def _key_path(native: NativeSpec, role: str, key: str) -> KeyPath:
    """Where a pool's ``key`` was written: in the pool, else in ``defaults``, else the pool."""
    if key in _raw_pool(native, role):
        return (role, key)
    if role != RS and key in _defaults(native):
        return ("defaults", key)
    return (role,)


def _at(native: NativeSpec, path: KeyPath) -> dict[str, Any]:
    return native.where(path)


def _quote_list(values: Iterable[object]) -> str:
    return ", ".join(f'"{v}"' for v in values)


def _or_list(values: Iterable[object]) -> str:
    return " or ".join(f'"{v}"' for v in values)


# --- pool 0 ----------------------------------------------------------------------

def chief_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Pool 0 must exist with exactly one replica; never silently fixed."""
    # CustomJobSpec.worker_pool_specs: the first pool is the primary replica and
    # its replicaCount must be 1: DISTRIBUTED_DOC#cluster-spec-format
    if job.pool("chief") is None:
        yield error("missing-chief", "no 'chief' pool: Vertex AI requires workerPoolSpecs[0], the "
                    f"primary replica; {_CHIEF_HINTS[native.format]}", **_at(native, ("chief",)))
        return
    replicas = _raw_pool(native, "chief").get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas != 1:
        yield error("chief-replicas", f"the chief pool has {replicas} replicas: Vertex AI requires exactly 1 "
                    "replica in workerPoolSpecs[0]; put the other replicas in 'workers' (pool 1)",
                    **_at(native, ("chief", "replicas")))


#: How to add the primary replica, in the words of each input format.
_CHIEF_HINTS: dict[str, str] = {
    "native": "add 'chief:' with a machine_type and an image",
    "gcloud": "give workerPoolSpecs[0] a machineSpec, replicaCount: 1 and a containerSpec",
    "legacy": "with scaleTier: CUSTOM, set masterType (the chief's machine type, e.g. "
              "masterType: n1-standard-8)",
}
#: How to give a pool something to run, in the words of each input format.
_CODE_HINTS: dict[str, str] = {
    "native": "give 'image' (a container URI) or 'python_package' {executor_image, module, source or package_uris}, "
              "in the pool or in 'defaults'",
    "gcloud": "give workerPoolSpecs[INDEX] a containerSpec {imageUri} or a pythonPackageSpec "
              "{executorImageUri, packageUris, pythonModule}",
    "legacy": "set masterConfig.imageUri (a custom container, which the other pools inherit) or packageUris "
              "and pythonModule (a Python package)",
}


def evaluator_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """More than one evaluator is allowed but rarely meant (TF runs one evaluator task)."""
    pool = job.pool("evaluators")
    if pool is not None and pool.replicas is not None and pool.replicas > 1:
        yield warning("multiple-evaluators", f"evaluators.replicas is {pool.replicas}: TensorFlow uses a "
                      "single evaluator; extra replicas evaluate the same checkpoints (1 is usual)",
                      **_at(native, ("evaluators", "replicas")))


# --- machine types and accelerators ------------------------------------------------

def machine_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Machine types: missing, a typo of an offered type, or not offered for training (errors)."""
    for pool in job.ordered_pools():
        yield from _machine(pool, native)


def _machine(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    path = _key_path(native, pool.role, "machine_type")
    mt = pool.machine_type
    if mt is None:
        if path == (pool.role,):  # absent; a wrong-typed value is the schema's to report
            yield error("missing-machine-type", f"{pool.role} has no machine_type: Vertex AI needs "
                        "machineSpec.machineType, e.g. n1-standard-8", **_at(native, path))
        return
    if catalog.offered(mt):
        return
    near = catalog.near_miss(mt)
    if near is not None:
        yield error("unknown-machine-type", f'machine type "{mt}" does not exist; did you mean "{near}"?',
                    **_at(native, path))
        return
    yield _not_offered(mt, native, path)


def _not_offered(mt: str, native: NativeSpec, path: KeyPath) -> Diagnostic:
    # Vertex AI training offers a subset of Compute Engine's types, listed on
    # TRAINING_MACHINES_DOC (vxtrain/catalog/training_machines.csv). A type added
    # after the list's date is refused too, and the message says how to tell.
    if catalog.machine(mt) is not None:
        what = f'machine type "{mt}" is a Compute Engine type, but Vertex AI training does not offer it'
    else:
        what = f'machine type "{mt}" is not one Vertex AI training offers'
    nearest = catalog.nearest_offered(mt)
    hint = f"; did you mean {_or_list(nearest)}?" if nearest else ""
    return error("machine-not-offered", f"{what}{hint} (offered types: {TRAINING_MACHINES_DOC}, "
                 f"list as of {catalog.training_list_as_of()})", **_at(native, path))


def accelerator_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Accelerator type known, offered, allowed on the machine, in an allowed count; A2/A3/G2 need theirs."""
    for pool in job.ordered_pools():
        if pool.role == RS:
            continue  # reduction_server_rules reports any accelerator there
        if pool.accelerator is None:
            yield from _missing_builtin(pool, native)
        else:
            yield from _type_and_count(pool, native)
            yield from _accelerator(pool, pool.accelerator, native)


def _type_and_count(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    # Vertex AI rejects a MachineSpec with only one of the two (INVALID_ARGUMENT,
    # quoted in tests/data/rejections/type-without-count.yaml). The native format
    # defaults count to 1 and always compiles both; gcloud input states them as
    # Vertex reads them, so a missing acceleratorCount is missing on the wire too.
    if native.format != "gcloud":
        return
    raw = _raw_pool(native, pool.role).get("accelerator")
    if isinstance(raw, Mapping) and ("type" in raw) != ("count" in raw):
        present = "type" if "type" in raw else "count"
        yield error("accelerator-type-and-count", "Both `accelerator_type` and `accelerator_count` should be "
                    "specified or none. (set acceleratorType and acceleratorCount together)",
                    **_at(native, (pool.role, "accelerator", present)))


def _missing_builtin(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    # Accelerator-optimized types (A2/A3/A4/G2/G4) must state their built-in GPUs in
    # machineSpec.acceleratorType/acceleratorCount, or Vertex AI rejects the job.
    builtin = catalog.builtin_accelerator(pool.machine_type or "")
    if builtin is not None and catalog.offered(pool.machine_type or ""):
        acc, count = builtin
        yield error("missing-accelerator", f'machine type "{pool.machine_type}" comes with {count} x {acc} and '
                    f"Vertex AI requires them to be stated: add accelerator: {{type: {acc}, count: {count}}}",
                    **_at(native, _key_path(native, pool.role, "machine_type")))


def _accelerator(pool: Pool, acc: Accelerator, native: NativeSpec) -> Iterator[Diagnostic]:
    acc_type, count = acc.type, acc.count
    base = _key_path(native, pool.role, "accelerator")
    if acc_type is None:
        return  # missing or wrong-typed: the schema reports it
    if acc_type not in catalog.accelerator_types():
        yield _unknown_accelerator(acc_type, native, base + ("type",))
        return
    if not catalog.training_accelerator(acc_type):
        yield _not_offered_accelerator(pool.machine_type, acc_type, native, base)
        return
    if count is None or count < 1 or pool.machine_type is None:
        return
    yield from _fit(pool.machine_type, acc_type, count, native, base)


def _not_offered_accelerator(machine_type: str | None, acc_type: str, native: NativeSpec,
                             base: KeyPath) -> Diagnostic:
    # K80 (and TPU_V4_POD) are not on Vertex AI training's accelerator list
    # (TRAINING_MACHINES_DOC#gpus, catalog/training_accelerators.csv). Vertex's own
    # words: 400 Accelerator "NVIDIA_TESLA_K80" is not supported for machine type "n1-standard-4".
    head = (f'Accelerator "{acc_type}" is not supported for machine type "{machine_type}"' if machine_type
            else f'Accelerator "{acc_type}" is not supported')
    eol = f" and has reached end of support ({K80_DOC})" if catalog.deprecated_accelerator(acc_type) else ""
    return error("accelerator-not-supported",
                 f"{head}: Vertex AI training does not offer {acc_type}{eol}; use NVIDIA_TESLA_T4 or "
                 "NVIDIA_L4 (N1 or G2 machine types)", **_at(native, base + ("type",)))


def _unknown_accelerator(acc_type: str, native: NativeSpec, path: KeyPath) -> Diagnostic:
    # Suggest only what training offers: "did you mean K80?" would lead to the next error.
    known = [a for a in catalog.accelerator_types() if catalog.training_accelerator(a)]
    close = difflib.get_close_matches(acc_type.upper(), known, n=3, cutoff=0.5)
    hint = f"did you mean {_quote_list(close)}?" if close else f"accepted: {', '.join(known)}"
    return error("unknown-accelerator", f'accelerator type "{acc_type}" is not a Vertex AI AcceleratorType; '
                 f"{hint}", **_at(native, path))


def _fit(machine_type: str, acc_type: str, count: int, native: NativeSpec,
         base: KeyPath) -> Iterator[Diagnostic]:
    """Is ``count`` × ``acc_type`` offered on ``machine_type``? (untabulated machines pass)."""
    allowed = catalog.allowed_accelerators(machine_type)
    if allowed is None or count in allowed.get(acc_type, ()):
        return
    n1_counts = catalog.n1_gpu_counts(acc_type) if machine_type.startswith("n1-") else ()
    if count in n1_counts:
        yield _n1_too_large(machine_type, acc_type, count, allowed, native, base)
    elif acc_type in allowed:
        yield _bad_count(machine_type, acc_type, count, allowed[acc_type], native, base)
    else:
        yield _not_supported(machine_type, acc_type, allowed, native, base)


def _not_supported(machine_type: str, acc_type: str, allowed: Mapping[str, tuple[int, ...]],
                   native: NativeSpec, base: KeyPath) -> Diagnostic:
    if allowed:
        takes = "it takes " + ", ".join(f"{a} x {list(c)}" for a, c in allowed.items())
    else:
        takes = "it takes no accelerators (GPUs go on N1, A2, A3, A4, A4X, G2 or G4 machine types)"
    return error("accelerator-not-supported",
                 f'Accelerator "{acc_type}" is not supported for machine type "{machine_type}"; {takes}',
                 **_at(native, base + ("type",)))


def _bad_count(machine_type: str, acc_type: str, count: int, counts: tuple[int, ...],
               native: NativeSpec, base: KeyPath) -> Diagnostic:
    # Worded as Vertex AI's own INVALID_ARGUMENT message, so it is searchable.
    return error("accelerator-count",
                 f'The accelerator count "{count}" is not allowed. The allowed numbers of accelerator '
                 f'"{acc_type}" to use with machine type "{machine_type}" are: [{", ".join(map(str, counts))}].',
                 **_at(native, base + ("count",)))


def _n1_too_large(machine_type: str, acc_type: str, count: int, allowed: Mapping[str, tuple[int, ...]],
                  native: NativeSpec, base: KeyPath) -> Diagnostic:
    # N1 machines with GPUs are capped in vCPUs and memory per GPU count; Vertex
    # AI's caps are stricter than Compute Engine's (4 x P100: 64 vCPUs, 208 GB):
    # TRAINING_MACHINES_DOC#gpu-compatibility-table, catalog/n1_gpu_limits.csv.
    m = catalog.machine(machine_type)
    limit = catalog.n1_gpu_limits(acc_type, count)
    if m is None or limit is None:  # unreachable: _fit checked both; keep the message honest anyway
        return _not_supported(machine_type, acc_type, allowed, native, base)
    fits = allowed.get(acc_type, ())
    instead = f"use count {' or '.join(map(str, fits))}" if fits else f"no {acc_type} count fits this machine"
    return error("n1-gpu-limits",
                 f'machine type "{machine_type}" ({m.vcpu} vCPUs, {m.memory_gb:g} GB) is too large for '
                 f"{count} x {acc_type}: Vertex AI allows at most {limit[0]} vCPUs and {limit[1]:g} GB with "
                 f"{_plural(count, 'GPU')} ({TRAINING_MACHINES_DOC}#gpu-compatibility-table); {instead}, "
                 "or a smaller N1 machine type",
                 **_at(native, base + ("count",)))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


# --- Reduction Server ----------------------------------------------------------------

def _has_gpus(pool: Pool) -> bool:
    acc = pool.accelerator
    if acc is not None:
        return bool(acc.type and acc.type.startswith("NVIDIA_") and (acc.count or 0) > 0)
    return catalog.builtin_accelerator(pool.machine_type or "") is not None


def reduction_server_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Reduction Server needs GPU training pools, takes no GPUs, excludes parameter servers."""
    # DISTRIBUTED_DOC#reduction-server: pool 2 runs the reducers; training
    # pools must use GPUs and NCCL all-reduce.
    rs = job.pool(RS)
    if rs is None:
        return
    if job.pool("parameter_servers") is not None:
        yield error("rs-with-parameter-servers", "reduction_server and parameter_servers both claim "
                    "workerPoolSpecs[2]: keep one (Reduction Server for GPU all-reduce, parameter servers "
                    "for TF ParameterServerStrategy)", **_at(native, ("parameter_servers",)))
    if rs.accelerator is not None:
        yield error("rs-accelerator", f"reduction_server nodes take no accelerators (got "
                    f"{rs.accelerator.type}); remove reduction_server.accelerator "
                    "(n1-highcpu-16 is the recommended machine)", **_at(native, (RS, "accelerator")))
    cpu_only = [p.role for p in job.ordered_pools() if p.role in TRAINING_ROLES and not _has_gpus(p)]
    if cpu_only:
        yield error("rs-without-gpus", f"Reduction Server works only with GPU training pools (NCCL "
                    f"all-reduce), but {' and '.join(cpu_only)} {'has' if len(cpu_only) == 1 else 'have'} no NVIDIA "
                    "GPUs; add an accelerator "
                    f"to {' and '.join(cpu_only)} or remove reduction_server ({DISTRIBUTED_DOC}#reduction-server)",
                    **_at(native, (RS,)))


# --- what runs in the containers -------------------------------------------------------

def code_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Every pool but Reduction Server runs exactly one of ``image`` or ``python_package``."""
    for pool in job.ordered_pools():
        if pool.role == RS:
            continue  # the Reduction Server image is chosen by vxtrain
        if pool.image is None and pool.python_package is None:
            if not _present(native, pool.role, "image", "python_package"):
                hint = _CODE_HINTS[native.format].replace("INDEX", str(pool.index))
                yield error("missing-image", f"{pool.role} runs nothing: {hint}", **_at(native, (pool.role,)))
        elif pool.image is not None and pool.python_package is not None:
            yield error("image-and-package", f"{pool.role} gives both image ({pool.image}) and python_package; "
                        "Vertex AI takes one (containerSpec or pythonPackageSpec): remove one",
                        **_at(native, _key_path(native, pool.role, "python_package")))


def _present(native: NativeSpec, role: str, *keys: str) -> bool:
    """Any of ``keys`` written (even with a wrong type, which the schema reports)."""
    return any(_key_path(native, role, k) != (role,) for k in keys)


def env_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Env var names are C identifiers, ≤ 100 per container; secret-looking names warn."""
    seen: set[KeyPath] = set()
    for pool in job.ordered_pools():
        if len(pool.env) > MAX_ENV_VARS:
            yield error("too-many-env", f"{pool.role} has {len(pool.env)} env vars; Vertex AI allows at most "
                        f"{MAX_ENV_VARS} per container", **_at(native, _key_path(native, pool.role, "env")))
        for name in pool.env:
            path = _env_path(native, pool.role, name)
            if path not in seen:
                seen.add(path)
                yield from _env_name(name, native, path)


def _env_path(native: NativeSpec, role: str, name: str) -> KeyPath:
    env = _raw_pool(native, role).get("env")
    if isinstance(env, Mapping) and name in env:
        return (role, "env", name)
    return ("defaults", "env", name)


def _env_name(name: str, native: NativeSpec, path: KeyPath) -> Iterator[Diagnostic]:
    if not _C_IDENTIFIER.match(name):
        yield error("bad-env-name", f'env var name "{name}" is not a C identifier: use letters, digits and '
                    "'_', not starting with a digit (e.g. MY_VAR)", **_at(native, path))
    elif looks_secret(name):
        yield warning("secret-env", f'env var "{name}" looks like a secret: env values are visible in the '
                      "job spec to anyone who can view the job; use Secret Manager instead",
                      **_at(native, path))


def looks_secret(name: str) -> bool:
    """True for names like DB_PASSWORD, HF_TOKEN, OPENAI_API_KEY (not MAX_TOKENS, TOKEN_FILE)."""
    words = name.upper().split("_")
    if words[-1] in _REFERENCE_WORDS or name.upper() in _NOT_SECRETS:
        return False
    if any(w in _SECRET_WORDS for w in words):
        return True
    return any(pair in _SECRET_PAIRS for pair in zip(words, words[1:]))


# --- job metadata ----------------------------------------------------------------------

def label_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Label count, keys and values per the Google Cloud label requirements."""
    if len(job.labels) > MAX_USER_LABELS:
        yield error("too-many-labels", f"{len(job.labels)} labels; a job may have {MAX_LABELS} and vxtrain "
                    f"adds one on submit, so give at most {MAX_USER_LABELS}", **_at(native, ("labels",)))
    for key, value in job.labels.items():
        path: KeyPath = ("labels", key) if key else ("labels",)
        problem = _label_problem(key, is_key=True)
        if problem:
            yield error("bad-label-key", f'label key "{key}" {problem} ({LABELS_DOC})', **_at(native, path))
        problem = _label_problem(value, is_key=False)
        if problem:
            yield error("bad-label-value", f'label value "{value}" of "{key}" {problem} ({LABELS_DOC})',
                        **_at(native, path))


def _label_problem(text: str, *, is_key: bool) -> str | None:
    """What is wrong with a label key or value, or None."""
    if is_key and not text:
        return "is empty; keys need 1 to 63 characters"
    if len(text) > MAX_LABEL_CHARS:
        return f"has {len(text)} characters; at most {MAX_LABEL_CHARS} are allowed"
    # The common all-ASCII case in one regex; others (international letters are
    # allowed) character by character.
    bad = [] if _ASCII_LABEL.fullmatch(text) else sorted({c for c in text if not _label_char(c)})
    if bad:
        return (f"contains {_quote_list(bad)}; only lowercase letters, digits, '-' and '_' are allowed")
    if is_key and not (text[0].isalpha() and text[0] == text[0].lower()):
        return "must start with a lowercase letter"
    return None


_ASCII_LABEL = re.compile(r"[a-z0-9_-]*")


def _label_char(c: str) -> bool:
    return c in "-_" or (c.isalnum() and c == c.lower())


def scheduling_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """A zero timeout, and max_wait without FLEX_START (Vertex AI ignores it then)."""
    sched = job.scheduling
    if sched is None:
        return
    if sched.timeout == 0:
        yield error("bad-timeout", "scheduling.timeout is 0: give a positive duration such as 90s, 30m, "
                    "12h or 7d (the default is 7d)", **_at(native, ("scheduling", "timeout")))
    # Scheduling.max_wait_duration applies "if the scheduling strategy is set to
    # DWS_FLEX_START" (aiplatform_v1 custom_job.proto): elsewhere it is ignored.
    if sched.max_wait is not None and (sched.strategy or "STANDARD") != FLEX_START:
        yield warning("max-wait-ignored", f"scheduling.max_wait only applies with strategy FLEX_START "
                      f"(strategy is {sched.strategy or 'STANDARD (default)'}); set strategy: FLEX_START "
                      "or remove max_wait", **_at(native, ("scheduling", "max_wait")))


def tensorboard_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """A TensorBoard link needs a service account: Vertex AI rejects the job otherwise."""
    if job.tensorboard and not job.service_account:
        yield error("tensorboard-needs-service-account", f"tensorboard is set ({job.tensorboard}) but "
                    "service_account is not: Vertex AI requires a service account with TensorBoard access "
                    f"to upload logs ({TENSORBOARD_DOC}); add service_account: NAME@PROJECT.iam.gserviceaccount.com",
                    **_at(native, ("tensorboard",)))


RULES: tuple[Rule, ...] = (
    chief_rules,
    machine_rules,
    accelerator_rules,
    reduction_server_rules,
    code_rules,
    env_rules,
    label_rules,
    scheduling_rules,
    tensorboard_rules,
    evaluator_rules,
    study_rules.check,  # the study: block (vxtrain/validation/study_rules.py)
    package_rules.check,  # python_package source/package_uris, staging_bucket
    region_rules.check,  # region and accelerators per region (vxtrain/validation/region_rules.py)
    extra_rules.check,  # extra: field by field, value by value (vxtrain/validation/extra.py)
)
