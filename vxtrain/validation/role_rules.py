"""The roles' own rules: exactly one primary replica (pool 0), a warning for many evaluators, and
a replica count for every pool only ``extra:`` writes.

A WorkerPoolSpec's ``replicaCount`` is an int64 the proto calls "Optional. The number of worker
replicas to use for this worker pool." and gives no default (custom_job.proto): proto3 sends an
absent one as 0. A native pool without ``replicas`` compiles with ``replicaCount: 1`` and is
planned and priced as 1, but a pool only ``extra:`` writes is sent as written: without a
replicaCount it would be priced as one replica and sent as none. It is refused
(``extra-pool-replicas``), not filled in, so the job sent stays the one written
(docs/decisions.md, issue 34).
"""
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


REPLICAS_DOC = "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec#WorkerPoolSpec"


def extra_pool_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """A pool only ``extra:`` writes (formats.gcloud.as_sent) must give its replicaCount."""
    for pool in job.ordered_pools():
        if (pool.role,) not in native.sent or raw_pool(native, pool.role).get("replicas") is not None:
            continue
        yield error("extra-pool-replicas", f"workerPoolSpecs[{pool.index}] in extra writes the {pool.role} pool, "
                    "which the spec does not, and gives it no replicaCount: it is sent as written, so the API "
                    "would read 0 replicas (replicaCount has no default) while vxtrain plans and prices 1; "
                    f"add replicaCount: {1 if pool.index == 0 else 'N'} to it, or write the pool as "
                    f"`{pool.role}:` ({REPLICAS_DOC})", **native.where((pool.role,)))


def evaluator_rules(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """More than one evaluator is allowed but rarely meant (TF runs one evaluator task)."""
    pool = job.pool("evaluators")
    if pool is not None and pool.replicas is not None and pool.replicas > 1:
        yield warning("multiple-evaluators", f"evaluators.replicas is {pool.replicas}: TensorFlow uses a "
                      "single evaluator; extra replicas evaluate the same checkpoints (1 is usual)",
                      **native.where(("evaluators", "replicas")))
