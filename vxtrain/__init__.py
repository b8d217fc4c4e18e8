"""vxtrain: readable YAML job specs compiled into Vertex AI CustomJobs.

The Python API mirrors the CLI (vxtrain.api). Importing this package is cheap: the
API's verbs and types are looked up on first use (PEP 562), so ``import vxtrain.cluster``
inside a training container loads the standard library alone, and nothing here imports
google.cloud.aiplatform (backends do, when they talk to an API).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from vxtrain.api import (
        Options, Result, check_file, cost, jobs, load, load_job, local_run, logs, plan, quota, spec_regions, submit,
        validate,
    )
    from vxtrain.api import compile_job as compile  # noqa: A001 - the API's verb

__version__ = "0.1.0"

#: The API's names, each the attribute of vxtrain.api it stands for.
_API = {"Options": "Options", "Result": "Result", "check_file": "check_file", "compile": "compile_job",
        "cost": "cost", "jobs": "jobs", "load": "load", "load_job": "load_job", "local_run": "local_run",
        "logs": "logs", "plan": "plan", "quota": "quota", "spec_regions": "spec_regions", "submit": "submit",
        "validate": "validate"}


def __getattr__(name: str) -> Any:
    """The API's verbs and types, from vxtrain.api when first asked for: importing it loads
    the check pipeline (PyYAML, the catalog, the rules), which the import-light
    ``vxtrain.cluster`` must not pull into a training container."""
    if name not in _API:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # lazy: vxtrain.api brings the whole check pipeline (~200 ms, -X importtime); vxtrain.cluster
    # imports this package inside training containers and must load the standard library alone
    from vxtrain import api

    value = getattr(api, _API[name])
    globals()[name] = value  # looked up once
    return value


__all__ = [
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
    "cost",
    "jobs",
    "load",
    "load_job",
    "local_run",
    "logs",
    "plan",
    "quota",
    "spec_regions",
    "submit",
    "validate",
]
