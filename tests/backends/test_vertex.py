"""The Vertex backend: error translation, endpoints, the no-Google guard, and
the real JobServiceClient against the emulator on loopback."""
from __future__ import annotations

import inspect
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.api_core import exceptions as gexc

from vxtrain import errors
from vxtrain.backends import vertex
from vxtrain.backends.base import JobBackend
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.vertex import ERROR_MAP, GoogleEndpointBlocked, VertexBackend, translate
from vxtrain.vocab.kinds import CUSTOM, TUNING

PARENT = "projects/p/locations/us-central1"


def _api_core_classes() -> list[type[gexc.GoogleAPICallError]]:
    return [cls for _, cls in inspect.getmembers(gexc, inspect.isclass)
            if issubclass(cls, gexc.GoogleAPICallError) and cls.__module__ == gexc.__name__]


# --- error translation -------------------------------------------------------------

def test_every_google_api_core_exception_has_a_mapping() -> None:
    unmapped = sorted(cls.__name__ for cls in _api_core_classes() if cls.__name__ not in ERROR_MAP)
    assert not unmapped, f"add these google.api_core exceptions to vertex.ERROR_MAP: {unmapped}"


def test_error_map_names_only_real_classes() -> None:
    names = {cls.__name__ for cls in _api_core_classes()}
    assert set(ERROR_MAP) <= names


@pytest.mark.parametrize("cls", _api_core_classes(), ids=lambda c: c.__name__)
def test_every_class_translates_to_an_api_error(cls: type[gexc.GoogleAPICallError]) -> None:
    mapped = translate(cls("server said no"), region="us-central1")
    assert isinstance(mapped, errors.ApiError)
    assert mapped.exit_code == 4
    assert "server said no" in str(mapped)


def test_only_unavailable_deadline_and_internal_are_transient() -> None:
    transient = {name for name, (_, retried) in ERROR_MAP.items() if retried}
    assert transient == {"ServiceUnavailable", "DeadlineExceeded", "InternalServerError"}


QUOTA_TEXT = ("The following quota metrics exceed quota limits: "
              "aiplatform.googleapis.com/custom_model_training_nvidia_v100_gpus")


@pytest.mark.parametrize(("exc", "expected", "words"), [
    (gexc.ResourceExhausted(QUOTA_TEXT), errors.QuotaError,
     ["custom_model_training_nvidia_v100_gpus", "europe-west4", "request quota",
      "try another region/machine type"]),
    (gexc.PermissionDenied("Permission 'iam.serviceAccounts.actAs' denied on sa@p.iam"),
     errors.PermissionError_, ["sa@p.iam", "actAs", "roles/iam.serviceAccountUser"]),
    (gexc.Unauthenticated("Request had invalid authentication credentials."),
     errors.PermissionError_, ["application-default login"]),
    (gexc.InvalidArgument("List of found errors:\t1.Field: job_spec.worker_pool_specs[0].replica_count"),
     errors.InvalidArgumentError, ["worker_pool_specs[0].replica_count"]),
    (gexc.NotFound("The CustomJob projects/p/locations/l/customJobs/1 does not exist."),
     errors.NotFoundError, ["customJobs/1", "project and region"]),
    (gexc.ServiceUnavailable("The service is currently unavailable."),
     errors.UnavailableError, ["unavailable", "europe-west4"]),
    (gexc.MethodNotImplemented("Method not found"), errors.ApiError, ["does not implement"]),
])
def test_translation_says_what_to_change(exc: Exception, expected: type[errors.ApiError],
                                         words: list[str]) -> None:
    mapped = translate(exc, region="europe-west4")
    assert type(mapped) is expected
    for word in words:
        assert word in str(mapped)


