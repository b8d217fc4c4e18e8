"""Reduction Server: GPU training pools, no accelerators of its own, no parameter servers.

DISTRIBUTED_DOC#reduction-server: pool 2 runs the reducers; the training pools
must use GPUs and NCCL all-reduce.
"""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading.document import NativeSpec
from vxtrain.model import Job, Pool
from vxtrain.slots import TRAINING_ROLES
from vxtrain.validation._common import DISTRIBUTED_DOC, RS


def _has_gpus(pool: Pool) -> bool:
    acc = pool.accelerator
    if acc is not None:
        return bool(acc.type and acc.type.startswith("NVIDIA_") and (acc.count or 0) > 0)
    return catalog.builtin_accelerator(pool.machine_type or "") is not None


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Reduction Server needs GPU training pools, takes no GPUs, excludes parameter servers."""
    rs = job.pool(RS)
    if rs is None:
        return
    if job.pool("parameter_servers") is not None:
        yield error("rs-with-parameter-servers", "reduction_server and parameter_servers both claim "
                    "workerPoolSpecs[2]: keep one (Reduction Server for GPU all-reduce, parameter servers "
                    "for TF ParameterServerStrategy)", **native.where(("parameter_servers",)))
    if rs.accelerator is not None:
        yield error("rs-accelerator", f"reduction_server nodes take no accelerators (got "
                    f"{rs.accelerator.type}); remove reduction_server.accelerator "
                    "(n1-highcpu-16 is the recommended machine)", **native.where((RS, "accelerator")))
    cpu_only = [p.role for p in job.ordered_pools() if p.role in TRAINING_ROLES and not _has_gpus(p)]
    if cpu_only:
        yield error("rs-without-gpus", f"Reduction Server works only with GPU training pools (NCCL "
                    f"all-reduce), but {' and '.join(cpu_only)} {'has' if len(cpu_only) == 1 else 'have'} no NVIDIA "
                    "GPUs; add an accelerator "
                    f"to {' and '.join(cpu_only)} or remove reduction_server ({DISTRIBUTED_DOC}#reduction-server)",
                    **native.where((RS,)))
