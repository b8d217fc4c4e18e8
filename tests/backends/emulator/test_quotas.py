"""The emulator's Cloud Quotas API, through the real ``cloudquotas_v1.CloudQuotasClient``,
and its limits enforced at create, through the real ``aiplatform_v1.JobServiceClient``."""
from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import pytest
from google.api_core import exceptions as gexc
from google.auth.credentials import AnonymousCredentials
from google.cloud import aiplatform_v1 as v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport
from google.cloud.cloudquotas_v1 import CloudQuotasClient
from google.cloud.cloudquotas_v1.services.cloud_quotas.transports import CloudQuotasGrpcTransport

from vxtrain import errors
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.emulator.quotas import QuotaLimit, parse_quota, unmatched
from vxtrain.backends.vertex import emulator_channel

SERVICE_PARENT = "projects/p/locations/global/services/aiplatform.googleapis.com"
LIMITS = ("custom_model_training_nvidia_t4_gpus:us-central1=4", "custom_model_training_nvidia_t4_gpus=1",
          "custom_model_training_cpus:us-central1=64", "custom_model_training_nvidia_a100_gpus:europe-west4=8")


@pytest.fixture
def handle() -> Iterator[EmulatorHandle]:
    emulator = start_emulator(out=io.StringIO(), quotas=LIMITS, simulate_seconds=0.2)
    try:
        yield emulator
    finally:
        emulator.stop(grace=None)


@pytest.fixture
def quotas(handle: EmulatorHandle) -> Iterator[CloudQuotasClient]:
    channel = emulator_channel(handle.address)
    client = CloudQuotasClient(transport=CloudQuotasGrpcTransport(channel=channel, credentials=AnonymousCredentials()))
    try:
        yield client
    finally:
        client.transport.close()


@pytest.fixture
def jobs(handle: EmulatorHandle) -> Iterator[v1.JobServiceClient]:
    channel = emulator_channel(handle.address)
    client = v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel, credentials=AnonymousCredentials()))
    try:
        yield client
    finally:
        client.transport.close()


def test_it_lists_only_the_limits_given_over_pages(quotas: CloudQuotasClient) -> None:
    pager = quotas.list_quota_infos(request={"parent": SERVICE_PARENT, "page_size": 1})
    infos = list(pager)
    assert [i.metric for i in infos] == [
        "aiplatform.googleapis.com/custom_model_training_cpus",
        "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus",
        "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"]
    t4 = infos[2]
    assert t4.quota_id == "CustomModelTrainingT4GPUsPerProjectPerRegion"  # the catalog's ID
    assert t4.name == f"{SERVICE_PARENT}/quotaInfos/CustomModelTrainingT4GPUsPerProjectPerRegion"
    # The region's entry first, the every-region one last (more specific to less specific).
    assert [(dict(d.dimensions), d.details.value) for d in t4.dimensions_infos] == [
        ({"region": "us-central1"}, 4), ({}, 1)]


def test_get_quota_info_and_not_found(quotas: CloudQuotasClient) -> None:
    name = f"{SERVICE_PARENT}/quotaInfos/custom_model_training_cpus"  # no ID in the catalog: the stand-in
    assert quotas.get_quota_info(name=name).metric == "aiplatform.googleapis.com/custom_model_training_cpus"
    with pytest.raises(gexc.NotFound):
        quotas.get_quota_info(name=f"{SERVICE_PARENT}/quotaInfos/CustomModelTrainingNoSuchGPUsPerProjectPerRegion")


def test_a_regional_parent_is_refused_and_another_service_has_none(quotas: CloudQuotasClient) -> None:
    with pytest.raises(gexc.InvalidArgument, match="global"):
        list(quotas.list_quota_infos(parent="projects/p/locations/us-central1/services/aiplatform.googleapis.com"))
    assert list(quotas.list_quota_infos(parent="projects/p/locations/global/services/compute.googleapis.com")) == []


@pytest.mark.parametrize("kind, error", [("permission", gexc.PermissionDenied), ("disabled", gexc.PermissionDenied),
                                         ("unimplemented", gexc.MethodNotImplemented)])
def test_quota_faults(handle: EmulatorHandle, quotas: CloudQuotasClient, kind: str, error: type[Exception]) -> None:
    handle.add_fault(f"quotas:{kind}:1")
    with pytest.raises(error):
        list(quotas.list_quota_infos(parent=SERVICE_PARENT))
    assert list(quotas.list_quota_infos(parent=SERVICE_PARENT))  # one call only


@pytest.mark.parametrize("text, limit", [
    ("custom_model_training_nvidia_a100_gpus:us-central1=8",
     QuotaLimit("custom_model_training_nvidia_a100_gpus", "us-central1", 8)),
    ("aiplatform.googleapis.com/custom_model_training_cpus=0", QuotaLimit("custom_model_training_cpus", None, 0)),
])
def test_parse_quota(text: str, limit: QuotaLimit) -> None:
    assert parse_quota(text) == limit


@pytest.mark.parametrize("text", ["custom_model_training_cpus", "custom_model_training_cpus:us-central1",
                                  "custom_model_training_cpus:us-central1=-1", "m:r=x", ":us-central1=2"])
