"""The JobService over gRPC: create, get, list, cancel and delete of both job kinds."""
from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc

from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, hpt_job, wait_until


def test_create_get_list_cancel_delete(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30)
    client = connect(handle)
    created = client.create_custom_job(parent=PARENT, custom_job=custom_job("train-a", {"team": "nlp"}))
    project_loc, _, job_id = created.name.rpartition("/customJobs/")
    assert project_loc == PARENT and job_id.isdigit() and len(job_id) >= 18
    assert created.state == State.JOB_STATE_QUEUED and created.create_time and created.update_time
    assert client.get_custom_job(name=created.name).display_name == "train-a"

    client.cancel_custom_job(name=created.name)
    ended = wait_until(client, created.name, TERMINAL)
    assert ended.state == State.JOB_STATE_CANCELLED and ended.error.code == 1 and ended.end_time
    assert handle.emulator.history(created.name)[-2:] == [State.JOB_STATE_CANCELLING, State.JOB_STATE_CANCELLED]

    operation = client.delete_custom_job(name=created.name)
    operation.result(timeout=5)
    assert operation.done()
    with pytest.raises(gexc.NotFound):
        client.get_custom_job(name=created.name)
    assert handle.jobs() == []


def test_hpt_create_get_list_cancel_delete(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30)
    client = connect(handle)
    created = client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=hpt_job())
    assert "/hyperparameterTuningJobs/" in created.name and created.state == State.JOB_STATE_QUEUED
    assert client.get_hyperparameter_tuning_job(name=created.name).max_trial_count == 2
    listed = client.list_hyperparameter_tuning_jobs(request={"parent": PARENT, "filter": "labels.kind=hpt"})
    assert [j.name for j in listed] == [created.name]
    assert list(client.list_custom_jobs(parent=PARENT)) == []
    client.cancel_hyperparameter_tuning_job(name=created.name)
    assert wait_until(client, created.name, TERMINAL, hpt=True).state == State.JOB_STATE_CANCELLED
    client.delete_hyperparameter_tuning_job(name=created.name).result(timeout=5)
    assert handle.jobs("hpt") == []
    bad = hpt_job()
    bad["study_spec"]["metrics"] = []
    with pytest.raises(gexc.InvalidArgument, match="study_spec.metrics"):
        client.create_hyperparameter_tuning_job(parent=PARENT, hyperparameter_tuning_job=bad)


def test_unimplemented_methods(make_emulator: Any, connect: Any) -> None:
    with pytest.raises(gexc.MethodNotImplemented):
        connect(make_emulator()).get_batch_prediction_job(name=f"{PARENT}/batchPredictionJobs/1")
