"""vxtrain: readable YAML job specs compiled into Vertex AI CustomJobs.

The Python API mirrors the CLI. Importing this package is cheap: nothing
here imports google.cloud.aiplatform (backends do, when they talk to an API).
"""
from __future__ import annotations

from vxtrain.api import Options, Result, check_file, load, load_job, logs, plan, quota, submit, validate
from vxtrain.api import compile_job as compile  # noqa: A001 - the API's verb
from vxtrain.diagnostics import Diagnostic
from vxtrain.errors import (
    ApiError,
    GpuShortageError,
    JobFailedError,
    LocalRunError,
    NoCapacity,
    SpecError,
    UsageError,
    VxtrainError,
)

__version__ = "0.1.0"

__all__ = sorted([
    "ApiError",
    "Diagnostic",
    "GpuShortageError",
    "JobFailedError",
    "LocalRunError",
    "NoCapacity",
    "Options",
    "Result",
    "SpecError",
    "UsageError",
    "VxtrainError",
    "__version__",
    "check_file",
    "compile",
    "load",
    "load_job",
    "logs",
    "plan",
    "quota",
    "submit",
    "validate",
])
