"""What the emulator's tests share: request bodies, the real client, and emulators.

Every test talks gRPC to a server on 127.0.0.1 through the unmodified
``aiplatform_v1.JobServiceClient``; jobs that run use tiny ``python -c``
commands through the real local runner.
"""
from __future__ import annotations

import contextlib
import io
import sys
from collections.abc import Iterator
from typing import Any

import grpc
import pytest
from google.cloud import aiplatform_v1 as v1
from google.cloud.aiplatform_v1.services.job_service.transports import JobServiceGrpcTransport

from tests.polling import wait_for
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.vertex import emulator_channel
from vxtrain.errors import VxtrainError

PARENT = "projects/test-project/locations/us-central1"
State = v1.JobState
TERMINAL = {State.JOB_STATE_SUCCEEDED, State.JOB_STATE_FAILED, State.JOB_STATE_CANCELLED}


def second_at_ipv6(first: EmulatorHandle, what: str) -> str:
    """The refusal of a second emulator started on ``[::1]`` at ``first``'s port number
    (127.0.0.1:P and [::1]:P bind apart); the test fails, saying ``what`` happened, if it
    started."""
    try:
        second = start_emulator("::1", first.port, out=io.StringIO(), environ={})
    except VxtrainError as exc:
        return str(exc)
    second.stop()
    pytest.fail(f"a second emulator {what}")


def pool(command: list[str] | None = None, replicas: int = 1, **machine: Any) -> dict[str, Any]:
    """A worker pool spec (proto-plus dict form)."""
    container: dict[str, Any] = {"image_uri": "us-docker.pkg.dev/p/train/img:1"}
    if command:
        container["command"] = command
    return {"replica_count": replicas, "machine_spec": {"machine_type": "n1-standard-4", **machine},
            "container_spec": container}


def custom_job(display_name: str = "job", labels: dict[str, str] | None = None,
               pools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A CustomJob request body."""
    return {"display_name": display_name, "labels": labels or {},
            "job_spec": {"worker_pool_specs": pools if pools is not None else [pool()]}}


def py(code: str) -> list[str]:
    """A container command running ``code`` with this interpreter."""
    return [sys.executable, "-c", code]


def hpt_job(pools: list[dict[str, Any]] | None = None, trials: int = 2) -> dict[str, Any]:
    """A HyperparameterTuningJob request body."""
    return {
        "display_name": "study", "labels": {"kind": "hpt"}, "max_trial_count": trials, "parallel_trial_count": 1,
        "study_spec": {"metrics": [{"metric_id": "accuracy", "goal": "MAXIMIZE"}],
                       "parameters": [{"parameter_id": "lr", "double_value_spec": {"min_value": 0.1, "max_value": 0.2}},
                                      {"parameter_id": "opt", "categorical_value_spec": {"values": ["adam"]}}]},
        "trial_job_spec": {"worker_pool_specs": pools or [pool()]},
    }


@pytest.fixture
def make_emulator() -> Iterator[Any]:
    """Start emulators (environment faults ignored); all are stopped at teardown, however
    the test ended (an ExitStack: one stop that raises does not skip the others)."""
    with contextlib.ExitStack() as stack:

        def make(**kwargs: Any) -> EmulatorHandle:
            kwargs.setdefault("environ", {})
            handle = start_emulator(**kwargs)
            stack.callback(handle.stop, grace=0)
            return handle

        yield make


@pytest.fixture
def connect() -> Iterator[Any]:
    """The real client over an insecure channel to an emulator."""
    channels: list[grpc.Channel] = []

    def make(handle: EmulatorHandle) -> v1.JobServiceClient:
        channel = emulator_channel(handle.address)
        channels.append(channel)
        return v1.JobServiceClient(transport=JobServiceGrpcTransport(channel=channel))

    yield make
    for channel in channels:
        channel.close()


def wait_until(client: v1.JobServiceClient, name: str, states: set[Any], timeout: float = 20.0,
               hpt: bool = False) -> Any:
    """Poll get until the job is in one of ``states``."""
    get = client.get_hyperparameter_tuning_job if hpt else client.get_custom_job

    def ended() -> Any:
        job = get(name=name)
        return job if job.state in states else None

    return wait_for(ended, timeout, f"{name} to reach one of {sorted(s.name for s in states)}")
