"""Fault injection: ``METHOD:KIND:COUNT`` parsed, and each kind as the client sees it."""
from __future__ import annotations

from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.cloud import aiplatform_v1 as v1

from tests.backends.emulator.conftest import PARENT, TERMINAL, State, custom_job, pool, wait_until
from vxtrain.backends.emulator import Fault, faults_from_env, parse_fault, quota_metric
from vxtrain.errors import UsageError


FAULT_CASES = [
    ("unavailable-before-commit", gexc.ServiceUnavailable, 0),
    ("unavailable", gexc.ServiceUnavailable, 0),
    ("deadline-after-commit", gexc.DeadlineExceeded, 1),
    ("quota", gexc.ResourceExhausted, 0),
    ("permission", gexc.PermissionDenied, 0),
    ("internal", gexc.InternalServerError, 0),
]


@pytest.mark.parametrize(("kind", "error", "stored"), FAULT_CASES)
def test_create_faults(make_emulator: Any, connect: Any, kind: str, error: type[Exception], stored: int) -> None:
    handle = make_emulator(simulate_seconds=30, faults=[f"create:{kind}:1"])
    client = connect(handle)
    gpu = pool(accelerator_type="NVIDIA_TESLA_V100", accelerator_count=8)
    with pytest.raises(error) as info:
        client.create_custom_job(parent=PARENT, custom_job=custom_job(pools=[gpu]))
    assert len(handle.jobs()) == stored
    if kind == "quota":
        assert "The following quota metrics exceed quota limits: " \
               "aiplatform.googleapis.com/custom_model_training_nvidia_v100_gpus" in str(info.value)
    if kind == "permission":
        assert "iam.serviceAccounts.actAs" in str(info.value)
    client.create_custom_job(parent=PARENT, custom_job=custom_job())  # the fault fired once only
    assert len(handle.jobs()) == stored + 1


def test_fault_count_and_other_methods(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=30, environ={"VXTRAIN_EMULATOR_FAULTS": "get:unavailable:2"})
    client = connect(handle)
    name = client.create_custom_job(parent=PARENT, custom_job=custom_job()).name
    for _ in range(2):
        with pytest.raises(gexc.ServiceUnavailable):
            client.get_custom_job(name=name)
    assert client.get_custom_job(name=name).name == name
    handle.add_fault("list:internal:1")
    handle.add_fault(Fault("cancel", "deadline-after-commit", 1))
    with pytest.raises(gexc.InternalServerError):
        list(client.list_custom_jobs(parent=PARENT))
    with pytest.raises(gexc.DeadlineExceeded):  # after commit: the cancel took effect
        client.cancel_custom_job(name=name)
    assert wait_until(client, name, TERMINAL).state == State.JOB_STATE_CANCELLED
    handle.add_fault("delete:permission:1")
    with pytest.raises(gexc.PermissionDenied):
        client.delete_custom_job(name=name)
    assert len(handle.jobs()) == 1


@pytest.mark.parametrize("text", ["create", "create:quota:x", "create:quota:0", "create:quota:²", "submit:quota:1",
                                  "create:flaky:1", "a:b:c:d"])
def test_bad_fault_specs_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        parse_fault(text)


def test_fault_parsing() -> None:
    assert parse_fault("create:quota") == Fault("create", "quota", 1)
    assert faults_from_env({"VXTRAIN_EMULATOR_FAULTS": " get:internal:2 , create:quota:1,"}) == [
        Fault("get", "internal", 2), Fault("create", "quota", 1)]


def test_quota_metric_names() -> None:
    gpu = v1.CustomJob(custom_job(pools=[pool(accelerator_type="NVIDIA_L4", accelerator_count=1)]))
    tpu = v1.CustomJob(custom_job(pools=[pool(accelerator_type="TPU_V3", accelerator_count=8)]))
    assert quota_metric(gpu) == "aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
    assert quota_metric(tpu) == "aiplatform.googleapis.com/custom_model_training_tpu_v3"
    assert quota_metric(v1.CustomJob(custom_job())) == "aiplatform.googleapis.com/custom_model_training_cpus"


@pytest.mark.parametrize("accelerator, strategy, metric", [
    ("NVIDIA_H100_80GB", None, "custom_model_training_nvidia_h100_gpus"),   # not ..._h100_80gb_gpus
    ("NVIDIA_H100_80GB", "SPOT", "custom_model_training_preemptible_nvidia_h100_gpus"),
    ("NVIDIA_H100_MEGA_80GB", "FLEX_START", "custom_model_training_preemptible_nvidia_h100_mega_gpus"),
    ("NVIDIA_H100_MEGA_80GB", None, "custom_model_training_nvidia_h100_mega_gpus"),
    ("NVIDIA_TESLA_A100", None, "custom_model_training_nvidia_a100_gpus"),
    ("NVIDIA_B200", None, "custom_model_training_cpus"),                    # no source names the B200 metric
])
def test_quota_metric_names_come_from_the_sourced_table(accelerator: str, strategy: str | None, metric: str) -> None:
    data = custom_job(pools=[pool(accelerator_type=accelerator, accelerator_count=8)])
    if strategy:
        data["job_spec"]["scheduling"] = {"strategy": strategy}
    assert quota_metric(v1.CustomJob(data)) == f"aiplatform.googleapis.com/{metric}"
