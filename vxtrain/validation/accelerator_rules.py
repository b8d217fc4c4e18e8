"""Accelerators: a known type, offered for training, allowed on the machine in an allowed
count; accelerator-optimized machines (A2/A3/A4/G2/G4) state their built-in GPUs.

The facts are the catalog's (TRAINING_MACHINES_DOC#gpus, training_accelerators.csv,
n1_gpu_limits.csv); messages are worded as Vertex AI's own where it has one.
"""
from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import replace

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, plural
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Accelerator, Job, Pool
from vxtrain.validation._common import RS, TRAINING_MACHINES_DOC, key_path, quote_list, raw_pool

K80_DOC = "https://cloud.google.com/compute/docs/eol/k80-eol"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Accelerator type known, offered, allowed on the machine, in an allowed count; A2/A3/G2 need theirs."""
    for pool in job.ordered_pools():
        if pool.role == RS:
            continue  # reduction_server_rules.py reports any accelerator there
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
    # `extra:` is sent as written too: a type or count it sets with no other half
    # anywhere is missing on the wire (the spec's own type always compiles with a count).
    if native.format != "gcloud" and not native.sent:
        return
    raw = raw_pool(native, pool.role).get("accelerator")
    if isinstance(raw, Mapping) and ("type" in raw) != ("count" in raw):
        present = "type" if "type" in raw else "count"
        if native.format != "gcloud" and (pool.role, "accelerator", present) not in native.sent:
            return
        yield error("accelerator-type-and-count", "Both `accelerator_type` and `accelerator_count` should be "
                    "specified or none. (set acceleratorType and acceleratorCount together)",
                    **native.where((pool.role, "accelerator", present)))


def _missing_builtin(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    # Accelerator-optimized types (A2/A3/A4/G2/G4) must state their built-in GPUs in
    # machineSpec.acceleratorType/acceleratorCount, or Vertex AI rejects the job.
    builtin = catalog.builtin_accelerator(pool.machine_type or "")
    if builtin is not None and catalog.offered(pool.machine_type or ""):
        acc, count = builtin
        yield error("missing-accelerator", f'machine type "{pool.machine_type}" comes with {count} x {acc} and '
                    f"Vertex AI requires them to be stated: add accelerator: {{type: {acc}, count: {count}}}",
                    **native.where(key_path(native, pool.role, "machine_type")))


def _accelerator(pool: Pool, acc: Accelerator, native: NativeSpec) -> Iterator[Diagnostic]:
    acc_type, count = acc.type, acc.count
    base = key_path(native, pool.role, "accelerator")
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
    found = _fit(pool.machine_type, acc_type, count, native, base)
    machine_at = (pool.role, "machine_type")
    if machine_at in native.sent and not any((pool.role, "accelerator", part) in native.sent
                                             for part in ("type", "count")):
        # `extra:` moved the pool to this machine and the accelerators are the spec's own:
        # the misfit is at the line that changed the machine.
        found = (replace(d, **native.where(machine_at)) for d in found)
    yield from found


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
                 "NVIDIA_L4 (N1 or G2 machine types)", **native.where(base + ("type",)))


def _unknown_accelerator(acc_type: str, native: NativeSpec, path: KeyPath) -> Diagnostic:
    # Suggest only what training offers: "did you mean K80?" would lead to the next error.
    known = [a for a in catalog.accelerator_types() if catalog.training_accelerator(a)]
    close = difflib.get_close_matches(acc_type.upper(), known, n=3, cutoff=0.5)
    hint = f"did you mean {quote_list(close)}?" if close else f"accepted: {', '.join(known)}"
    return error("unknown-accelerator", f'accelerator type "{acc_type}" is not a Vertex AI AcceleratorType; '
                 f"{hint}", **native.where(path))


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
    tpu_on = [m.machine_type for m in catalog.tpu_machines() if acc_type in m.accelerator_types]
    if tpu_on:  # a TPU type on a GPU or CPU machine (tpu_rules.py checks the TPU machines)
        takes += f"; {acc_type} is a TPU: it goes on machine type {' or '.join(tpu_on)} ({TRAINING_MACHINES_DOC}#tpu)"
    return error("accelerator-not-supported",
                 f'Accelerator "{acc_type}" is not supported for machine type "{machine_type}"; {takes}',
                 **native.where(base + ("type",)))


def _bad_count(machine_type: str, acc_type: str, count: int, counts: tuple[int, ...],
               native: NativeSpec, base: KeyPath) -> Diagnostic:
    # Worded as Vertex AI's own INVALID_ARGUMENT message, so it is searchable.
    return error("accelerator-count",
                 f'The accelerator count "{count}" is not allowed. The allowed numbers of accelerator '
                 f'"{acc_type}" to use with machine type "{machine_type}" are: [{", ".join(map(str, counts))}].',
                 **native.where(base + ("count",)))


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
                 f"{plural(count, 'GPU')} ({TRAINING_MACHINES_DOC}#gpu-compatibility-table); {instead}, "
                 "or a smaller N1 machine type",
                 **native.where(base + ("count",)))
