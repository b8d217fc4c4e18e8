"""GPUDirect-RDMA jobs and GPU partitions (MIG): what the machine's GPU network and the
accelerator's partitions need.

- ``gpudirect-nccl-env`` (warning): a job with more than one node on GPUDirect-RDMA machines
  (catalog ``gpu_networks.csv``: a3-ultragpu-8g, a4-highgpu-8g, a4x-highgpu-4g) whose pool's
  training command does not begin by sourcing the NCCL settings. configure-compute (RDMA_DOC):
  "When using RDMA, add `source /usr/local/gib/scripts/set_nccl_env.sh` to the beginning of the
  training command"; without it NCCL falls back to TCP and a multi-node job runs at a fraction
  of its bandwidth (skypilot#3592: 151 of 1,000 Gbps). The training command is the container's
  command and args as sent (``extra``'s containerSpec.command/args replace the pool's whole,
  as compile merges them). A ``python_package`` pool has no command of its own (the executor
  image runs ``python -m MODULE``), so the line cannot go first: the warning says to run the
  executor image as a container with the line (docs/decisions.md).
- ``gpu-partition-*``: ``accelerator.partition_size`` (machineSpec.gpuPartitionSize) takes
  ``count: 1`` ("If set, the accelerator_count should be set to 1": machine_resources.proto)
  and an NVIDIA GPU that has MIG, in one of that GPU's sizes: "The partition size must be a
  value supported by the requested accelerator. Refer to Nvidia GPU Partitioning for the
  available partition sizes" (the same proto). NVIDIA's MIG user guide says which GPUs have
  MIG ("starting with the NVIDIA Ampere generation": A100 40/80 GB, H100, H200, B200, GB200,
  RTX PRO 6000; not T4, V100, P100, P4, K80 nor L4) and each one's profiles (catalog
  ``gpu_partitions.csv``, read 2026-11-29): a size the GPU does not have (``8g.40gb``,
  ``1g.5gb`` on an A100 80GB) or any size on a GPU without MIG is an error, as the service
  refuses it; a GPU the table has no row for is a warning (its sizes are not known here).
"""
from __future__ import annotations

import difflib
import os
import re
import shlex
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from vxtrain.catalog import networking
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Job, Pool, written_at

RDMA_DOC = "https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/configure-compute"
#: MachineSpec.gpuPartitionSize's doc (google/cloud/aiplatform/v1/machine_resources.proto).
PARTITION_DOC = "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/MachineSpec"
#: Pools whose nodes join the NCCL collectives (evaluators run apart from the training cluster).
_COLLECTIVE_ROLES = ("chief", "workers", "parameter_servers")
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
#: ``source FILE`` or ``. FILE`` as the script's first command (quoted or not). A pattern, not a
#: compiled one: ``re`` compiles and caches it on first use, off validate's start.
_SOURCES = r"\s*(?:source|\.)\s+(['\"]?)" + re.escape(networking.NCCL_ENV_SCRIPT) + r"\1(?:\s|;|&|$)"
_EXTRA_POOLS: KeyPath = ("extra", "jobSpec", "workerPoolSpecs")


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """The NCCL settings of multi-node GPUDirect-RDMA jobs, and every pool's GPU partition."""
    yield from _nccl_env(job, native)
    for pool in job.ordered_pools():
        yield from _partition(pool, native)


# --- GPUDirect-RDMA: the NCCL settings ------------------------------------------------------

