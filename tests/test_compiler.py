"""Compile: job model → CustomJob / HyperparameterTuningJob REST JSON.

Every compiled dict is parsed into the real aiplatform_v1 message with
``json_format.ParseDict``, which refuses unknown fields and wrong types.
"""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import CustomJob, HyperparameterTuningJob
from google.protobuf import json_format

from tests.conftest import ROOT
from vxtrain import compiler
from vxtrain.planning import bandwidth as planning
from vxtrain import model

US_RS = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"
DEFAULTS = {"image": "us-docker.pkg.dev/p/train/bert:1", "command": ["python", "-m", "trainer.task"],
            "args": ["--epochs=3"], "env": {"NCCL_DEBUG": "INFO"},
            "disk": {"type": "pd-ssd", "size_gb": 200}}
GPU = {"machine_type": "n1-highmem-96", "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 8}}


def parse_custom_job(d: dict[str, Any]) -> CustomJob:
    """The real message; raises on any field Vertex would not know."""
    return CustomJob.wrap(json_format.ParseDict(d, CustomJob.pb(CustomJob())))


def parse_hpt_job(d: dict[str, Any]) -> HyperparameterTuningJob:
    pb = json_format.ParseDict(d, HyperparameterTuningJob.pb(HyperparameterTuningJob()))
    return HyperparameterTuningJob.wrap(pb)


def compiled(data: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's compile step: plan, resolve auto sizes, compile, and parse."""
    job = model.build(data)
    job = planning.resolve(job, planning.plan(job))
    out = compiler.compile_custom_job(job)
    parse_custom_job(out)
    return out


def spec(**pools: Any) -> dict[str, Any]:
    return {"display_name": "job", "region": "us-central1", "defaults": copy.deepcopy(DEFAULTS),
            "chief": dict(GPU), **pools}


def pools_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    return compiled(data)["jobSpec"]["workerPoolSpecs"]


# --- pool order, gaps, trailing drop ------------------------------------------------

@pytest.mark.parametrize(("roles", "shape"), [
    ((), "P"),
    (("workers",), "PP"),
    (("parameter_servers",), "P-P"),
    (("reduction_server",), "P-P"),
    (("evaluators",), "P--P"),
    (("workers", "evaluators"), "PP-P"),
    (("parameter_servers", "evaluators"), "P-PP"),
    (("workers", "reduction_server"), "PPP"),
    (("workers", "parameter_servers", "evaluators"), "PPPP"),
])
def test_pool_slots_gaps_and_trailing_drop(roles: tuple[str, ...], shape: str) -> None:
    extra = {"workers": {"replicas": 2, **GPU}, "parameter_servers": {"replicas": 2, "machine_type": "n1-standard-16"},
             "reduction_server": {"replicas": 4}, "evaluators": {"machine_type": "n1-standard-8"}}
    pools = pools_of(spec(**{r: extra[r] for r in roles}))
    assert "".join("P" if p else "-" for p in pools) == shape
    assert all(p == {} for p in pools if not p)


def test_an_integral_float_count_is_compiled_as_that_integer() -> None:
    """replicas: 8.0 is 8 (JSON Schema's integer, proto3 JSON's int64): never dropped."""
    [_, workers] = pools_of(spec(workers={"replicas": 8.0, **GPU}))
    assert workers["replicaCount"] == 8 and type(workers["replicaCount"]) is int


def test_pool_contents_and_key_order() -> None:
    [chief, workers] = pools_of(spec(workers={"replicas": 3, **GPU}))
    assert list(chief) == ["machineSpec", "replicaCount", "containerSpec", "diskSpec"]
    assert chief["machineSpec"] == {"machineType": "n1-highmem-96",
                                    "acceleratorType": "NVIDIA_TESLA_V100", "acceleratorCount": 8}
    assert chief["replicaCount"] == 1 and workers["replicaCount"] == 3
    assert chief["containerSpec"] == {"imageUri": DEFAULTS["image"], "command": DEFAULTS["command"],
                                      "args": ["--epochs=3"],
                                      "env": [{"name": "NCCL_DEBUG", "value": "INFO"}]}
    assert chief["diskSpec"] == {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200}


def test_pool_overrides_defaults_and_env_merges() -> None:
    [_, workers] = pools_of(spec(workers={"replicas": 2, "machine_type": "n1-standard-8",
                                          "args": ["--role=worker"], "env": {"A": "1"}}))
    assert workers["machineSpec"] == {"machineType": "n1-standard-8"}
    assert workers["containerSpec"]["args"] == ["--role=worker"]
    assert workers["containerSpec"]["env"] == [{"name": "NCCL_DEBUG", "value": "INFO"},
                                               {"name": "A", "value": "1"}]


def test_no_disk_no_empty_lists() -> None:
    [chief] = pools_of({"display_name": "j", "chief": {"machine_type": "n1-standard-4", "image": "i"}})
    assert chief == {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1,
                     "containerSpec": {"imageUri": "i"}}


# --- Reduction Server ---------------------------------------------------------------

def test_defaults_never_leak_into_reduction_server() -> None:
    pools = pools_of(spec(workers={"replicas": 4, **GPU}, reduction_server={"replicas": "auto"}))
    assert pools[2] == {"machineSpec": {"machineType": "n1-highcpu-16"}, "replicaCount": 16,
                        "containerSpec": {"imageUri": US_RS}}


@pytest.mark.parametrize(("region", "prefix"), [
    ("europe-west4", "europe"), ("asia-east1", "asia"), ("us-central1", "us"), (None, "us")])
def test_reduction_server_image_follows_region(region: str | None, prefix: str) -> None:
    data = spec(reduction_server={"replicas": 2})
    data["region"] = region
    image = pools_of(data)[2]["containerSpec"]["imageUri"]
    assert image == f"{prefix}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"


def test_only_the_reduction_server_gets_the_reduction_server_image() -> None:
    pools = pools_of({"display_name": "j", "chief": {"machine_type": "n1-standard-4"},
                      "reduction_server": {"replicas": 1}})
    assert "containerSpec" not in pools[0]  # invalid spec (no image), but nothing made up
    assert pools[2]["containerSpec"] == {"imageUri": US_RS}


def test_reduction_server_own_image_is_kept() -> None:
    pools = pools_of(spec(reduction_server={"replicas": 2, "image": "gcr.io/p/rs:2"}))
    assert pools[2]["containerSpec"] == {"imageUri": "gcr.io/p/rs:2"}


# --- python packages ------------------------------------------------------------------

PKG = {"executor_image": "us-docker.pkg.dev/vertex-ai/training/tf-gpu.2-12.py310:latest",
       "package_uris": ["gs://b/trainer-0.1.tar.gz"], "module": "trainer.task"}


def test_python_package_pool() -> None:
    data = {"display_name": "pkg", "defaults": {"python_package": PKG, "args": ["--lr=0.1"],
                                                 "env": {"X": "y"}},
            "chief": {"machine_type": "n1-standard-8"}}
    [chief] = pools_of(data)
    assert "containerSpec" not in chief
    assert chief["pythonPackageSpec"] == {
        "executorImageUri": PKG["executor_image"], "packageUris": PKG["package_uris"],
        "pythonModule": "trainer.task", "args": ["--lr=0.1"], "env": [{"name": "X", "value": "y"}]}


def test_pool_image_beats_default_python_package_and_vice_versa() -> None:
    data = {"display_name": "mix", "defaults": {"python_package": PKG},
            "chief": {"machine_type": "n1-standard-8", "image": "gcr.io/p/i:1"},
            "workers": {"machine_type": "n1-standard-8"}}
    chief, workers = pools_of(data)
    assert chief["containerSpec"] == {"imageUri": "gcr.io/p/i:1"}
    assert "pythonPackageSpec" in workers
    data = spec(workers={"machine_type": "n1-standard-8", "python_package": PKG})
    assert "containerSpec" not in pools_of(data)[1]


# --- job-level fields ------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "seconds"), [("90s", "90s"), ("30m", "1800s"), ("12h", "43200s"),
                                               ("7d", "604800s"), (3600, "3600s"), ("1.5h", "5400s")])
