"""The kinds of training job the Job API serves, and the states a job ends in: the
one table that the compiler, the quota plan, the seam (``backends.base.JobBackend``),
its backends, the emulator and ``vxtrain.submission`` all read.

Vertex AI's JobService serves each kind under its own collection and methods
(``customJobs``: CreateCustomJob…; ``hyperparameterTuningJobs``:
CreateHyperparameterTuningJob…,
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.customJobs,
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs).
Plain strings only: importing this costs nothing (``validate`` stays fast).
"""
from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final


@dataclass(frozen=True)
class JobKind:
    """One kind of job and every name it goes by."""

    #: The short name the emulator's ``jobs(kind)`` takes: "custom" | "hpt".
    key: str
    #: The resource-name segment: ``projects/P/locations/R/{collection}/ID``.
    collection: str
    #: The message type, as Vertex names it in its messages: "CustomJob".
    label: str
    #: snake_case: the create request's field, and JobServiceClient's method suffix
    #: (``create_custom_job``, ``list_custom_jobs``).
    field: str
    #: Where the job's CustomJobSpec is, in REST JSON: "jobSpec" | "trialJobSpec".
    spec_key: str
    #: The same in the proto (and in Vertex's field paths): "job_spec" | "trial_job_spec".
    spec_field: str

    @property
    def noun(self) -> str:
        """``custom job``: how messages for people name it."""
        return self.field.replace("_", " ")


#: A CustomJob's CustomJobSpec key, and a HyperparameterTuningJob's, in REST JSON. Final, so
#: that mypy reads them as the literal keys of vocab.jobjson's TypedDicts.
JOB_SPEC: Final = "jobSpec"
TRIAL_JOB_SPEC: Final = "trialJobSpec"

CUSTOM = JobKind("custom", "customJobs", "CustomJob", "custom_job", JOB_SPEC, "job_spec")
TUNING = JobKind("hpt", "hyperparameterTuningJobs", "HyperparameterTuningJob", "hyperparameter_tuning_job",
                 TRIAL_JOB_SPEC, "trial_job_spec")
#: Every kind, by its short name.
KINDS: dict[str, JobKind] = {kind.key: kind for kind in (CUSTOM, TUNING)}

class JobState(StrEnum):
    """A job's state, as the Job API names it (``google.cloud.aiplatform.v1.JobState``,
    https://cloud.google.com/vertex-ai/docs/reference/rest/v1/JobState). Each member is its
    API name as a string, so it compares, hashes and serializes as the name."""

    UNSPECIFIED = "JOB_STATE_UNSPECIFIED"
    QUEUED = "JOB_STATE_QUEUED"
    PENDING = "JOB_STATE_PENDING"
    RUNNING = "JOB_STATE_RUNNING"
    SUCCEEDED = "JOB_STATE_SUCCEEDED"
    FAILED = "JOB_STATE_FAILED"
    CANCELLING = "JOB_STATE_CANCELLING"
    CANCELLED = "JOB_STATE_CANCELLED"
    PAUSED = "JOB_STATE_PAUSED"
    EXPIRED = "JOB_STATE_EXPIRED"
    UPDATING = "JOB_STATE_UPDATING"
    PARTIALLY_SUCCEEDED = "JOB_STATE_PARTIALLY_SUCCEEDED"

    @classmethod
    def of(cls, name: object) -> JobState:
        """The state an API answer names; one this table does not know yet is UNSPECIFIED."""
        try:
            return cls(str(name))
        except ValueError:
            return cls.UNSPECIFIED

    @property
    def terminal(self) -> bool:
        """A job in this state never changes again."""
        return self in _TERMINAL

    @property
    def failed(self) -> bool:
        """A terminal state in which the job did not do its work (``wait`` exits 3)."""
        return self in _FAILED

    @property
    def waiting(self) -> bool:
        """The job has not got its machines yet (QUEUED or PENDING)."""
        return self in (JobState.QUEUED, JobState.PENDING)

    @property
    def alive(self) -> bool:
        """Neither ended nor being cancelled: the job holds, or waits for, machines."""
        return not self.terminal and self is not JobState.CANCELLING


_TERMINAL = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED, JobState.EXPIRED,
                       JobState.PARTIALLY_SUCCEEDED})
_FAILED = frozenset({JobState.FAILED, JobState.CANCELLED, JobState.EXPIRED})
#: States after which a job never changes again (``JobState.terminal``; the emulator reads this set).
TERMINAL_STATES: frozenset[str] = frozenset(_TERMINAL)
#: Terminal states in which a job did not do its work (``JobState.failed``).
FAILED_STATES: frozenset[str] = frozenset(_FAILED)
#: google.rpc.Code.RESOURCE_EXHAUSTED: the ``error.code`` of a job that failed for capacity
#: (what the emulator's stockouts set, and what the fallback ladder moves on for).
RESOURCE_EXHAUSTED = 8


def kind_of_job(job: Mapping[str, Any]) -> JobKind:
    """A HyperparameterTuningJob has a ``trialJobSpec``; anything else is a CustomJob."""
    return TUNING if TUNING.spec_key in job else CUSTOM


def job_spec_of(job: Mapping[str, Any]) -> Mapping[str, Any]:
    """The CustomJobSpec a job runs (REST JSON): a tuning job's ``trialJobSpec``, a custom
    job's ``jobSpec``; ``{}`` when it has none."""
    spec = job.get(kind_of_job(job).spec_key)
    return spec if isinstance(spec, Mapping) else {}


def with_pool_env(job: Mapping[str, Any], entries: list[dict[str, str]], replacing: Collection[str]) -> dict[str, Any]:
    """A deep copy of ``job`` (REST JSON) whose every pool's code (``containerSpec`` or
    ``pythonPackageSpec``) has ``entries`` at the end of its env, the entries named in
    ``replacing`` taken out first (what vxtrain sets for each attempt, or a trace)."""
    out = copy.deepcopy(dict(job))
    spec = out.get(kind_of_job(out).spec_key)
    pools = spec.get("workerPoolSpecs") if isinstance(spec, dict) else None
    for pool in pools or []:
        code = pool.get("containerSpec") or pool.get("pythonPackageSpec") if isinstance(pool, dict) else None
        if isinstance(code, dict):
            kept = [e for e in code.get("env") or [] if e.get("name") not in replacing]
            code["env"] = [*kept, *entries]
    return out


def kind_of_name(name: str) -> JobKind:
    """The kind a full resource name points at."""
    return TUNING if f"/{TUNING.collection}/" in name else CUSTOM


def other(kind: JobKind) -> JobKind:
    """The other kind (a bare id or a label may name a job of either)."""
    return TUNING if kind is CUSTOM else CUSTOM
