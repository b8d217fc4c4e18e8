"""``vxtrain quota`` and submit's quota preflight, against the emulator's Cloud Quotas API
read by the real ``cloudquotas_v1.CloudQuotasClient`` (through the vertex backend),
and the pure parts of vxtrain.submission.quota as tables."""
from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.incli import run
from vxtrain import errors
from vxtrain.backends.emulator import EmulatorHandle, start_emulator
from vxtrain.backends.vertex import GoogleEndpointBlocked, VertexBackend, connect
from vxtrain.planning.quota import Need
from vxtrain.submission import Session
from vxtrain.submission.quota import QuotaReport, check_quota, limit_in, preflight, report
from tests.submission.helpers import heard

T4 = "aiplatform.googleapis.com/custom_model_training_nvidia_t4_gpus"
T4_SPOT = "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_t4_gpus"
CPUS = "aiplatform.googleapis.com/custom_model_training_cpus"
N2_CPUS = "aiplatform.googleapis.com/custom_model_training_n2_cpus"
LIMITS = ("custom_model_training_nvidia_t4_gpus:us-central1=4", "custom_model_training_cpus:us-central1=64",
          "custom_model_training_preemptible_nvidia_t4_gpus:us-central1=16",
          "custom_model_training_n2_cpus:us-central1=32")