@pytest.mark.parametrize(("exc", "said"), [
    (gexc.ServiceUnavailable("down"), "the Cloud Quotas API is unavailable in global (ServiceUnavailable)"),
    (gexc.InvalidArgument("bad parent"), "the Cloud Quotas API refused the request (InvalidArgument)"),
])
def test_a_translated_error_names_its_api(exc: Exception, said: str) -> None:
    assert str(translate(exc, region="global", api=vertex.QUOTAS_API)).startswith(said)
    assert str(translate(exc, region="global")).startswith(said.replace("the Cloud Quotas API", "the Job API"))


def test_transient_flag_follows_the_map() -> None:
    assert translate(gexc.DeadlineExceeded("slow")).transient
    assert translate(gexc.InternalServerError("oops")).transient
    assert not translate(gexc.ResourceExhausted(QUOTA_TEXT)).transient
    assert not translate(gexc.InvalidArgument("bad")).transient


def test_a_future_subclass_maps_like_its_base() -> None:
    class NewNotFound(gexc.NotFound):
        pass

    assert isinstance(translate(NewNotFound("gone")), errors.NotFoundError)


def test_quota_metric_comes_from_error_details_first() -> None:
    from google.rpc import error_details_pb2

    info = error_details_pb2.ErrorInfo(reason="RATE_LIMIT_EXCEEDED",
                                       metadata={"quota_metric": "aiplatform.googleapis.com/x_gpus"})
    exc = gexc.ResourceExhausted("Quota exceeded.", details=[info])
    assert vertex.quota_metric(exc) == "aiplatform.googleapis.com/x_gpus"
    assert "aiplatform.googleapis.com/x_gpus" in str(translate(exc, region="us-east1"))


def test_quota_failure_details_give_the_metric_not_the_subject() -> None:
    """QuotaFailure.Violation.subject is who hit the quota ("project:123"), not the metric."""
    from google.rpc import error_details_pb2

    violation = error_details_pb2.QuotaFailure.Violation(
        subject="project:123", quota_metric="aiplatform.googleapis.com/custom_model_training_cpus")
    exc = gexc.ResourceExhausted("Quota exceeded.", details=[error_details_pb2.QuotaFailure(violations=[violation])])
    assert vertex.quota_metric(exc) == "aiplatform.googleapis.com/custom_model_training_cpus"
    only_subject = error_details_pb2.QuotaFailure(violations=[error_details_pb2.QuotaFailure.Violation(
        subject="project:123")])
    exc = gexc.ResourceExhausted(QUOTA_TEXT, details=[only_subject])
    assert vertex.quota_metric(exc) == "aiplatform.googleapis.com/custom_model_training_nvidia_v100_gpus"


def test_quota_without_a_metric_still_says_what_to_do() -> None:
    text = str(translate(gexc.ResourceExhausted("Quota exceeded."), region="us-east1"))
    assert "us-east1" in text and "request quota" in text


# --- endpoints -----------------------------------------------------------------------

@pytest.mark.parametrize(("endpoint", "expected"), [
    ("127.0.0.1:8470", ("127.0.0.1", 8470)),
    ("localhost:1", ("localhost", 1)),
    ("[::1]:8470", ("::1", 8470)),
    ("emulator.internal:443", ("emulator.internal", 443)),
])
def test_split_endpoint(endpoint: str, expected: tuple[str, int]) -> None:
    assert vertex.split_endpoint(endpoint) == expected


@pytest.mark.parametrize("endpoint", ["127.0.0.1", ":8470", "host:port", "host:0", "host:70000", "", "host:²", "host:٣"])
def test_split_endpoint_refuses_malformed(endpoint: str) -> None:
    with pytest.raises(errors.UsageError, match="HOST:PORT"):
        vertex.split_endpoint(endpoint)


