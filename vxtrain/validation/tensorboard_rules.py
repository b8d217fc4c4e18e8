"""A TensorBoard link needs a service account: Vertex AI rejects the job otherwise (TENSORBOARD_DOC)."""
from __future__ import annotations

from collections.abc import Iterator

from vxtrain.diagnostics import Diagnostic, error
from vxtrain.loading.document import NativeSpec
from vxtrain.model import Job

TENSORBOARD_DOC = "https://cloud.google.com/vertex-ai/docs/experiments/tensorboard-training"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """A TensorBoard link needs a service account: Vertex AI rejects the job otherwise."""
    if job.tensorboard and not job.service_account:
        yield error("tensorboard-needs-service-account", f"tensorboard is set ({job.tensorboard}) but "
                    "service_account is not: Vertex AI requires a service account with TensorBoard access "
                    f"to upload logs ({TENSORBOARD_DOC}); add service_account: NAME@PROJECT.iam.gserviceaccount.com",
                    **native.where(("tensorboard",)))