@pytest.fixture
def emu() -> Iterator[EmulatorHandle]:
    handle = start_emulator(out=io.StringIO(), quotas=LIMITS, simulate_seconds=0.2)
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def spec(tmp_path: Path, **over: Any) -> str:
    """A chief and N workers with 2 × T4 on n1-standard-8 each (2 workers: 6 T4, 24 vCPUs)."""
    data: dict[str, Any] = {
        "display_name": "q", "project": "p", "region": "us-central1",
        "defaults": {"image": "gcr.io/p/t:1", "machine_type": "n1-standard-8",
                     "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 2}},
        "chief": {}, "workers": {"replicas": 2}}
    data.update(over)
    data = {key: value for key, value in data.items() if value is not None}  # workers=None: a chief alone
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def quotas_of(doc: dict[str, Any]) -> dict[str | None, tuple[Any, Any, Any]]:
    return {q["metric"] or q["resource"]: (q["needed"], q["limit"], q["fits"]) for q in doc["quotas"]}


# --- vxtrain quota -------------------------------------------------------------------------------

def test_quota_json_a_need_above_a_limit_is_exit_5(tmp_path: Path, emu: EmulatorHandle,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = run(capsys, "quota", spec(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 5
    assert set(doc) == {"project", "region", "fits", "quotas"}
    assert (doc["project"], doc["region"], doc["fits"]) == ("p", "us-central1", False)
    assert quotas_of(doc) == {T4: (6, 4, False), CPUS: (24, 64, True)}
    t4 = doc["quotas"][0]
    assert set(t4) == {"metric", "quota_id", "needed", "limit", "fits", "resource"}
    assert t4["quota_id"] == "CustomModelTrainingT4GPUsPerProjectPerRegion"


def test_quota_fits_is_exit_0_and_the_text_table(tmp_path: Path, emu: EmulatorHandle,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = run(capsys, "quota", spec(tmp_path, workers={"replicas": 1}), "--endpoint", emu.address)
    assert code == 0
    assert "custom_model_training_nvidia_t4_gpus" in text and "Limits only" in text


def test_spot_counts_against_the_preemptible_metric(tmp_path: Path, emu: EmulatorHandle,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, scheduling={"strategy": "SPOT"})
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert code == 0
    found = quotas_of(doc)
    assert found[T4_SPOT] == (6, 16, True) and T4 not in found
    assert found["n1 vCPUs (SPOT)"] == (24, None, None)  # which metric Spot CPUs use: no source says


def test_cpus_per_machine_family(tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, defaults={"image": "gcr.io/p/t:1", "machine_type": "n2-standard-16"})
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert (code, quotas_of(doc)) == (5, {N2_CPUS: (48, 32, False)})


def test_a_study_needs_parallel_trials_times_a_trial(tmp_path: Path, emu: EmulatorHandle,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    study = {"metric": {"id": "loss", "goal": "minimize"}, "max_trials": 8, "parallel_trials": 2,
             "parameters": {"lr": {"type": "double", "min": 0.001, "max": 0.1}}}
    path = spec(tmp_path, workers=None, study=study)
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert (code, quotas_of(doc)) == (0, {T4: (4, 4, True), CPUS: (16, 64, True)})


def test_an_unknown_metric_is_shown_as_unknown_not_guessed(tmp_path: Path, emu: EmulatorHandle,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, defaults={"image": "gcr.io/p/t:1", "machine_type": "a4-highgpu-8g",
                                    "accelerator": {"type": "NVIDIA_B200", "count": 8}}, workers=None)
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert code == 0 and doc["fits"] is True
    b200 = next(q for q in doc["quotas"] if q["resource"] == "NVIDIA_B200 GPUs")
    assert b200 == {"metric": None, "quota_id": None, "needed": 8, "limit": None, "fits": None,
                    "resource": "NVIDIA_B200 GPUs"}


def test_quota_reports_every_rung_of_the_ladder_and_exits_on_the_spec_s_own(
        tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    """Rung 0 (2 workers: 6 T4) is short, rung 1 (1 worker: 4 T4) fits: the report shows both;
    the exit code and ``fits`` stay the spec's own (the Contract), the rungs say theirs."""
    path = spec(tmp_path, fallback=[{"workers": {"replicas": 1}}])
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert code == 5 and doc["fits"] is False
    [rung] = doc["fallback"]
    assert (rung["rung"], rung["project"], rung["region"], rung["fits"]) == (1, "p", "us-central1", True)
    assert quotas_of(rung) == {T4: (4, 4, True), CPUS: (16, 64, True)}
    path = spec(tmp_path, workers={"replicas": 1}, fallback=[{"workers": {"replicas": 2}}])
    code, text, _ = run(capsys, "quota", path, "--endpoint", emu.address)
    assert code == 0
    assert "Rung 1 (fallback[0]): Quota (project p, us-central1)" in text and "needs 6" in text


def test_a_refused_read_is_said_once_for_the_whole_ladder(tmp_path: Path, emu: EmulatorHandle,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """The limits are global to a project: its rungs share one read (a failing one is not
    retried per rung, so the one fault leaves every rung's limits unknown)."""
    emu.add_fault("quotas:permission:1")
    path = spec(tmp_path, fallback=[{"workers": {"replicas": 1}}])
    code, doc, err = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert code == 0 and doc["fallback"][0]["unreadable"] == doc["unreadable"]
    assert err.count("could not read the quota limits") == 1


def test_a_metric_the_project_has_no_entry_for_is_unknown(tmp_path: Path, emu: EmulatorHandle,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = spec(tmp_path, defaults={"image": "gcr.io/p/t:1", "machine_type": "g2-standard-8",
                                    "accelerator": {"type": "NVIDIA_L4", "count": 1}}, workers=None)
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    l4 = "aiplatform.googleapis.com/custom_model_training_nvidia_l4_gpus"
    assert code == 0 and quotas_of(doc)[l4] == (1, None, None)


def test_a_refused_read_is_a_warning_and_limits_unknown(tmp_path: Path, emu: EmulatorHandle,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    emu.add_fault("quotas:permission:1")
    code, doc, err = run(capsys, "quota", spec(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 0 and doc["fits"] is True
    assert all(q["limit"] is None and q["fits"] is None for q in doc["quotas"])
    assert "cloudquotas.quotas.get" in doc["unreadable"] and "roles/cloudquotas.viewer" in err


# --- submit's preflight -----------------------------------------------------------------------------

def test_submit_stops_before_create_with_exit_5(tmp_path: Path, emu: EmulatorHandle,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = run(capsys, "submit", spec(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 5 and doc["error"]["type"] == "NoCapacity" and doc["error"]["exit_code"] == 5
    message = doc["error"]["message"]
    for words in (T4, "needs 6 (workerPoolSpecs[0], workerPoolSpecs[1])", "limit is 4", "us-central1", "more quota",
                  "another region", "SPOT", "--no-quota-check", "job.yaml:", "key chief",
                  "a `fallback:` list in the spec"):
        assert words in message
    # The report beside the error, as `vxtrain quota -o json` writes it: which need is above which limit.
    assert doc["quota"]["fits"] is False and doc["quota"]["region"] == "us-central1"
    assert [(q["needed"], q["limit"], q["fits"]) for q in doc["quota"]["quotas"] if q["metric"] == T4] == [
        (6, 4, False)]
    assert emu.jobs() == []  # nothing created
    assert "Traceback" not in err


def test_submit_stops_before_anything_is_uploaded(tmp_path: Path, emu: EmulatorHandle,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """A python_package.source with no staging bucket fails at upload (exit 1): the preflight's
    exit 5 shows it ran first, and nothing reached the upload."""
    (tmp_path / "src" / "trainer").mkdir(parents=True)
    (tmp_path / "src" / "trainer" / "__init__.py").write_text("")
    (tmp_path / "src" / "trainer" / "task.py").write_text("print('hi')\n")
    path = spec(tmp_path, defaults={"machine_type": "n1-standard-8",
                                    "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 2},
                                    "python_package": {"source": "src", "module": "trainer.task",
                                                       "executor_image": "us-docker.pkg.dev/vertex-ai/training/"
                                                                         "pytorch-gpu.2-4.py310:latest"}})
    code, doc, _ = run(capsys, "submit", path, "--endpoint", emu.address, "-o", "json")
    assert (code, doc["error"]["type"]) == (5, "NoCapacity")
    code, doc, _ = run(capsys, "submit", path, "--endpoint", emu.address, "-o", "json", "--no-quota-check")
    assert code == 1 and "staging" in doc["error"]["message"]  # without the check: on to the upload
    assert emu.jobs() == []


def test_no_quota_check_sends_the_job_and_the_service_refuses_it(tmp_path: Path, emu: EmulatorHandle,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, _ = run(capsys, "submit", spec(tmp_path), "--endpoint", emu.address, "-o", "json",
                       "--no-quota-check")
    assert code == 4 and doc["error"]["type"] == "QuotaError" and T4 in doc["error"]["message"]
    assert emu.jobs() == []


@pytest.mark.parametrize("kind", ["permission", "disabled", "unimplemented"])
def test_a_refused_read_warns_and_the_create_goes_on(tmp_path: Path, emu: EmulatorHandle, kind: str,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    emu.add_fault(f"quotas:{kind}:1")
    code, doc, err = run(capsys, "submit", spec(tmp_path, workers={"replicas": 1}), "--endpoint", emu.address,
                         "-o", "json")
    assert code == 0 and doc["state"] == "JOB_STATE_QUEUED"
    assert "warning: could not read the quota limits" in err
    assert len(emu.jobs()) == 1


def test_a_job_that_fits_is_created(tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    code, doc, err = run(capsys, "submit", spec(tmp_path, workers={"replicas": 1}), "--endpoint", emu.address,
                         "-o", "json")
    assert code == 0 and "warning" not in err and len(emu.jobs()) == 1


@pytest.mark.slow
def test_target_local_runs_the_preflight_against_its_own_emulator(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The in-process emulator has no limits (every limit unknown, the job runs); its quota
    read is made, as a fault on it shows."""
    path = spec(tmp_path, workers=None, defaults={"image": "gcr.io/p/t:1", "machine_type": "n1-standard-4"},
                local={"command": ["python", "-c", "print('ok')"]})
    code, doc, err = run(capsys, "submit", path, "--target", "local", "-o", "json")
    assert code == 0 and doc["state"] == "JOB_STATE_SUCCEEDED" and "quota" not in err
    monkeypatch.setenv("VXTRAIN_EMULATOR_FAULTS", "quotas:unimplemented:1")
    code, doc, err = run(capsys, "submit", path, "--target", "local", "-o", "json")
    assert code == 0 and doc["state"] == "JOB_STATE_SUCCEEDED"
    assert "could not read the quota limits" in err and "does not serve the Cloud Quotas API" in err


def test_the_emulator_command_refuses_a_malformed_quota(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "emulator", "--port", "0", "--quota", "custom_model_training_cpus")
    assert code == 2 and "METRIC:REGION=N" in err


def test_the_python_api(tmp_path: Path, emu: EmulatorHandle) -> None:
    import vxtrain

    found = vxtrain.quota(spec(tmp_path), endpoint=emu.address)
    assert not found.fits and found.to_json()["quotas"][0]["limit"] == 4
    with pytest.raises(vxtrain.NoCapacity):
        vxtrain.submit(spec(tmp_path), endpoint=emu.address)
    assert emu.jobs() == []


# --- the Python API a fallback ladder calls per rung ------------------------------------------------

def test_preflight_and_check_quota_per_region(tmp_path: Path, emu: EmulatorHandle) -> None:
    from vxtrain import api

    job = api.load_job(spec(tmp_path)).custom_job
    said: list[str] = []
    with connect(endpoint=emu.address) as backend, heard(said.append):
        session = Session(backend=backend)
        here = preflight(session, job, project="p", region="us-central1")
        there = preflight(session, job, project="p", region="europe-west4")
        with pytest.raises(errors.NoCapacity) as short:
            check_quota(session, job, project="p", region="us-central1")
    assert isinstance(here, QuotaReport) and not here.fits and [r.metric for r in here.short] == [T4]
    assert there.fits and all(r.limit is None for r in there.rows)  # no limits given there
    assert short.value.exit_code == 5 and short.value.report == here and said == []


# --- the pure parts -------------------------------------------------------------------------------

def info(*entries: tuple[dict[str, str], Any]) -> dict[str, Any]:
    return {"metric": T4, "quotaId": "Q", "dimensionsInfos": [
        {"dimensions": dims, "details": {} if value is None else {"value": value}} for dims, value in entries]}


@pytest.mark.parametrize("quota, limit", [
    (info(({"region": "us-central1"}, "4"), ({}, "1")), 4),      # the region's entry wins
    (info(({"region": "us-east4"}, "4"), ({}, "1")), 1),         # else the one without a region key
    (info(({"region": "us-east4"}, "4")), None),                 # no entry applies
    (info(({"region": "us-central1"}, None)), 0),                # proto3 leaves a zero out
    (info(({"zone": "us-central1-a"}, "3")), 3),                 # no region key: applies to every region
    (info(), None),
])
def test_limit_in(quota: dict[str, Any], limit: int | None) -> None:
    assert limit_in(quota, "us-central1") == limit


def test_report_fits_only_where_both_are_known() -> None:
    found = [Need("T4", T4, None, 6), Need("CPUs", CPUS, None, None), Need("B200", None, None, 8),
             Need("x", "aiplatform.googleapis.com/x", None, 1)]
    infos = [info(({}, "8")), {"metric": CPUS, "dimensionsInfos": [{"details": {"value": "2"}}]},
             {"metric": "aiplatform.googleapis.com/x", "dimensionsInfos": [{"details": {"value": "-1"}}]}]
    rows = report(found, infos, project="p", region="r").rows
    assert [(r.limit, r.fits, r.quota_id) for r in rows] == [(8, True, "Q"), (2, None, None), (None, None, None),
                                                             (-1, None, None)]


def test_of_two_quotas_on_a_metric_the_regional_one_counts() -> None:
    global_one = {"metric": T4, "quotaId": "PerProject", "dimensions": [], "dimensionsInfos": [{"details": {"value": "99"}}]}
    regional = {"metric": T4, "quotaId": "PerProjectPerRegion", "dimensions": ["region"],
                "dimensionsInfos": [{"dimensions": {"region": "r"}, "details": {"value": "2"}}]}
    for infos in ([global_one, regional], [regional, global_one]):
        row = report([Need("T4", T4, None, 3)], infos, project="p", region="r").rows[0]
        assert (row.quota_id, row.limit, row.fits) == ("PerProjectPerRegion", 2, False)


# --- no test reaches Google -------------------------------------------------------------------------

def test_the_guard_refuses_the_real_cloud_quotas_endpoint() -> None:
    with pytest.raises(GoogleEndpointBlocked, match="cloudquotas.googleapis.com"):
        VertexBackend("us-central1").list_quota_infos("projects/p/locations/global/services/aiplatform.googleapis.com")


def test_a_cloud_quotas_client_built_without_vxtrain_cannot_reach_google() -> None:
    """gRPC's C core is below the socket guard: the channel goes to the closed proxy port."""
    from google.api_core import exceptions as gexc
    from google.auth.credentials import AnonymousCredentials
    from google.cloud.cloudquotas_v1 import CloudQuotasClient

    client = CloudQuotasClient(credentials=AnonymousCredentials())
    try:
        with pytest.raises(gexc.ServiceUnavailable, match="127.0.0.1:9"):
            client.list_quota_infos(parent="projects/p/locations/global/services/aiplatform.googleapis.com",
                                    retry=None, timeout=10)
    finally:
        client.transport.close()


def test_a_spot_job_that_is_short_is_not_told_to_use_spot(tmp_path: Path, emu: EmulatorHandle,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """9 replicas × 2 T4 under SPOT: 18 of the preemptible T4 quota's 16. The advice leaves
    out what the job already does, in `quota`'s text as in submit's error."""
    path = spec(tmp_path, workers={"replicas": 8}, scheduling={"strategy": "SPOT"})
    code, text, _ = run(capsys, "quota", path, "--endpoint", emu.address)
    assert code == 5 and "needs 18" in text and "strategy SPOT" not in text
    code, doc, _ = run(capsys, "submit", path, "--endpoint", emu.address, "-o", "json")
    assert code == 5 and "strategy SPOT" not in doc["error"]["message"]


# --- a metric no catalog row names, confirmed by the project's own ListQuotaInfos answer ------------

A100_SPOT = "aiplatform.googleapis.com/custom_model_training_preemptible_nvidia_a100_gpus"
A2_CPUS = "aiplatform.googleapis.com/custom_model_training_a2_cpus"


def a100_spot(tmp_path: Path, workers: int = 2) -> str:
    """A chief and ``workers`` workers of a2-highgpu-2g (2 × A100 40GB each) under SPOT: the
    catalog names no preemptible A100 metric (issue 27)."""
    return spec(tmp_path, defaults={"image": "gcr.io/p/t:1", "machine_type": "a2-highgpu-2g",
                                    "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 2}},
                workers={"replicas": workers} if workers else None, scheduling={"strategy": "SPOT"})


def test_a_pattern_name_the_project_lists_is_counted_with_its_limit(
        tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    """6 A100 under SPOT against the project's custom_model_training_preemptible_nvidia_a100_gpus:
    within 8 (exit 0), above 4 (exit 5); the row says where its name came from."""
    emu.quotas.set("custom_model_training_preemptible_nvidia_a100_gpus:us-central1=8")
    code, doc, _ = run(capsys, "quota", a100_spot(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 0 and doc["fits"] is True
    a100 = next(q for q in doc["quotas"] if q["resource"] == "NVIDIA_TESLA_A100 GPUs (SPOT)")
    assert a100 == {"metric": A100_SPOT, "quota_id": "custom_model_training_preemptible_nvidia_a100_gpus",
                    "needed": 6, "limit": 8, "fits": True, "resource": "NVIDIA_TESLA_A100 GPUs (SPOT)",
                    "source": "ListQuotaInfos"}
    # A Spot job's CPUs: no metric, no pattern (unchanged), and the rows from the catalog have no "source".
    assert quotas_of(doc)["a2 vCPUs (SPOT)"] == (3 * 24, None, None)
    assert all("source" not in q for q in doc["quotas"] if q is not a100)
    emu.quotas.set("custom_model_training_preemptible_nvidia_a100_gpus:us-central1=4")
    code, doc, _ = run(capsys, "quota", a100_spot(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 5 and doc["fits"] is False
    assert quotas_of(doc)[A100_SPOT] == (6, 4, False)


def test_a_pattern_name_the_project_does_not_list_stays_unknown(
        tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    """The on-demand A100 metric is listed, the preemptible one is not: never guessed, never
    the on-demand one."""
    emu.quotas.set("custom_model_training_nvidia_a100_gpus:us-central1=1")
    code, doc, _ = run(capsys, "quota", a100_spot(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 0 and doc["fits"] is True
    a100 = next(q for q in doc["quotas"] if q["resource"] == "NVIDIA_TESLA_A100 GPUs (SPOT)")
    assert a100 == {"metric": None, "quota_id": None, "needed": 6, "limit": None, "fits": None,
                    "resource": "NVIDIA_TESLA_A100 GPUs (SPOT)"}


def test_a_pattern_name_listed_for_another_region_only_stays_unknown(
        tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    emu.quotas.set("custom_model_training_preemptible_nvidia_a100_gpus:europe-west4=1")
    code, doc, _ = run(capsys, "quota", a100_spot(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 0 and A100_SPOT not in quotas_of(doc)
    assert quotas_of(doc)["NVIDIA_TESLA_A100 GPUs (SPOT)"] == (6, None, None)


def test_a_confirmed_pattern_name_in_the_text_report(tmp_path: Path, emu: EmulatorHandle,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    emu.quotas.set("custom_model_training_preemptible_nvidia_a100_gpus:us-central1=4")
    code, text, _ = run(capsys, "quota", a100_spot(tmp_path), "--endpoint", emu.address)
    assert code == 5
    assert "custom_model_training_preemptible_nvidia_a100_gpus *" in text
    assert "*: no catalog row names this metric" in text and "ListQuotaInfos" in text
    assert "needs 6" in text and "the limit is 4" in text
    code, text, _ = run(capsys, "quota", spec(tmp_path), "--endpoint", emu.address)  # catalog rows only
    assert code == 5 and "*" not in text and "ListQuotaInfos" not in text


def test_submit_stops_on_a_confirmed_pattern_name_and_the_emulator_enforces_it(
        tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    emu.quotas.set("custom_model_training_preemptible_nvidia_a100_gpus:us-central1=4")
    code, doc, _ = run(capsys, "submit", a100_spot(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert (code, doc["error"]["type"]) == (5, "NoCapacity")
    assert A100_SPOT in doc["error"]["message"] and "limit is 4" in doc["error"]["message"]
    assert [q["source"] for q in doc["quota"]["quotas"] if q["metric"] == A100_SPOT] == ["ListQuotaInfos"]
    code, doc, _ = run(capsys, "submit", a100_spot(tmp_path), "--endpoint", emu.address, "-o", "json",
                       "--no-quota-check")
    assert code == 4 and doc["error"]["type"] == "QuotaError" and A100_SPOT in doc["error"]["message"]
    assert emu.jobs() == []
    code, doc, _ = run(capsys, "submit", a100_spot(tmp_path, workers=1), "--endpoint", emu.address, "-o", "json")
    assert code == 0 and len(emu.jobs()) == 1  # 4 A100: within the limit


def test_a_cpu_family_s_pattern_name_the_project_lists(tmp_path: Path, emu: EmulatorHandle,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The quotas page keeps A2 CPUs apart but no source names the metric: the pattern's
    custom_model_training_a2_cpus counts once the project lists it."""
    path = spec(tmp_path, defaults={"image": "gcr.io/p/t:1", "machine_type": "a2-highgpu-1g",
                                    "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}}, workers=None)
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert code == 0 and quotas_of(doc)["a2 vCPUs"] == (12, None, None)
    emu.quotas.set("custom_model_training_a2_cpus:us-central1=8")
    code, doc, _ = run(capsys, "quota", path, "--endpoint", emu.address, "-o", "json")
    assert code == 5 and quotas_of(doc)[A2_CPUS] == (12, 8, False)
    assert [q["source"] for q in doc["quotas"] if q["metric"] == A2_CPUS] == ["ListQuotaInfos"]


def test_a_pattern_name_is_not_confirmed_by_an_unreadable_answer(
        tmp_path: Path, emu: EmulatorHandle, capsys: pytest.CaptureFixture[str]) -> None:
    """A SPOT A100 job with only pattern names is read for (it used to need no read at all);
    a refused read leaves them unknown."""
    emu.quotas.set("custom_model_training_preemptible_nvidia_a100_gpus:us-central1=4")
    emu.add_fault("quotas:permission:1")
    code, doc, err = run(capsys, "quota", a100_spot(tmp_path), "--endpoint", emu.address, "-o", "json")
    assert code == 0 and "unreadable" in doc and "could not read the quota limits" in err
    assert quotas_of(doc)["NVIDIA_TESLA_A100 GPUs (SPOT)"] == (6, None, None)


def test_the_emulator_does_not_warn_of_a_pattern_name(capsys: pytest.CaptureFixture[str]) -> None:
    from vxtrain.backends.emulator.quotas import parse_quota, unmatched

    assert unmatched(parse_quota("custom_model_training_preemptible_nvidia_a100_gpus:us-central1=4")) is None
    assert unmatched(parse_quota("custom_model_training_a2_cpus=4")) is None
    assert unmatched(parse_quota("custom_model_training_preemptible_nvidia_b200_gpus=4")) is not None


def test_report_confirms_a_candidate_only_where_listed_for_the_region() -> None:
    need = Need("A100 (SPOT)", None, None, 6, candidate=A100_SPOT)
    listed = {"metric": A100_SPOT, "quotaId": "Q",
              "dimensionsInfos": [{"dimensions": {"region": "r"}, "details": {"value": "4"}}]}
    [row] = report([need], [listed], project="p", region="r").rows
    assert (row.metric, row.quota_id, row.limit, row.fits, row.source) == (A100_SPOT, "Q", 4, False, "ListQuotaInfos")
    for infos in ([], [info(({}, "8"))], [{**listed, "dimensionsInfos": [
            {"dimensions": {"region": "elsewhere"}, "details": {"value": "4"}}]}]):
        [row] = report([need], infos, project="p", region="r").rows
        assert (row.metric, row.limit, row.fits, row.source) == (None, None, None, None)
        assert "source" not in row.to_json()
