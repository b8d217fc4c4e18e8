"""The one table of job kinds and end states (vxtrain.vocab.kinds) against the
installed google-cloud-aiplatform: each kind's names are the client's, and the
emulator's terminal states are the seam's."""
from __future__ import annotations

import pytest
from google.cloud import aiplatform_v1
from google.cloud.aiplatform_v1.services.job_service import JobServiceClient
from google.cloud.aiplatform_v1.types import job_service

from vxtrain.backends.emulator.common import TERMINAL_STATES
from vxtrain.vocab import kinds


@pytest.mark.parametrize("kind", list(kinds.KINDS.values()), ids=lambda k: k.key)
def test_each_kind_names_what_the_client_has(kind: kinds.JobKind) -> None:
    for verb in ("create", "get", "cancel", "delete"):
        assert hasattr(JobServiceClient, f"{verb}_{kind.field}")
    assert hasattr(JobServiceClient, f"list_{kind.field}s")
    assert kind.field in job_service.__dict__[f"Create{kind.label}Request"].meta.fields
    message = getattr(aiplatform_v1, kind.label)
    assert kind.spec_field in message.meta.fields
    assert kind.collection[0].lower() + kind.label[1:] + "s" == kind.collection


def test_kind_of_a_job_and_of_a_name() -> None:
    assert kinds.kind_of_job({"jobSpec": {}}) is kinds.CUSTOM
    assert kinds.kind_of_job({"trialJobSpec": {}, "studySpec": {}}) is kinds.TUNING
    assert kinds.kind_of_name("projects/p/locations/l/hyperparameterTuningJobs/1") is kinds.TUNING
    assert kinds.kind_of_name("projects/p/locations/l/customJobs/1") is kinds.CUSTOM
    assert kinds.other(kinds.CUSTOM) is kinds.TUNING and kinds.other(kinds.TUNING) is kinds.CUSTOM


def test_the_job_spec_of_either_kind() -> None:
    assert kinds.job_spec_of({"jobSpec": {"a": 1}}) == {"a": 1}
    assert kinds.job_spec_of({"trialJobSpec": {"b": 2}, "studySpec": {}}) == {"b": 2}
    assert kinds.job_spec_of({"displayName": "x"}) == {}
    assert kinds.job_spec_of({"jobSpec": None}) == {}


def test_end_states() -> None:
    assert kinds.FAILED_STATES < kinds.TERMINAL_STATES
    assert {state.name for state in TERMINAL_STATES} == kinds.TERMINAL_STATES
    assert all(hasattr(aiplatform_v1.JobState, name) for name in kinds.TERMINAL_STATES)
