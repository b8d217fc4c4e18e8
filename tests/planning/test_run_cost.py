"""What a sent job costs per hour (vxtrain.planning.cost.job_per_hour, which prices recovery's
attempts and status/wait): the plan's own figure for the same job, read from its REST JSON."""
from __future__ import annotations

from pathlib import Path

import pytest

from vxtrain import api
from vxtrain.planning.cost import job_per_hour

EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "configs" / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_a_sent_job_costs_what_its_plan_says(path: Path) -> None:
    result = api.plan(path)
    for rung in [result, *result.fallback]:
        assert rung.job is not None and rung.cost is not None
        job = rung.hyperparameter_tuning_job or rung.custom_job
        assert job is not None
        expected = rung.cost.per_hour
        got = job_per_hour(job, rung.job.region)
        assert got == (None if expected is None else pytest.approx(expected)), path.name


def test_no_region_or_an_unknown_price_is_none_never_a_guess() -> None:
    job = {"jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1"}]}}
    assert job_per_hour(job, "us-central1") == pytest.approx(0.21849885)
    assert job_per_hour(job, None) is None
    unknown = {"jobSpec": {"workerPoolSpecs": [{"machineSpec": {"machineType": "e2-standard-4"}, "replicaCount": "1"}]}}
    assert job_per_hour(unknown, "us-central1") is None


def test_spot_and_a_persistent_resource_are_priced_as_the_plan_prices_them() -> None:
    pools = [{"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "2"}]
    standard = job_per_hour({"jobSpec": {"workerPoolSpecs": pools}}, "us-central1")
    spot = job_per_hour({"jobSpec": {"workerPoolSpecs": pools, "scheduling": {"strategy": "SPOT"}}}, "us-central1")
    assert standard is not None and spot is not None and spot < standard
    on_resource = {"jobSpec": {"workerPoolSpecs": pools, "persistentResourceId": "pool"}}
    assert job_per_hour(on_resource, "us-central1") == 0.0
