"""Quota needs of a compiled job: per metric, all pools at once, unknowns kept unknown."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vxtrain import api
from vxtrain.planning.quota import Need, needs

T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
CPUS = "aiplatform.googleapis.com/custom_model_training_cpus"


def pool(machine: str, replicas: int = 1, accelerator: str | None = None, count: int | None = None,
         **spec: Any) -> dict[str, Any]:
    machine_spec: dict[str, Any] = {"machineType": machine, **spec}
    if accelerator:
        machine_spec.update(acceleratorType=accelerator, acceleratorCount=count)
    return {"machineSpec": machine_spec, "replicaCount": str(replicas),  # int64: MessageToDict's string
            "containerSpec": {"imageUri": "gcr.io/p/t:1"}}


def custom_job(*pools: dict[str, Any], strategy: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"workerPoolSpecs": list(pools)}
    if strategy:
        spec["scheduling"] = {"strategy": strategy}
    return {"displayName": "j", "jobSpec": spec}


def by_metric(found: list[Need]) -> dict[str | None, int | None]:
    return {n.short_metric or n.resource: n.needed for n in found}


def test_gpus_and_cpus_add_up_over_pools_and_replicas() -> None:
    job = custom_job(pool("n1-standard-8", 1, "NVIDIA_TESLA_T4", 2), pool("n1-standard-8", 3, "NVIDIA_TESLA_T4", 2),
                     {}, pool("n1-highcpu-16", 2))  # an empty slot, then a Reduction Server-like CPU pool
    assert by_metric(needs(job)) == {"custom_model_training_nvidia_t4_gpus": 8, "custom_model_training_cpus": 64}
    t4 = needs(job)[0]
    assert t4.metric == T4 and t4.quota_id == "CustomModelTrainingT4GPUsPerProjectPerRegion"
    assert t4.pools == (0, 1) and needs(job)[1].pools == (0, 1, 3)
    assert t4.source and t4.source.startswith("https://")


@pytest.mark.parametrize("strategy", ["SPOT", "FLEX_START"])
def test_spot_and_flex_start_count_against_the_preemptible_metric(strategy: str) -> None:
    job = custom_job(pool("a3-highgpu-8g", 2, "NVIDIA_H100_80GB", 8), strategy=strategy)
    found = needs(job)
    assert found[0].short_metric == "custom_model_training_preemptible_nvidia_h100_gpus" and found[0].needed == 16
    # No source says which metric a Spot job's CPUs count against: unknown, not the on-demand one.
    assert found[1].metric is None and found[1].needed == 2 * 208 and strategy in found[1].resource


def test_spot_without_a_published_preemptible_metric_is_unknown_not_on_demand() -> None:
    found = needs(custom_job(pool("n1-standard-8", 1, "NVIDIA_TESLA_V100", 1), strategy="SPOT"))
    assert found[0].resource == "NVIDIA_TESLA_V100 GPUs (SPOT)" and found[0].metric is None and found[0].needed == 1


@pytest.mark.parametrize("strategy", ["SPOT", "FLEX_START"])
def test_a_missing_preemptible_metric_carries_the_pattern_s_candidate(strategy: str) -> None:
    """No row names the preemptible A100 metric: still unknown here, with the name the
    documented pattern gives, for the preflight to confirm against the project's answer."""
    [gpus, cpus] = needs(custom_job(pool("a2-highgpu-2g", 3, "NVIDIA_TESLA_A100", 2), strategy=strategy))
    assert (gpus.metric, gpus.needed) == (None, 6)
    assert gpus.candidate == "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_a100_gpus"
    assert gpus.source and "schedule-jobs-dws" in gpus.source
    assert (cpus.metric, cpus.candidate) == (None, None)  # a Spot job's CPUs: no pattern either