def test_scheduling_durations(raw: Any, seconds: str) -> None:
    data = spec(scheduling={"timeout": raw, "max_wait": raw, "strategy": "FLEX_START",
                            "restart_job_on_worker_restart": True, "disable_retries": False})
    sched = compiled(data)["jobSpec"]["scheduling"]
    assert sched == {"timeout": seconds, "restartJobOnWorkerRestart": True, "strategy": "FLEX_START",
                     "maxWaitDuration": seconds, "disableRetries": False}


def test_partial_scheduling_and_no_scheduling() -> None:
    assert compiled(spec(scheduling={"strategy": "SPOT"}))["jobSpec"]["scheduling"] == {"strategy": "SPOT"}
    assert "scheduling" not in compiled(spec())["jobSpec"]
    assert "scheduling" not in compiled(spec(scheduling={}))["jobSpec"]


def test_job_level_fields_and_order() -> None:
    data = spec(labels={"team": "nlp"}, service_account="t@p.iam.gserviceaccount.com",
                network="projects/1/global/networks/v", base_output_dir="gs://b/runs/1",
                tensorboard="projects/p/locations/us-central1/tensorboards/1",
                enable_web_access=True, scheduling={"timeout": "2d"})
    out = compiled(data)
    assert list(out) == ["displayName", "labels", "jobSpec"]
    assert out["labels"] == {"team": "nlp"}
    assert list(out["jobSpec"]) == ["workerPoolSpecs", "scheduling", "serviceAccount", "network",
                                    "baseOutputDirectory", "tensorboard", "enableWebAccess"]
    assert out["jobSpec"]["baseOutputDirectory"] == {"outputUriPrefix": "gs://b/runs/1"}
    msg = parse_custom_job(out)
    assert msg.job_spec.scheduling.timeout.total_seconds() == 2 * 86400
    assert msg.job_spec.enable_web_access is True


