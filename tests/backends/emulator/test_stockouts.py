"""Regions without capacity (vxtrain/backends/emulator/stockouts.py): what the store does
to a job created there, seen through the real client."""
from __future__ import annotations

from typing import Any

import pytest

from tests.backends.emulator.conftest import TERMINAL, State, custom_job
from tests.polling import wait_for
from vxtrain.backends.emulator.quotas import parse_quota
from vxtrain.backends.emulator.stockouts import (Shortage, Stockouts, quota_region_warnings, region_warnings,
                                                 stockout_message)
from vxtrain.errors import UsageError

EAST, WEST = "projects/p/locations/us-east1", "projects/p/locations/us-west1"


@pytest.mark.slow
def test_a_stockout_goes_pending_then_fails_with_code_8_never_running(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=0.2, stockout=["us-east1"], stockout_after=0.3)
    client = connect(handle)
    name = client.create_custom_job(parent=EAST, custom_job=custom_job()).name
    job = wait_for(lambda: (j := client.get_custom_job(name=name)).state in TERMINAL and j, 10, "the stockout")
    assert handle.emulator.history(name) == [State.JOB_STATE_QUEUED, State.JOB_STATE_PENDING,
                                             State.JOB_STATE_FAILED]
    assert (job.error.code, job.error.message) == (8, "Resources are insufficient in region: us-east1. "
                                                      "Please try a different region.")
    assert not job.start_time  # it never ran
    # Another region of the same emulator has capacity.
    other = client.create_custom_job(parent=WEST, custom_job=custom_job()).name
    assert handle.emulator.wait(other).state == State.JOB_STATE_SUCCEEDED


def test_pending_stays_pending_until_cancelled(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=0.2, pending=["us-west1"])
    client = connect(handle)
    name = client.create_custom_job(parent=WEST, custom_job=custom_job()).name
    wait_for(lambda: client.get_custom_job(name=name).state == State.JOB_STATE_PENDING, 10, "PENDING")
    client.cancel_custom_job(name=name)
    job = handle.emulator.wait(name)
    assert job.state == State.JOB_STATE_CANCELLED and not job.start_time


def test_a_region_changed_while_serving(make_emulator: Any, connect: Any) -> None:
    handle = make_emulator(simulate_seconds=0.2)
    client = connect(handle)
    handle.stockouts.set("us-east1", Shortage.stockout)
    handle.stockouts.after = 0.1
    short = client.create_custom_job(parent=EAST, custom_job=custom_job()).name
    handle.stockouts.set("us-east1", None)
    fine = client.create_custom_job(parent=EAST, custom_job=custom_job()).name
    assert handle.emulator.wait(short).state == State.JOB_STATE_FAILED
    assert handle.emulator.wait(fine).state == State.JOB_STATE_SUCCEEDED


def test_the_region_comes_from_the_job_name() -> None:
    plan = Stockouts(stockout=["europe-west4"], pending=["us-east1"])
    assert plan.of("projects/p/locations/europe-west4/customJobs/1") is Shortage.stockout
    assert plan.of("projects/p/locations/us-east1/hyperparameterTuningJobs/2") is Shortage.pending
    assert plan.of("projects/p/locations/us-central1/customJobs/3") is None
    assert stockout_message("projects/p/locations/europe-west4/customJobs/1").startswith(
        "Resources are insufficient in region: europe-west4.")


def test_a_region_no_job_can_be_created_in_is_flagged() -> None:
    """A typo in --stockout/--pending would never see a job: the CLI warns; a region given to
    both says two opposite things and is refused."""
    assert list(region_warnings(["us-central1"], ["europe-west4"])) == []
    [why] = region_warnings(["us-centrall"], [])
    assert why.startswith("--stockout 'us-centrall': not a Vertex AI location")
    with pytest.raises(UsageError, match="--stockout and --pending both name us-east1"):
        list(region_warnings(["us-east1"], ["us-east1"]))


def test_a_quota_region_typo_warns_like_stockout_with_did_you_mean() -> None:
    limits = [parse_quota("custom_model_training_nvidia_a100_gpus:us-centrl1=8"),
              parse_quota("custom_model_training_nvidia_a100_gpus:us-central1=8"),
              parse_quota("custom_model_training_nvidia_a100_gpus=8")]
    [why] = quota_region_warnings(limits)
    assert why.startswith("--quota custom_model_training_nvidia_a100_gpus:us-centrl1: 'us-centrl1' is not a "
                          "Vertex AI location") and "did you mean us-central1?" in why
    [why] = region_warnings(["us-centrl1"], [])
    assert "did you mean us-central1?), so no job" in why