def _nccl_env(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    rdma = [p for p in job.ordered_pools() if p.role in _COLLECTIVE_ROLES and p.machine_type
            and networking.gpu_network(p.machine_type).network == networking.GPUDIRECT_RDMA]
    nodes = sum(p.replicas or 0 for p in rdma)
    if nodes <= 1:
        return
    # A command in defaults: one warning at its line, naming the pools that run it.
    lacking: dict[KeyPath, list[Pool]] = {}
    packages: dict[KeyPath, list[Pool]] = {}
    commands: dict[KeyPath, list[str]] = {}
    for pool in rdma:
        if pool.python_package is not None and pool.image is None and pool.build is None:
            packages.setdefault(written_at(native.data, pool.role, "python_package") or (pool.role,), []).append(pool)
            continue
        argv, path = _training_command(job, native, pool)
        if not begins_with_nccl_env(argv):
            lacking.setdefault(path, []).append(pool)
            commands[path] = argv
    for path, pools in lacking.items():
        yield warning("gpudirect-nccl-env", _message(pools, nodes, commands[path]), **native.where(path))
    for path, pools in packages.items():
        yield _package_warning(pools, nodes, native.where(path))


def begins_with_nccl_env(argv: Sequence[str]) -> bool:
    """Whether the command ``argv`` (command + args) is a shell whose script begins by sourcing
    the NCCL settings: ``bash -c "source /usr/local/gib/scripts/set_nccl_env.sh && ..."``."""
    script = shell_script(argv)
    return script is not None and re.match(_SOURCES, script) is not None


def shell_script(argv: Sequence[str]) -> str | None:
    """The script of ``sh``/``bash ... -c SCRIPT`` (None when ``argv`` is not a shell running one)."""
    if not argv or os.path.basename(argv[0]) not in _SHELLS:
        return None
    rest = list(argv[1:])
    takes_script = False
    while rest and rest[0].startswith("-") and rest[0] != "--":
        flag = rest.pop(0)
        takes_script = takes_script or (not flag.startswith("--") and "c" in flag[1:])
    if rest and rest[0] == "--":
        rest.pop(0)
    return rest[0] if takes_script and rest else None


def _training_command(job: Job, native: NativeSpec, pool: Pool) -> tuple[list[str], KeyPath]:
    """The pool's command + args as sent, and where the command (else the args, else the pool) was written."""
    spec = _extra_container(job, pool.index)
    command, args = list(pool.command), list(pool.args)
    where = written_at(native.data, pool.role, "command") or written_at(native.data, pool.role, "args")
    for key in ("args", "command"):  # extra replaces a list whole; its command is the place to fix
        value = spec.get(key)
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            if key == "command":
                command = list(value)
            else:
                args = list(value)
            where = (*_EXTRA_POOLS, pool.index, "containerSpec", key)
    return command + args, where or (pool.role,)


def _extra_container(job: Job, index: int) -> Mapping[str, Any]:
    """``extra.jobSpec.workerPoolSpecs[index].containerSpec`` ({} when not written)."""
    spec = job.extra.get("jobSpec")
    pools = spec.get("workerPoolSpecs") if isinstance(spec, Mapping) else None
    if not isinstance(pools, list) or index >= len(pools) or not isinstance(pools[index], Mapping):
        return {}
    container = pools[index].get("containerSpec")
    return container if isinstance(container, Mapping) else {}


def _message(pools: Sequence[Pool], nodes: int, argv: Sequence[str]) -> str:
    return (f"{_head(pools, nodes)}: the training command does not begin by sourcing the NCCL settings, so NCCL "
            f"falls back to TCP at a fraction of the bandwidth (configure-compute: \"When using RDMA, add "
            f"`{networking.NCCL_ENV_LINE}` to the beginning of the training command\", {RDMA_DOC}); "
            f"{fixed_command(argv)}")


def _head(pools: Sequence[Pool], nodes: int) -> str:
    names = " and ".join(f"{p.role} ({p.machine_type})" for p in pools)
    verb = "runs" if len(pools) == 1 else "run"
    return f"{names} {verb} on GPUDirect-RDMA machines, {nodes} nodes in all"


def fixed_command(argv: Sequence[str]) -> str:
    """The exact command to write: ``argv`` with the NCCL line first, run by bash."""
    script = shell_script(argv)
    if script is not None:
        body = f"{networking.NCCL_ENV_LINE} && {script}"
    elif argv:
        body = f"{networking.NCCL_ENV_LINE} && exec {shlex.join(argv)}"
    else:
        return (f"give the command, beginning with the line: command: [bash, -c], args: "
                f"[\"{networking.NCCL_ENV_LINE} && exec YOUR TRAINING COMMAND\"]")
    return f"write it as command: [bash, -c, {_yaml_quote(body)}] (and no args)"


def _yaml_quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _package_warning(pools: Sequence[Pool], nodes: int, where: dict[str, Any]) -> Diagnostic:
    pkg = pools[0].python_package
    module = pkg.module if pkg is not None and pkg.module else "MODULE"
    return warning("gpudirect-nccl-env", f"{_head(pools, nodes)}: a python_package pool runs `python -m {module}` "
                   f"in the executor image, so no command can begin with `{networking.NCCL_ENV_LINE}` and NCCL "
                   f"falls back to TCP ({RDMA_DOC}); run the code as a container instead: image: (or build:) with "
                   f"command: [bash, -c, \"{networking.NCCL_ENV_LINE} && exec python -m {module}\"]", **where)


# --- GPU partitions (MIG) ----------------------------------------------------------------------

def _partition(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    acc = pool.accelerator
    if acc is None or acc.partition_size is None:
        return
    path = written_at(native.data, pool.role, "accelerator", "partition_size") or (pool.role, "accelerator")
    where = native.where(path)
    if acc.type is None or not acc.type.startswith("NVIDIA_"):
        yield error("gpu-partition-needs-gpu", f"accelerator.partition_size {acc.partition_size!r} partitions an "
                    f"NVIDIA GPU (Multi-Instance GPU), but the {pool.role} pool's accelerator is {acc.type!r}; "
                    "give an NVIDIA GPU type or leave partition_size out", **where)
        return
    if acc.count != 1:
        count_at = written_at(native.data, pool.role, "accelerator", "count") or path
        yield error("gpu-partition-count", f"accelerator.partition_size {acc.partition_size!r} needs count: 1 "
                    f"(got {acc.count}): \"If set, the accelerator_count should be set to 1\" "
                    f"(MachineSpec.gpuPartitionSize, {PARTITION_DOC}); set count: 1", **native.where(count_at))
    known = networking.gpu_partitions(acc.type)
    if known is None:
        yield warning("gpu-partition-unchecked", f"accelerator.partition_size {acc.partition_size!r}: vxtrain's MIG "
                      f"table has no row for {acc.type}, so the size was not checked; Vertex AI refuses a size the "
                      f"GPU does not support (MachineSpec.gpuPartitionSize, {PARTITION_DOC})", **where)
    elif not known.sizes:
        yield error("gpu-partition-unsupported", f"accelerator.partition_size {acc.partition_size!r}: {acc.type} has no "
                    f"Multi-Instance GPU partitions (MIG starts with the Ampere generation: A100, H100, H200, B200, "
                    f"GB200, RTX PRO 6000; {known.source}); leave partition_size out, or use a GPU with MIG such as "
                    "NVIDIA_TESLA_A100 (1g.5gb ... 7g.40gb)", **where)
    elif acc.partition_size not in known.sizes:
        yield error("gpu-partition-size", f"accelerator.partition_size {acc.partition_size!r} is not a MIG partition "
                    f"of {acc.type}: its sizes are {', '.join(known.sizes)} ({known.source}); \"The partition size "
                    f"must be a value supported by the requested accelerator\" (MachineSpec.gpuPartitionSize, "
                    f"{PARTITION_DOC}){_closest(acc.partition_size, known.sizes)}", **where)


def _closest(size: str, sizes: Sequence[str]) -> str:
    """``; did you mean "1g.10gb"?`` for a near miss of one of ``sizes`` (empty otherwise)."""
    close = difflib.get_close_matches(size.strip().lower(), list(sizes), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""