def test_custom_job_spec_is_the_job_spec_part() -> None:
    job = model.build(spec(workers={"replicas": 2, **GPU}))
    assert compiler.compile_custom_job_spec(job) == compiler.compile_custom_job(job)["jobSpec"]


def test_compile_is_deterministic_and_does_not_touch_the_job() -> None:
    job = model.build(spec(workers={"replicas": 2, **GPU}, extra={"jobSpec": {"models": ["m"]}}))
    before = copy.deepcopy(job)
    first = json.dumps(compiler.compile_custom_job(job))
    compiler.compile_custom_job(job)["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"].append("x")
    assert json.dumps(compiler.compile_custom_job(job)) == first
    assert job == before


def test_parsed_message_matches() -> None:
    msg = parse_custom_job(compiled(spec(workers={"replicas": 4, **GPU}, reduction_server={"replicas": "auto"})))
    specs = msg.job_spec.worker_pool_specs
    assert [s.replica_count for s in specs] == [1, 4, 16]
    assert specs[2].container_spec.image_uri == US_RS
    assert specs[0].machine_spec.accelerator_count == 8


# --- the job fields of 2025-26 ------------------------------------------------------------------

CTX = "projects/p/locations/us-central1/metadataStores/default/contexts/"


def test_newer_job_fields_compile_to_custom_job_spec_fields() -> None:
    data = spec(psc_interface={"network_attachment": "att", "dns_peering": [
                    {"domain": "corp.example.", "target_project": "p2", "target_network": "vpc"}]},
                reserved_ip_ranges=["vertex-range"], enable_dashboard_access=True,
                experiment=CTX + "bert", experiment_run=CTX + "bert-1", protected_artifact_location_id="europe-west4")
    job_spec = compiled(data)["jobSpec"]
    assert job_spec["pscInterfaceConfig"] == {"networkAttachment": "att", "dnsPeeringConfigs": [
        {"domain": "corp.example.", "targetProject": "p2", "targetNetwork": "vpc"}]}
    assert (job_spec["reservedIpRanges"], job_spec["enableDashboardAccess"]) == (["vertex-range"], True)
    assert (job_spec["experiment"], job_spec["experimentRun"]) == (CTX + "bert", CTX + "bert-1")
    assert job_spec["protectedArtifactLocationId"] == "europe-west4"
    parsed = parse_custom_job(compiled(data)).job_spec
    assert parsed.psc_interface_config.dns_peering_configs[0].target_network == "vpc"
    assert parsed.experiment_run == CTX + "bert-1" and parsed.enable_dashboard_access


