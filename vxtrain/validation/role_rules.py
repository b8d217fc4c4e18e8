"""The roles' own rules: exactly one primary replica (pool 0), and a warning for many evaluators."""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.formats.wording import wording
from vxtrain.loading.document import NativeSpec
from vxtrain.model import Job
from vxtrain.validation._common import raw_pool


def chief_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Pool 0 must exist with exactly one replica; never silently fixed."""
    # CustomJobSpec.worker_pool_specs: the first pool is the primary replica and
    # its replicaCount must be 1: _common.DISTRIBUTED_DOC#cluster-spec-format
    if job.pool("chief") is None:
        yield error("missing-chief", "no 'chief' pool: Vertex AI requires workerPoolSpecs[0], the "
                    f"primary replica; {wording(native.format).chief_hint}", **native.where(("chief",)))
        return
    replicas = raw_pool(native, "chief").get("replicas")
    if isinstance(replicas, int) and not isinstance(replicas, bool) and replicas != 1:
        chief = job.pool("chief")
        # A TPU job has no other pool: its hosts come from the slice (tpu_rules).
        fix = ("a TPU slice is one replica: ask for more chips or hosts with a larger tpu_topology"
               if chief is not None and catalog.is_tpu(chief.machine_type)
               else "put the other replicas in 'workers' (pool 1)")
        yield error("chief-replicas", f"the chief pool has {replicas} replicas: Vertex AI requires exactly 1 "
                    f"replica in workerPoolSpecs[0]; {fix}", **native.where(("chief", "replicas")))


def evaluator_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """More than one evaluator is allowed but rarely meant (TF runs one evaluator task)."""
    pool = job.pool("evaluators")
    if pool is not None and pool.replicas is not None and pool.replicas > 1:
        yield warning("multiple-evaluators", f"evaluators.replicas is {pool.replicas}: TensorFlow uses a "
                      "single evaluator; extra replicas evaluate the same checkpoints (1 is usual)",
                      **native.where(("evaluators", "replicas")))