@pytest.mark.parametrize(("host", "loopback"), [
    ("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("[::1]", True), ("localhost", True),
    ("10.0.0.1", False), ("us-central1-aiplatform.googleapis.com", False), ("169.254.169.254", False),
])
def test_is_loopback(host: str, loopback: bool) -> None:
    assert vertex.is_loopback(host) is loopback


def test_vertex_needs_a_region() -> None:
    with pytest.raises(errors.UsageError, match="CLOUD_ML_REGION"):
        VertexBackend(None)


def test_region_of_a_name() -> None:
    assert vertex.region_of(f"{PARENT}/customJobs/1") == "us-central1"
    assert vertex.region_of("nothing") is None


# --- the no-Google guard (tests/conftest.py) --------------------------------------------

def test_guard_refuses_the_real_vertex_endpoint() -> None:
    backend = VertexBackend("us-central1")
    assert repr(backend) == "VertexBackend(Vertex AI us-central1-aiplatform.googleapis.com)"
    with pytest.raises(GoogleEndpointBlocked, match="us-central1-aiplatform.googleapis.com"):
        backend.get(CUSTOM, f"{PARENT}/customJobs/1")
    with pytest.raises(GoogleEndpointBlocked):
        backend.list(CUSTOM, PARENT)


def test_guard_refuses_a_remote_emulator_endpoint_too() -> None:
    with pytest.raises(GoogleEndpointBlocked):
        VertexBackend(endpoint="10.1.2.3:8470").get(CUSTOM, f"{PARENT}/customJobs/1")


def test_socket_guard_refuses_non_loopback() -> None:
    from tests.conftest import NetworkGuardError

    with pytest.raises(NetworkGuardError):
        socket.create_connection(("aiplatform.googleapis.com", 443), timeout=1)
    with pytest.raises(NetworkGuardError):
        socket.getaddrinfo("metadata.google.internal", 80)
    sock = socket.socket()
    try:
        with pytest.raises(NetworkGuardError):
            sock.connect(("169.254.169.254", 80))  # the GCE metadata server
    finally:
        sock.close()


def test_socket_guard_covers_bytes_hosts_and_the_older_lookups() -> None:
    from tests.conftest import NetworkGuardError

    for lookup in (lambda: socket.getaddrinfo(b"aiplatform.googleapis.com", 443),
                   lambda: socket.gethostbyname("metadata.google.internal"),
                   lambda: socket.gethostbyname_ex("aiplatform.googleapis.com"),
                   lambda: socket.gethostbyaddr("8.8.8.8")):
        with pytest.raises(NetworkGuardError):
            lookup()
    assert socket.gethostbyname("127.0.0.1") == "127.0.0.1"


def test_a_grpc_channel_built_without_vxtrain_cannot_reach_google() -> None:
    """gRPC's C core is below the socket guard: its channels go to the closed proxy port."""
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.aiplatform_v1 import JobServiceClient

    client = JobServiceClient(credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": "us-central1-aiplatform.googleapis.com"})
    try:
        with pytest.raises(gexc.ServiceUnavailable, match="127.0.0.1:9"):
            client.get_custom_job(name=f"{PARENT}/customJobs/1", retry=None, timeout=10)
    finally:
        client.transport.close()


def test_no_application_default_credentials_are_found() -> None:
    import google.auth
    from google.auth import exceptions as auth_exc

    with pytest.raises(auth_exc.DefaultCredentialsError):
        google.auth.default()


# --- import cost ------------------------------------------------------------------------------

def test_client_modules_do_not_import_aiplatform() -> None:
    """Only a call to an API imports aiplatform (backends.open_backend imports vertex then):
    `submit --help`, `status --help` and completing their options import these modules."""
    code = ("import sys, vxtrain.submission, vxtrain.backends, vxtrain.commands.submit, "
            "vxtrain.commands.jobs; print(sorted(m for m in sys.modules if 'aiplatform' in m))")
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "[]"


# --- the real client against the emulator ---------------------------------------------------------

@pytest.fixture
def emulator() -> Iterator[EmulatorHandle]:
    handle = start_emulator(simulate_seconds=0.2)
    try:
        yield handle
    finally:
        handle.stop(grace=None)


@pytest.fixture
def backend(emulator: EmulatorHandle) -> Iterator[VertexBackend]:
    with vertex.connect(endpoint=emulator.address) as api:
        yield api


def custom_job(name: str = "unit", **labels: str) -> dict[str, Any]:
    """The smallest valid CustomJob in its REST JSON form."""
    return {"displayName": name, "labels": labels, "jobSpec": {"workerPoolSpecs": [{
        "machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": "1",
        "containerSpec": {"imageUri": "us-docker.pkg.dev/p/r/train:1", "command": ["true"]}}]}}


def tuning_job() -> dict[str, Any]:
    return {"displayName": "study", "maxTrialCount": 2, "parallelTrialCount": 1,
            "studySpec": {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}],
                          "parameters": [{"parameterId": "lr",
                                          "doubleValueSpec": {"minValue": 0.001, "maxValue": 0.1}}]},
            "trialJobSpec": custom_job()["jobSpec"]}