def test_a_malformed_quota_is_a_usage_error(text: str) -> None:
    with pytest.raises(errors.UsageError, match="METRIC:REGION=N"):
        parse_quota(text)


# --- enforced at create --------------------------------------------------------------------------

def t4_job(region_count: int, replicas: int = 1, machine: str = "n1-standard-8") -> dict[str, Any]:
    pools = [{"machine_spec": {"machine_type": machine, "accelerator_type": "NVIDIA_TESLA_T4",
                               "accelerator_count": region_count},
              "replica_count": 1, "container_spec": {"image_uri": "gcr.io/p/t:1"}}]
    if replicas > 1:
        pools.append({**pools[0], "replica_count": replicas - 1})
    return {"display_name": "q", "job_spec": {"worker_pool_specs": pools}}


def test_a_job_above_a_limit_is_refused_as_vertex_refuses_it(jobs: v1.JobServiceClient,
                                                             handle: EmulatorHandle) -> None:
    with pytest.raises(gexc.ResourceExhausted) as refused:
        jobs.create_custom_job(parent="projects/p/locations/us-central1", custom_job=t4_job(2, replicas=3))
    assert refused.value.message == ("The following quota metrics exceed quota limits: "
                                     "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus")
    assert handle.jobs() == []


def test_every_metric_above_its_limit_is_named(jobs: v1.JobServiceClient) -> None:
    with pytest.raises(gexc.ResourceExhausted) as refused:  # 5 × 4 T4 and 5 × 16 vCPUs
        jobs.create_custom_job(parent="projects/p/locations/us-central1",
                               custom_job=t4_job(4, replicas=5, machine="n1-standard-16"))
    assert refused.value.message.endswith(": aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus, "
                                          "aiplatform.googleapis.com/custom_model_training_cpus")


def test_the_region_decides_which_limit_applies(jobs: v1.JobServiceClient, handle: EmulatorHandle) -> None:
    created = jobs.create_custom_job(parent="projects/p/locations/us-central1", custom_job=t4_job(4))
    assert created.name  # 4 T4 fit us-central1's 4 (its own job only: the first is not counted)
    jobs.create_custom_job(parent="projects/p/locations/us-central1", custom_job=t4_job(4))
    with pytest.raises(gexc.ResourceExhausted):  # every other region: 1
        jobs.create_custom_job(parent="projects/p/locations/us-east4", custom_job=t4_job(2))
    # A metric with no limit given is not limited (the emulator lists only those given).
    jobs.create_custom_job(parent="projects/p/locations/us-central1",
                           custom_job=t4_job(1) | {"job_spec": {"worker_pool_specs": [
                               {"machine_spec": {"machine_type": "n1-standard-4", "accelerator_type": "NVIDIA_L4",
                                                 "accelerator_count": 8},
                                "replica_count": 1, "container_spec": {"image_uri": "gcr.io/p/t:1"}}]}})
    assert len(handle.jobs()) == 3


def test_a_study_counts_its_parallel_trials(jobs: v1.JobServiceClient, handle: EmulatorHandle) -> None:
    study: dict[str, Any] = {
        "display_name": "s", "max_trial_count": 8, "parallel_trial_count": 3,
        "study_spec": {"metrics": [{"metric_id": "loss", "goal": "MINIMIZE"}],
                       "parameters": [{"parameter_id": "lr",
                                       "double_value_spec": {"min_value": 0.001, "max_value": 0.1}}]},
        "trial_job_spec": t4_job(2)["job_spec"]}
    with pytest.raises(gexc.ResourceExhausted, match="custom_model_training_nvidia_t4_gpus"):  # 3 × 2 > 4
        jobs.create_hyperparameter_tuning_job(parent="projects/p/locations/us-central1",
                                              hyperparameter_tuning_job=study)
    study["parallel_trial_count"] = 2
    jobs.create_hyperparameter_tuning_job(parent="projects/p/locations/us-central1", hyperparameter_tuning_job=study)
    assert len(handle.jobs("hpt")) == 1


def test_limits_can_be_set_at_run_time(jobs: v1.JobServiceClient, handle: EmulatorHandle) -> None:
    handle.quotas.set("custom_model_training_nvidia_t4_gpus:us-central1=0")
    with pytest.raises(gexc.ResourceExhausted):
        jobs.create_custom_job(parent="projects/p/locations/us-central1", custom_job=t4_job(1))


def test_a_limit_on_a_metric_no_job_counts_against_is_flagged() -> None:
    """A typo in --quota would serve a limit that never refuses anything: the CLI warns."""
    assert unmatched(parse_quota("custom_model_training_nvidia_a100_gpus:us-central1=0")) is None
    assert unmatched(parse_quota("aiplatform.googleapis.com/custom_model_training_cpus=4")) is None
    why = unmatched(parse_quota("custom_model_training_nvidia_a100_gpu:us-central1=0"))
    assert why is not None and "custom_model_training_nvidia_a100_gpu: no job counts against this metric" in why
    assert "custom_model_training_nvidia_a100_gpus" in why  # the known names, to compare with
