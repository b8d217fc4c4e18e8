"""The one seam between vxtrain and a Job API: ``JobBackend``.

Jobs cross this seam as REST-JSON dicts (camelCase, the form
``google.protobuf.json_format.MessageToDict`` gives and the REST API takes);
protobuf messages stay inside the backend. Every method raises only
``vxtrain.errors.ApiError`` subclasses: the backend translates what its
transport raises (see ``vxtrain.backends.vertex.translate``).

A transient failure (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL) is raised as
``UnavailableError`` with ``transient = True``, so callers can retry it with
``google.api_core.retry`` without knowing the transport.
"""
from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

#: A job as the REST API spells it (camelCase keys, enum names as strings).
JobDict = dict[str, Any]


@runtime_checkable
class JobBackend(Protocol):
    """Create, read, list, cancel and delete Vertex AI training jobs."""

    #: True when the backend talks to an emulator rather than Vertex AI.
    emulated: bool

    def create_custom_job(self, parent: str, custom_job: JobDict) -> JobDict:
        """Create a CustomJob under ``projects/P/locations/R``; return it as stored."""
        ...

    def get_custom_job(self, name: str) -> JobDict:
        """The CustomJob named ``projects/P/locations/R/customJobs/ID``."""
        ...

    def list_custom_jobs(self, parent: str, filter: str = "") -> list[JobDict]:  # noqa: A002 - the API's word
        """Every CustomJob under ``parent`` matching ``filter`` (all pages)."""
        ...

    def cancel_custom_job(self, name: str) -> None:
        """Ask for the CustomJob to be cancelled (it ends CANCELLED later)."""
        ...

    def delete_custom_job(self, name: str) -> None:
        """Delete the CustomJob (it must have ended)."""
        ...

    def create_hyperparameter_tuning_job(self, parent: str, job: JobDict) -> JobDict:
        """Create a HyperparameterTuningJob under ``parent``; return it as stored."""
        ...

    def get_hyperparameter_tuning_job(self, name: str) -> JobDict:
        """The HyperparameterTuningJob named ``.../hyperparameterTuningJobs/ID``."""
        ...

    def list_hyperparameter_tuning_jobs(self, parent: str, filter: str = "") -> list[JobDict]:  # noqa: A002
        """Every HyperparameterTuningJob under ``parent`` matching ``filter``."""
        ...

    def cancel_hyperparameter_tuning_job(self, name: str) -> None:
        """Ask for the HyperparameterTuningJob to be cancelled."""
        ...

    def delete_hyperparameter_tuning_job(self, name: str) -> None:
        """Delete the HyperparameterTuningJob (it must have ended)."""
        ...

    def close(self) -> None:
        """Release the connection (idempotent)."""
        ...