def test_backend_is_a_job_backend(backend: VertexBackend) -> None:
    assert isinstance(backend, JobBackend)
    assert backend.emulated


def test_custom_job_round_trip(backend: VertexBackend) -> None:
    created = backend.create(CUSTOM, PARENT, custom_job(team="nlp"))
    assert created["name"].startswith(f"{PARENT}/customJobs/")
    assert created["state"] == "JOB_STATE_QUEUED"
    assert created["labels"] == {"team": "nlp"}
    assert backend.get(CUSTOM, created["name"])["displayName"] == "unit"
    listed = backend.list(CUSTOM, PARENT, 'labels.team="nlp"')
    assert [j["name"] for j in listed] == [created["name"]]
    assert backend.list(CUSTOM, PARENT, 'labels.team="cv"') == []
    backend.cancel(CUSTOM, created["name"])
    assert backend.get(CUSTOM, created["name"])["state"] in ("JOB_STATE_CANCELLING", "JOB_STATE_CANCELLED")


def test_delete_of_an_ended_job(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    created = backend.create(CUSTOM, PARENT, custom_job())
    emulator.emulator.wait(created["name"])
    backend.delete(CUSTOM, created["name"])
    with pytest.raises(errors.NotFoundError, match="does not exist"):
        backend.get(CUSTOM, created["name"])


def test_hyperparameter_tuning_job_round_trip(backend: VertexBackend) -> None:
    created = backend.create(TUNING, PARENT, tuning_job())
    assert "/hyperparameterTuningJobs/" in created["name"]
    assert backend.get(TUNING, created["name"])["maxTrialCount"] == 2
    assert len(backend.list(TUNING, PARENT)) == 1
    backend.cancel(TUNING, created["name"])


def test_server_invalid_argument_carries_the_servers_message(backend: VertexBackend) -> None:
    job = custom_job()
    job["jobSpec"]["workerPoolSpecs"][0]["replicaCount"] = "2"
    with pytest.raises(errors.InvalidArgumentError, match="replica"):
        backend.create(CUSTOM, PARENT, job)


def test_a_dict_that_is_no_custom_job_is_refused_before_sending(backend: VertexBackend) -> None:
    with pytest.raises(errors.InvalidArgumentError, match="not a valid CustomJob.*workerPools"):
        backend.create(CUSTOM, PARENT, {"displayName": "x", "jobSpec": {"workerPools": []}})


def test_injected_faults_arrive_translated(backend: VertexBackend, emulator: EmulatorHandle) -> None:
    emulator.add_fault("create:quota:1")
    with pytest.raises(errors.QuotaError, match="custom_model_training_cpus.*us-central1|us-central1.*custom_model"):
        backend.create(CUSTOM, PARENT, custom_job())
    emulator.add_fault("get:unavailable:1")
    with pytest.raises(errors.UnavailableError) as info:
        backend.get(CUSTOM, f"{PARENT}/customJobs/1")
    assert info.value.transient


def test_close_is_idempotent(emulator: EmulatorHandle) -> None:
    api = vertex.connect(endpoint=emulator.address)
    api.list(CUSTOM, PARENT)
    api.close()
    api.close()