def test_mounts_and_partition_compile_per_pool_and_come_from_defaults() -> None:
    nfs = {"server": "10.0.0.2", "path": "/data", "mount_point": "data"}
    lustre = {"instance_ip": "10.0.0.3", "volume_handle": "vh", "filesystem": "fs", "mount_point": "l"}
    data = spec(defaults={**DEFAULTS, "nfs_mounts": [nfs]},
                chief={"machine_type": "a2-highgpu-1g", "lustre_mounts": [lustre],
                       "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1, "partition_size": "1g.5gb"}},
                workers={"replicas": 2, **GPU}, reduction_server={"replicas": 2})
    pools = compiled(data)["jobSpec"]["workerPoolSpecs"]
    assert pools[0]["machineSpec"]["gpuPartitionSize"] == "1g.5gb"
    assert pools[0]["nfsMounts"] == pools[1]["nfsMounts"] == [{"server": "10.0.0.2", "path": "/data",
                                                                "mountPoint": "data"}]
    assert pools[0]["lustreMounts"] == [{"instanceIp": "10.0.0.3", "volumeHandle": "vh", "filesystem": "fs",
                                         "mountPoint": "l"}]
    assert "lustreMounts" not in pools[1] and "gpuPartitionSize" not in pools[1]["machineSpec"]
    assert "nfsMounts" not in pools[2]  # the Reduction Server takes nothing from defaults
    parsed = parse_custom_job(compiled(data)).job_spec.worker_pool_specs
    assert parsed[0].machine_spec.gpu_partition_size == "1g.5gb" and parsed[1].nfs_mounts[0].mount_point == "data"


def test_unset_newer_fields_are_not_sent() -> None:
    job_spec = compiled(spec())["jobSpec"]
    assert not {"pscInterfaceConfig", "reservedIpRanges", "enableDashboardAccess", "experiment", "experimentRun",
                "protectedArtifactLocationId"} & set(job_spec)
    assert not {"nfsMounts", "lustreMounts"} & set(job_spec["workerPoolSpecs"][0])


# --- extra ----------------------------------------------------------------------------------

def test_extra_is_deep_merged_last() -> None:
    extra = {"jobSpec": {"workerPoolSpecs": [{}, {"nfsMounts": [{"server": "10.0.0.2", "path": "/d",
                                                                  "mountPoint": "data"}]}],
                         "enableDashboardAccess": True, "scheduling": {"timeout": "60s"}},
             "encryptionSpec": {"kmsKeyName": "projects/p/locations/l/keyRings/r/cryptoKeys/k"},
             "labels": {"cost": "a"}}
    data = spec(workers={"replicas": 2, **GPU}, labels={"team": "nlp"}, extra=extra,
                scheduling={"timeout": "2d", "strategy": "SPOT"})
    out = compiled(data)
    assert out["labels"] == {"team": "nlp", "cost": "a"}
    assert out["encryptionSpec"]["kmsKeyName"].endswith("/k")
    pools = out["jobSpec"]["workerPoolSpecs"]
    assert "nfsMounts" not in pools[0] and pools[1]["nfsMounts"][0]["server"] == "10.0.0.2"
    assert pools[1]["replicaCount"] == 2
    assert out["jobSpec"]["scheduling"] == {"timeout": "60s", "strategy": "SPOT"}
    assert out["jobSpec"]["enableDashboardAccess"] is True


def test_deep_merge_rules() -> None:
    merge = compiler.deep_merge
    assert merge({"a": {"b": 1, "c": 2}}, {"a": {"c": 3}}) == {"a": {"b": 1, "c": 3}}
    assert merge({"a": 1}, {"a": {"b": 2}}) == {"a": {"b": 2}}
    # workerPoolSpecs: by position (a pool's position is its role); longer lists append
    pools = [{"a": 1}, {"b": 1}]
    assert merge({"workerPoolSpecs": pools}, {"workerPoolSpecs": [{}, {"b": 2}, {"c": 3}]}) == {
        "workerPoolSpecs": [{"a": 1}, {"b": 2}, {"c": 3}]}
    assert merge({"workerPoolSpecs": pools}, {"workerPoolSpecs": [{"a": 2}]}) == {
        "workerPoolSpecs": [{"a": 2}, {"b": 1}]}
    # any other list is replaced whole, of scalars or of mappings
    assert merge({"args": ["--x", "1"]}, {"args": ["--y"]}) == {"args": ["--y"]}
    assert merge({"nfsMounts": [{"a": 1}]}, {"nfsMounts": [{}, {"b": 2}]}) == {"nfsMounts": [{}, {"b": 2}]}


def test_env_merges_by_name() -> None:
    base = [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "A", "value": "1"}]
    over = [{"name": "FOO", "value": "bar"}, {"name": "A", "value": "2"}]
    assert compiler.deep_merge({"env": base}, {"env": over}) == {"env": [
        {"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "A", "value": "2"}, {"name": "FOO", "value": "bar"}]}
    assert base[1] == {"name": "A", "value": "1"}  # inputs untouched


def test_extra_env_keeps_the_compiled_env() -> None:
    """An ``extra`` env entry adds to the compiled env (NCCL_DEBUG stays), matched by name, not
    by position; an entry of the same name replaces it, and other keys (args) merge alongside."""
    extra = {"jobSpec": {"workerPoolSpecs": [{"containerSpec": {"env": [{"name": "FOO", "value": "bar"}]}}]}}
    out = compiled(spec(extra=extra))
    env = out["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["env"]
    assert env == [{"name": "NCCL_DEBUG", "value": "INFO"}, {"name": "FOO", "value": "bar"}]
    over = {"jobSpec": {"workerPoolSpecs": [{"containerSpec": {"env": [{"name": "NCCL_DEBUG", "value": "WARN"}],
                                                                "args": ["--epochs=5"]}}]}}
    container = compiled(spec(extra=over))["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert container["env"] == [{"name": "NCCL_DEBUG", "value": "WARN"}]
    assert container["args"] == ["--epochs=5"]


# --- HyperparameterTuningJob ------------------------------------------------------------

STUDY = {"metric": {"id": "accuracy", "goal": "maximize"},
         "parameters": {"learning_rate": {"type": "double", "min": 0.0001, "max": 0.1, "scale": "log"},
                        "batch_size": {"type": "discrete", "values": [32, 64, 128]},
                        "optimizer": {"type": "categorical", "values": ["adam", "sgd"]},
                        "layers": {"type": "integer", "min": 1, "max": 4, "scale": "linear"},
                        "decay": {"type": "double", "min": 0.5, "max": 0.99, "scale": "reverse_log"}},
         "max_trials": 20, "parallel_trials": 4, "max_failed_trials": 2}


def test_hpt_job() -> None:
    job = model.build(spec(workers={"replicas": 2, **GPU}, labels={"t": "x"}, study=STUDY))
    out = compiler.compile_hpt_job(job)
    assert list(out) == ["displayName", "labels", "studySpec", "maxTrialCount", "parallelTrialCount",
                         "maxFailedTrialCount", "trialJobSpec"]
    assert out["studySpec"]["metrics"] == [{"metricId": "accuracy", "goal": "MAXIMIZE"}]
    params = {p["parameterId"]: p for p in out["studySpec"]["parameters"]}
    assert params["learning_rate"] == {"parameterId": "learning_rate", "scaleType": "UNIT_LOG_SCALE",
                                       "doubleValueSpec": {"minValue": 0.0001, "maxValue": 0.1}}
    assert params["layers"]["integerValueSpec"] == {"minValue": 1, "maxValue": 4}
    assert params["layers"]["scaleType"] == "UNIT_LINEAR_SCALE"
    assert params["decay"]["scaleType"] == "UNIT_REVERSE_LOG_SCALE"
    assert params["batch_size"]["discreteValueSpec"] == {"values": [32.0, 64.0, 128.0]}
    assert params["optimizer"] == {"parameterId": "optimizer",
                                   "categoricalValueSpec": {"values": ["adam", "sgd"]}}
    assert out["studySpec"]["algorithm"] == "ALGORITHM_UNSPECIFIED"
    assert (out["maxTrialCount"], out["parallelTrialCount"], out["maxFailedTrialCount"]) == (20, 4, 2)
    assert out["trialJobSpec"] == compiler.compile_custom_job_spec(job)
    msg = parse_hpt_job(out)
    assert msg.trial_job_spec.worker_pool_specs[1].replica_count == 2
    assert len(msg.study_spec.parameters) == 5


@pytest.mark.parametrize(("algorithm", "enum"), [(None, "ALGORITHM_UNSPECIFIED"),
                                                 ("default", "ALGORITHM_UNSPECIFIED"),
                                                 ("random", "RANDOM_SEARCH"), ("grid", "GRID_SEARCH")])
def test_hpt_algorithms(algorithm: str | None, enum: str) -> None:
    study = {**STUDY, "metrics": [{"id": "loss", "goal": "minimize"}, {"id": "acc", "goal": "maximize"}]}
    del study["metric"]
    if algorithm:
        study["algorithm"] = algorithm
    out = compiler.compile_hpt_job(model.build(spec(study=study)))
    assert out["studySpec"]["algorithm"] == enum
    assert [m["goal"] for m in out["studySpec"]["metrics"]] == ["MINIMIZE", "MAXIMIZE"]
    parse_hpt_job(out)


def test_hpt_minimal_and_without_study() -> None:
    study = {"metric": {"id": "a", "goal": "maximize"}, "parameters": {"x": {"type": "categorical",
                                                                          "values": [True, 1, "z"]}}}
    out = compiler.compile_hpt_job(model.build({"display_name": "m", "chief": {"image": "i"}, "study": study}))
    assert "maxTrialCount" not in out
    assert out["studySpec"]["parameters"][0]["categoricalValueSpec"] == {"values": ["true", "1", "z"]}
    parse_hpt_job(out)
    with pytest.raises(ValueError, match="no study"):
        compiler.compile_hpt_job(model.build(spec()))


# --- import budget -------------------------------------------------------------------------

def test_plan_and_compile_do_not_import_aiplatform() -> None:
    code = ("import sys, vxtrain.planning.bandwidth, vxtrain.compiler\n"
            "from vxtrain import model\n"
            "job = model.build({'display_name': 'x', 'chief': {'machine_type': 'n1-standard-4',"
            " 'image': 'i'}, 'extra': {'jobSpec': {'models': ['m']}}})\n"
            "vxtrain.compiler.compile_custom_job(vxtrain.planning.bandwidth.resolve(job, vxtrain.planning.bandwidth.plan(job)))\n"
            "from vxtrain.loading.document import Document, NativeSpec\n"
            "from vxtrain.validation import extra\n"
            "assert extra.check(job, NativeSpec({}, 'native', Document({}, 'x.yaml'))) == []\n"
            "bad = [m for m in sys.modules if m.startswith(('google.cloud.aiplatform', 'proto'))]\n"
            "print(bad)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- the repository's examples -----------------------------------------------------------------

EXAMPLES = sorted((ROOT / "configs" / "examples").glob("*.yaml"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_example_compiles_into_the_real_messages(path: Any) -> None:
    from vxtrain import api

    result = api.check_file(path, api.Options(environ={}, project="p", region="us-central1"))
    assert result.custom_job is not None, [d.render() for d in result.diagnostics]
    parse_custom_job(result.custom_job)
    if result.hyperparameter_tuning_job is not None:
        parse_hpt_job(result.hyperparameter_tuning_job)


# --- TPU topology, reservations, persistent resources --------------------------------

RESERVATION = "projects/p/zones/us-central1-a/reservations/r"


def test_tpu_topology_reservation_and_persistent_resource_compile_to_what_the_protos_parse() -> None:
    data = {"display_name": "tpu", "region": "us-central1", "persistent_resource": "train-pool",
            "chief": {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x4", "image": "i:1",
                      "reservation": {"affinity": "specific", "name": RESERVATION}}}
    out = compiled(data)
    message = parse_custom_job(out)
    spec = message.job_spec.worker_pool_specs[0].machine_spec
    assert spec.tpu_topology == "2x4"
    assert spec.reservation_affinity.reservation_affinity_type.name == "SPECIFIC_RESERVATION"
    assert spec.reservation_affinity.key == "compute.googleapis.com/reservation-name"
    assert list(spec.reservation_affinity.values) == [RESERVATION]
    assert message.job_spec.persistent_resource_id == "train-pool"


@pytest.mark.parametrize(("affinity", "api"), [("any", "ANY_RESERVATION"), ("none", "NO_RESERVATION")])
def test_any_and_no_reservation_carry_no_key_or_values(affinity: str, api: str) -> None:
    pools = pools_of(spec(workers={"replicas": 1, "reservation": {"affinity": affinity}}))
    assert pools[1]["machineSpec"]["reservationAffinity"] == {"reservationAffinityType": api}


def test_defaults_carry_topology_and_reservation_but_never_into_the_reduction_server() -> None:
    data = spec(workers={"replicas": 2, **GPU}, reduction_server={"replicas": 2})
    data["defaults"]["reservation"] = {"affinity": "any"}
    pools = pools_of(data)
    assert [("reservationAffinity" in p["machineSpec"]) for p in pools] == [True, True, False]