def test_needs_with_a_named_metric_or_no_token_carry_no_candidate() -> None:
    found = needs(custom_job(pool("n1-standard-8", 1, "NVIDIA_TESLA_T4", 1), pool("a4-highgpu-8g", 1, "NVIDIA_B200", 8),
                             strategy="SPOT"))
    assert [n.candidate for n in found] == [None, None, None, None]
    assert needs(custom_job(pool("a2-highgpu-1g", 1, "NVIDIA_TESLA_A100", 1)))[1].candidate == \
        "aiplatform.googleapis.com/custom_model_training_a2_cpus"


@pytest.mark.parametrize("machine, metric", [
    ("n2-standard-16", "custom_model_training_n2_cpus"), ("c2-standard-8", "custom_model_training_c2_cpus"),
    ("e2-standard-4", "custom_model_training_cpus"),
])
def test_cpus_per_machine_family(machine: str, metric: str) -> None:
    vcpus = int(machine.rsplit("-", 1)[1])
    assert by_metric(needs(custom_job(pool(machine), pool(machine, 2)))) == {metric: 3 * vcpus}


def test_a_family_without_a_named_metric_is_unknown_with_its_need() -> None:
    found = needs(custom_job(pool("a2-highgpu-1g", 1, "NVIDIA_TESLA_A100", 1)))
    assert [(n.resource, n.metric, n.needed) for n in found] == [
        ("NVIDIA_TESLA_A100 GPUs", "aiplatform.googleapis.com/custom_model_training_nvidia_a100_gpus", 1),
        ("a2 vCPUs", None, 12)]


def test_an_accelerator_no_source_names_is_unknown() -> None:
    found = needs(custom_job(pool("a4-highgpu-8g", 1, "NVIDIA_B200", 8)))
    assert found[0].resource == "NVIDIA_B200 GPUs" and found[0].metric is None and found[0].needed == 8


def test_builtin_gpus_count_when_the_spec_names_none() -> None:
    assert by_metric(needs(custom_job(pool("g2-standard-8"))))["custom_model_training_nvidia_l4_gpus"] == 1


def test_tpu_metric_known_amount_unknown_and_no_cpus() -> None:
    found = needs(custom_job(pool("ct5lp-hightpu-4t", 1, tpuTopology="2x2")))
    assert [(n.short_metric, n.needed) for n in found] == [("custom_model_training_tpu_v5e", None)]


def test_a_study_multiplies_by_parallel_trials() -> None:
    study = {"trialJobSpec": custom_job(pool("n1-standard-4", 1, "NVIDIA_TESLA_T4", 1))["jobSpec"],
             "maxTrialCount": 20, "parallelTrialCount": 5}
    assert by_metric(needs(study)) == {"custom_model_training_nvidia_t4_gpus": 5, "custom_model_training_cpus": 20}


def test_a_job_on_a_persistent_resource_needs_no_quota() -> None:
    job = custom_job(pool("n1-standard-8", 1, "NVIDIA_TESLA_T4", 1))
    job["jobSpec"]["persistentResourceId"] = "my-resource"
    assert needs(job) == []


def test_an_unknown_machine_keeps_its_metric_with_an_unknown_need() -> None:
    assert by_metric(needs(custom_job(pool("n1-standard-7")))) == {"custom_model_training_cpus": None}


def test_a_compiled_study_spec(tmp_path: Path) -> None:
    spec = {"display_name": "s", "region": "us-central1",
            "defaults": {"image": "gcr.io/p/t:1"},
            "chief": {"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}},
            "study": {"metric": {"id": "loss", "goal": "minimize"}, "max_trials": 8, "parallel_trials": 4,
                      "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}}
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    result = api.load_job(path)
    assert by_metric(needs(result.hyperparameter_tuning_job)) == {
        "custom_model_training_nvidia_t4_gpus": 4, "custom_model_training_cpus": 32}


def test_the_reduction_server_example_counts_its_servers_cpus(configs_dir: Path) -> None:
    job = api.load_job(configs_dir / "examples" / "reduction-server.yaml").custom_job
    cpus = next(n for n in needs(job) if n.short_metric == "custom_model_training_cpus")
    assert cpus.needed == 5 * 96 + 16 * 16 and cpus.pools == (0, 1, 2)  # 16 × n1-highcpu-16 servers
