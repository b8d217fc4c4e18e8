"""Machine types: missing, a typo of an offered type, or not offered for Vertex AI training."""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Job, Pool
from vxtrain.validation._common import TRAINING_MACHINES_DOC, key_path, or_list, raw_pool


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Machine types: missing, a typo of an offered type, or not offered for training (errors)."""
    for pool in job.ordered_pools():
        yield from _machine(pool, native)


def _machine(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    path = key_path(native, pool.role, "machine_type")
    mt = pool.machine_type
    if mt is None:
        # Absent (a wrong-typed value is the schema's to report): not written, or not in a
        # pool only `extra:` writes (formats.gcloud.as_sent: nothing of defaults reaches it).
        extra_only = (pool.role,) in native.sent and raw_pool(native, pool.role).get("machine_type") is None
        if path == (pool.role,) or extra_only:
            yield error("missing-machine-type", f"{pool.role} has no machine_type: Vertex AI needs "
                        "machineSpec.machineType, e.g. n1-standard-8", **native.where(path))
        return
    if catalog.offered(mt):
        return
    near = catalog.near_miss(mt)
    if near is not None:
        yield error("unknown-machine-type", f'machine type "{mt}" does not exist; did you mean "{near}"?',
                    **native.where(path))
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
    hint = f"; did you mean {or_list(nearest)}?" if nearest else ""
    return error("machine-not-offered", f"{what}{hint} (offered types: {TRAINING_MACHINES_DOC}, "
                 f"list as of {catalog.training_list_as_of()})", **native.where(path))
