"""What is checked is what is sent (issue 27): a value ``extra:`` sets on a worker pool
(machine type, accelerators, replica count, a pool in an empty slot) or on scheduling
gets the checks of the native key, at the ``extra`` line that set it; the cost plan and
``--max-hourly-cost`` read it too; and the compiled job stays exactly what was written."""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vxtrain import api, catalog, compiler
from vxtrain.diagnostics import Diagnostic
from vxtrain.planning import quota

IMAGE = "us-docker.pkg.dev/p/train/img:1"
H100 = {"machine_type": "a3-highgpu-8g", "accelerator": {"type": "NVIDIA_H100_80GB", "count": 8}, "image": IMAGE}
N1 = {"machine_type": "n1-standard-8", "image": IMAGE}
POOLS = "extra.jobSpec.workerPoolSpecs"


def run(tmp_path: Path, data: dict[str, Any], **options: Any) -> tuple[api.Result, list[str]]:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return api.check_file(path, api.Options(environ={}, **options)), path.read_text().splitlines()


def job(extra: dict[str, Any], region: str = "us-central1", **pools: Any) -> dict[str, Any]:
    return {"display_name": "sent", "region": region, **pools, "extra": extra}


def pools(*specs: dict[str, Any]) -> dict[str, Any]:
    return {"jobSpec": {"workerPoolSpecs": list(specs)}}


def only_error(result: api.Result) -> Diagnostic:
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert len(errors) == 1, [(d.code, d.path, d.message) for d in errors]
    return errors[0]


def at_line(d: Diagnostic, lines: list[str], text: str) -> None:
    assert d.line is not None and text in lines[d.line - 1], (d.line, lines)


# --- each false accept of the issue, refused at the extra line --------------------------

def test_accelerator_count_4_on_a3_highgpu_8g(tmp_path: Path) -> None:
    result, lines = run(tmp_path, job(pools({"machineSpec": {"acceleratorCount": 4}}), chief=H100))
    d = only_error(result)
    assert (d.code, d.path) == ("accelerator-count", f"{POOLS}[0].machineSpec.acceleratorCount")
    assert 'machine type "a3-highgpu-8g" are: [8]' in d.message
    at_line(d, lines, "acceleratorCount: 4")


def test_machine_type_a3_highgpu_4g_with_8_h100(tmp_path: Path) -> None:
    result, lines = run(tmp_path, job(pools({"machineSpec": {"machineType": "a3-highgpu-4g"}}), chief=H100))
    d = only_error(result)
    # The count the spec wrote no longer fits the machine extra sends: the native rule's
    # finding, at the line that changed the machine.
    assert (d.code, d.path) == ("accelerator-count", f"{POOLS}[0].machineSpec.machineType")
    assert 'machine type "a3-highgpu-4g" are: [4]' in d.message
    at_line(d, lines, "machineType: a3-highgpu-4g")


def test_a_second_pool_after_a_tpu_slice(tmp_path: Path) -> None:
    tpu = {"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x2", "image": IMAGE}
    second = {"machineSpec": {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x2"}, "replicaCount": 1,
              "containerSpec": {"imageUri": IMAGE}}
    result, lines = run(tmp_path, job(pools({}, second), chief=tpu))
    d = only_error(result)
    assert (d.code, d.path) == ("tpu-single-pool", f"{POOLS}[1]")
    assert "a TPU job has one worker pool" in d.message
    at_line(d, lines, "machineSpec:")


def test_a_pool_only_extra_writes_takes_nothing_from_defaults(tmp_path: Path) -> None:
    data = {"defaults": {"machine_type": "n1-standard-8", "image": IMAGE},
            **job(pools({}, {"replicaCount": 2, "containerSpec": {"imageUri": IMAGE}}), chief={})}
    result, lines = run(tmp_path, data)
    d = only_error(result)
    assert (d.code, d.path) == ("missing-machine-type", f"{POOLS}[1]")
    at_line(d, lines, "- replicaCount: 2")


def test_pool_0_replica_count_2(tmp_path: Path) -> None:
    result, lines = run(tmp_path, job(pools({"replicaCount": 2}), chief=N1))
    d = only_error(result)
    assert (d.code, d.path) == ("chief-replicas", f"{POOLS}[0].replicaCount")
    at_line(d, lines, "replicaCount: 2")


def test_flex_start_with_one_pool_moved_to_g2(tmp_path: Path) -> None:
    moved = {"machineSpec": {"machineType": "g2-standard-8", "acceleratorType": "NVIDIA_L4", "acceleratorCount": 1}}
    data = job(pools({}, moved), chief=H100, workers={**H100, "replicas": 2})
    data["scheduling"] = {"strategy": "FLEX_START"}
    result, lines = run(tmp_path, data)
    d = only_error(result)
    assert (d.code, d.path) == ("flex-start-mixed-machines", f"{POOLS}[1].machineSpec.machineType")
    assert "workers has g2-standard-8 with 1 x NVIDIA_L4" in d.message
    at_line(d, lines, "machineType: g2-standard-8")


def test_a_k80(tmp_path: Path) -> None:
    k80 = {"machineSpec": {"acceleratorType": "NVIDIA_TESLA_K80", "acceleratorCount": 1}}
    result, lines = run(tmp_path, job(pools(k80), chief=N1))
    d = only_error(result)
    assert (d.code, d.path) == ("accelerator-not-supported", f"{POOLS}[0].machineSpec.acceleratorType")
    assert "end of support" in d.message
    at_line(d, lines, "acceleratorType: NVIDIA_TESLA_K80")


def test_n1_standard_1(tmp_path: Path) -> None:
    result, lines = run(tmp_path, job(pools({"machineSpec": {"machineType": "n1-standard-1"}}), chief=N1))
    d = only_error(result)
    assert (d.code, d.path) == ("machine-not-offered", f"{POOLS}[0].machineSpec.machineType")
    at_line(d, lines, "machineType: n1-standard-1")


def test_an_h200_machine_in_a_region_without_h200(tmp_path: Path) -> None:
    h200 = {"machineSpec": {"machineType": "a3-ultragpu-8g", "acceleratorType": "NVIDIA_H200_141GB",
                            "acceleratorCount": 8}}
    result, lines = run(tmp_path, job(pools(h200), region="southamerica-east1", chief=N1))
    d = only_error(result)
    assert (d.code, d.path) == ("accelerator-not-in-region", f"{POOLS}[0].machineSpec.acceleratorType")
    at_line(d, lines, "acceleratorType: NVIDIA_H200_141GB")


def test_a_type_extra_sets_alone_is_refused_as_vertex_does(tmp_path: Path) -> None:
    result, lines = run(tmp_path, job(pools({"machineSpec": {"acceleratorType": "NVIDIA_TESLA_T4"}}), chief=N1))
    d = only_error(result)
    assert (d.code, d.path) == ("accelerator-type-and-count", f"{POOLS}[0].machineSpec.acceleratorType")
    at_line(d, lines, "acceleratorType: NVIDIA_TESLA_T4")


def test_a_type_extra_changes_keeps_the_spec_count(tmp_path: Path) -> None:
    data = job(pools({}, {"machineSpec": {"acceleratorType": "NVIDIA_TESLA_P4"}}), chief=N1,
               workers={**N1, "accelerator": {"type": "NVIDIA_TESLA_T4"}})
    result, _ = run(tmp_path, data)
    assert result.valid, result.diagnostics
    assert result.job is not None and result.job.pools["workers"].accelerator is not None
    assert (result.job.pools["workers"].accelerator.type, result.job.pools["workers"].accelerator.count) == (
        "NVIDIA_TESLA_P4", 1)


def test_an_unknown_accelerator_name_is_reported_once(tmp_path: Path) -> None:
    bad = {"machineSpec": {"acceleratorType": "NVIDIA_TESLA_FOO", "acceleratorCount": 1}}
    result, _ = run(tmp_path, job(pools(bad), chief=N1))
    assert only_error(result).code == "extra-enum"


def test_the_native_keys_inherited_from_defaults_stay_located_there(tmp_path: Path) -> None:
    data = job(pools({"machineSpec": {"acceleratorCount": 3}}), chief={"image": IMAGE})
    data = {"defaults": {"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}},
            **data}
    result, lines = run(tmp_path, data)
    d = only_error(result)
    assert (d.code, d.path) == ("accelerator-count", f"{POOLS}[0].machineSpec.acceleratorCount")
    at_line(d, lines, "acceleratorCount: 3")


def test_a_disk_size_extra_sets_gets_the_native_range(tmp_path: Path) -> None:
    data = job(pools({"diskSpec": {"bootDiskSizeGb": 50}}), chief=N1)
    data = {"defaults": {"disk": {"type": "pd-standard", "size_gb": 200}}, **data}
    result, lines = run(tmp_path, data)
    d = only_error(result)
    assert (d.code, d.path) == ("schema-minimum", f"{POOLS}[0].diskSpec.bootDiskSizeGb")
    assert "below the minimum of 100" in d.message
    at_line(d, lines, "bootDiskSizeGb: 50")


def test_a_replica_count_of_the_wrong_type_is_reported_once(tmp_path: Path) -> None:
    result, _ = run(tmp_path, job(pools({}, {"replicaCount": "many"}), chief=N1, workers=N1))
    d = only_error(result)
    assert (d.code, d.path) == ("extra-type", f"{POOLS}[1].replicaCount")


def test_a_strategy_only_the_api_names_is_left_to_extra_checks(tmp_path: Path) -> None:
    result, _ = run(tmp_path, job({"jobSpec": {"scheduling": {"strategy": "ON_DEMAND"}}}, chief=N1))
    assert result.valid, result.diagnostics


def test_env_extra_gives_the_pools_code_gets_the_env_rules(tmp_path: Path) -> None:
    env = {"containerSpec": {"env": [{"name": "FINE", "value": "1"}, {"name": "1BAD", "value": "x"}]}}
    data = {"defaults": {"env": {"SHARED": "1"}}, **job(pools(env), chief=N1, workers=N1)}
    result, lines = run(tmp_path, data)
    d = only_error(result)
    assert (d.code, d.path) == ("bad-env-name", f"{POOLS}[0].containerSpec.env[1].name")
    at_line(d, lines, "name: 1BAD")
    assert result.job is not None and result.job.pools["chief"].env == {"SHARED": "1", "FINE": "1", "1BAD": "x"}


# --- a pool's code in extra: containerSpec, pythonPackageSpec (issue 34) ------------------

PREBUILT = "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest"
PACKAGE = {"executorImageUri": PREBUILT, "packageUris": ["gs://b/trainer-0.1.tar.gz"], "pythonModule": "trainer.task"}


def test_an_image_extra_gives_a_pool_without_code_is_not_missing_image(tmp_path: Path) -> None:
    result, _ = run(tmp_path, job(pools({"containerSpec": {"imageUri": IMAGE, "args": ["--epochs", "3"]}}),
                                  chief={"machine_type": "n1-standard-8"}))
    assert result.valid, result.diagnostics
    assert result.job is not None and result.custom_job is not None
    assert (result.job.pools["chief"].image, result.job.pools["chief"].args) == (IMAGE, ["--epochs", "3"])
    assert result.custom_job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"] == {
        "imageUri": IMAGE, "args": ["--epochs", "3"]}


def test_the_command_and_args_extra_gives_replace_the_pools_own(tmp_path: Path) -> None:
    chief = {**N1, "command": ["python", "a.py"], "args": ["--x"]}
    result, _ = run(tmp_path, job(pools({"containerSpec": {"command": ["python", "-m", "b"]}}), chief=chief))
    assert result.valid, result.diagnostics
    assert result.job is not None
    assert (result.job.pools["chief"].command, result.job.pools["chief"].args) == (["python", "-m", "b"], ["--x"])


def test_a_python_package_extra_gives_a_pool_without_code_is_sent_alone(tmp_path: Path) -> None:
    from google.cloud.aiplatform_v1.types import CustomJob
    from google.protobuf import json_format

    result, _ = run(tmp_path, job(pools({"pythonPackageSpec": PACKAGE}), chief={"machine_type": "n1-standard-8"}))
    assert result.valid, result.diagnostics
    assert result.job is not None and result.custom_job is not None
    pkg = result.job.pools["chief"].python_package
    assert pkg is not None and (pkg.executor_image, pkg.module) == (PREBUILT, "trainer.task")
    sent = result.custom_job["jobSpec"]["workerPoolSpecs"][0]
    assert sent["pythonPackageSpec"] == PACKAGE and "containerSpec" not in sent  # one task: the oneof holds
    json_format.ParseDict(result.custom_job, CustomJob.pb(CustomJob()))


def test_a_python_package_without_its_module_is_named_as_such(tmp_path: Path) -> None:
    package = {k: v for k, v in PACKAGE.items() if k != "pythonModule"}
    for data in (job(pools({"pythonPackageSpec": package}), chief={"machine_type": "n1-standard-8"}),
                 job(pools({}, {"replicaCount": 1, "machineSpec": {"machineType": "n1-standard-8"},
                                "pythonPackageSpec": package}), chief=N1)):
        result, lines = run(tmp_path, data)
        d = only_error(result)
        assert d.code == "missing-key" and d.path.endswith("].pythonPackageSpec"), d
        assert "'pythonModule'" in d.message
        at_line(d, lines, "pythonPackageSpec:")


def test_an_executor_image_extra_sets_gets_the_prebuilt_rule(tmp_path: Path) -> None:
    result, lines = run(tmp_path, job(pools({"pythonPackageSpec": {**PACKAGE, "executorImageUri": IMAGE}}),
                                      chief={"machine_type": "n1-standard-8"}))
    d = only_error(result)
    assert (d.code, d.path) == ("package-executor-image", f"{POOLS}[0].pythonPackageSpec.executorImageUri")
    at_line(d, lines, f"executorImageUri: {IMAGE}")


def test_a_module_extra_sets_over_the_pools_package_is_looked_for_in_its_source(tmp_path: Path) -> None:
    (tmp_path / "code" / "trainer").mkdir(parents=True)
    (tmp_path / "code" / "trainer" / "task.py").write_text("")
    chief = {**{k: v for k, v in N1.items() if k != "image"},
             "python_package": {"executor_image": PREBUILT, "module": "trainer.task", "source": "code"}}
    result, lines = run(tmp_path, job(pools({"pythonPackageSpec": {"pythonModule": "trainer.other"}}), chief=chief))
    d = only_error(result)
    assert (d.code, d.path) == ("package-module-missing", f"{POOLS}[0].pythonPackageSpec.pythonModule")
    at_line(d, lines, "pythonModule: trainer.other")


def test_the_other_kind_of_code_is_one_conflict_said_once(tmp_path: Path) -> None:
    result, _ = run(tmp_path, job(pools({"pythonPackageSpec": PACKAGE}), chief=N1))
    d = only_error(result)
    assert (d.code, d.path) == ("extra-oneof", f"{POOLS}[0].pythonPackageSpec")


def test_env_a_package_extra_gives_gets_the_env_rules(tmp_path: Path) -> None:
    package = {**PACKAGE, "env": [{"name": "1BAD", "value": "x"}]}
    result, lines = run(tmp_path, job(pools({"pythonPackageSpec": package}), chief={"machine_type": "n1-standard-8"}))
    d = only_error(result)
    assert (d.code, d.path) == ("bad-env-name", f"{POOLS}[0].pythonPackageSpec.env[0].name")
    at_line(d, lines, "name: 1BAD")


# --- acceleratorCount: 0, and a pool only extra writes without replicaCount (issue 34) --------

def test_an_accelerator_count_of_0_is_refused_as_the_native_key_is(tmp_path: Path) -> None:
    a2 = {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}, "image": IMAGE}
    result, lines = run(tmp_path, job(pools({"machineSpec": {"acceleratorCount": 0}}), chief=a2))
    d = only_error(result)
    assert (d.code, d.path) == ("schema-minimum", f"{POOLS}[0].machineSpec.acceleratorCount")
    at_line(d, lines, "acceleratorCount: 0")
    native, _ = run(tmp_path, {"display_name": "sent", "region": "us-central1",
                               "chief": {**a2, "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 0}}})
    assert only_error(native).message == d.message


def test_an_accelerator_count_of_0_without_a_type_means_none(tmp_path: Path) -> None:
    result, _ = run(tmp_path, job(pools({"machineSpec": {"acceleratorCount": "0"}}), chief=N1))
    assert result.valid, result.diagnostics


def test_a_pool_only_extra_writes_without_a_replica_count_is_refused(tmp_path: Path) -> None:
    evaluator = {"machineSpec": {"machineType": "n1-standard-4"}, "containerSpec": {"imageUri": IMAGE}}
    result, lines = run(tmp_path, job(pools({}, {}, {}, evaluator), chief=N1), cost=True)
    d = only_error(result)
    assert (d.code, d.path) == ("extra-pool-replicas", f"{POOLS}[3]")
    assert "add replicaCount: N" in d.message
    at_line(d, lines, "machineSpec:")
    given, _ = run(tmp_path, job(pools({}, {}, {}, {**evaluator, "replicaCount": 2}), chief=N1), cost=True)
    assert given.valid, given.diagnostics
    assert given.cost is not None and given.custom_job is not None
    assert [p.replicas for p in given.cost.pools if p.role == "evaluators"] == [2]
    assert given.custom_job["jobSpec"]["workerPoolSpecs"][3]["replicaCount"] == 2


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(slot=st.sampled_from([1, 3]), replicas=st.none() | st.sampled_from([1, 2, "3"]),
       code=st.sampled_from(["containerSpec", "pythonPackageSpec"]))
def test_what_is_priced_is_what_is_sent(slot: int, replicas: int | str | None, code: str) -> None:
    """Never price one replica and send none: a valid job's priced replicas are its sent replicaCounts."""
    extra_pool: dict[str, Any] = {"machineSpec": {"machineType": "n1-standard-4"},
                                  code: {"imageUri": IMAGE} if code == "containerSpec" else PACKAGE}
    if replicas is not None:
        extra_pool["replicaCount"] = replicas
    data = job(pools(*([{}] * slot), extra_pool), chief=N1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "job.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        result = api.check_file(path, api.Options(environ={}, cost=True))
    if replicas is None:
        assert not result.valid and result.custom_job is None
        return
    assert result.valid, result.diagnostics
    assert result.cost is not None and result.custom_job is not None
    sent = {i: int(p["replicaCount"]) for i, p in enumerate(result.custom_job["jobSpec"]["workerPoolSpecs"]) if p}
    priced = {catalog_index(p.role): p.replicas for p in result.cost.pools}
    assert sent == priced


def catalog_index(role: str) -> int:
    return {"chief": 0, "workers": 1, "parameter_servers": 2, "evaluators": 3}[role]


# --- the price and the quota read the job as sent -----------------------------------------

def test_spot_in_extra_is_priced_and_counted_as_spot(tmp_path: Path) -> None:
    n1_t4 = {**N1, "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}}
    via_extra, _ = run(tmp_path, job({"jobSpec": {"scheduling": {"strategy": "SPOT"}}}, chief=n1_t4), cost=True)
    native, _ = run(tmp_path, {"display_name": "sent", "region": "us-central1", "chief": n1_t4,
                               "scheduling": {"strategy": "SPOT"}}, cost=True)
    assert via_extra.cost is not None and native.cost is not None
    assert via_extra.cost.pricing == native.cost.pricing == "spot"
    assert via_extra.cost.pools == native.cost.pools
    assert via_extra.custom_job is not None and quota.strategy_of(via_extra.custom_job) == "SPOT"


def test_max_hourly_cost_sees_extras_replica_count(tmp_path: Path) -> None:
    a2 = {"machine_type": "a2-ultragpu-8g", "accelerator": {"type": "NVIDIA_A100_80GB", "count": 8}, "image": IMAGE}
    data = job(pools({}, {"replicaCount": 500}), chief=N1, workers=a2)
    result, _ = run(tmp_path, data, max_hourly_cost=1.0)
    assert only_error(result).code == "max-hourly-cost"
    planned, _ = run(tmp_path, data, cost=True)
    assert planned.cost is not None
    assert [p.replicas for p in planned.cost.pools if p.role == "workers"] == [500]


# --- the job sent is the one written -------------------------------------------------------

def test_the_compiled_job_is_extra_merged_over_the_spec_as_written(tmp_path: Path) -> None:
    evaluator = {"machineSpec": {"machineType": "n1-standard-4"}, "replicaCount": 1,
                 "containerSpec": {"imageUri": IMAGE}}
    data = job(pools({}, {"replicaCount": "3", "diskSpec": {"bootDiskSizeGb": 200}}, {}, evaluator),
               chief=N1, workers=N1)
    result, _ = run(tmp_path, data)
    assert result.valid, result.diagnostics
    assert result.custom_job is not None and result.job is not None
    specs = result.custom_job["jobSpec"]["workerPoolSpecs"]
    assert specs[1]["replicaCount"] == "3" and specs[1]["diskSpec"] == {"bootDiskSizeGb": 200}
    assert specs[2] == {} and specs[3] == evaluator  # a pool only extra writes is sent as written
    # ... while the model holds the job as sent: what the plans and a local run read
    assert result.job.pools["workers"].replicas == 3 and result.job.pools["evaluators"].machine_type == "n1-standard-4"
    written = {k: v for k, v in data.items() if k != "extra"}
    plain, _ = run(tmp_path, written)
    assert plain.custom_job is not None
    assert result.custom_job == compiler.deep_merge(plain.custom_job, data["extra"])


# --- any machine field extra sets is checked like the native key ----------------------------

_MACHINES = sorted(catalog.training_machine_types())
_ACCELERATORS = sorted(catalog.accelerator_types())


def _check(data: dict[str, Any]) -> api.Result:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "job.yaml"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return api.check_file(path, api.Options(environ={}))


def _errors(data: dict[str, Any]) -> list[tuple[str, str]]:
    return sorted((d.code, d.message) for d in _check(data).diagnostics if d.severity == "error")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(machine=st.sampled_from(_MACHINES),
       accelerator=st.none() | st.tuples(st.sampled_from(_ACCELERATORS), st.sampled_from([1, 2, 3, 4, 8, 16])),
       replicas=st.sampled_from([1, 2]))
def test_a_machine_field_in_extra_is_checked_like_the_native_key(
        machine: str, accelerator: tuple[str, int] | None, replicas: int) -> None:
    native_pool: dict[str, Any] = {"machine_type": machine, "image": IMAGE, "replicas": replicas}
    machine_spec: dict[str, Any] = {"machineType": machine}
    if accelerator is not None:
        native_pool["accelerator"] = {"type": accelerator[0], "count": accelerator[1]}
        machine_spec.update(acceleratorType=accelerator[0], acceleratorCount=accelerator[1])
    head = {"display_name": "sent", "region": "us-central1"}
    native = {**head, "chief": native_pool}
    via_extra = {**head, "chief": {"machine_type": "n1-standard-8", "image": IMAGE},
                 "extra": pools({"machineSpec": machine_spec, "replicaCount": replicas})}
    assert _errors(via_extra) == _errors(native)
    sent = _check(via_extra)
    if sent.custom_job is not None:  # valid: sent exactly as written, extra merged last
        written = _check({k: v for k, v in via_extra.items() if k != "extra"})
        assert written.custom_job is not None
        assert sent.custom_job == compiler.deep_merge(written.custom_job, via_extra["extra"])


def test_a_pool_given_both_tasks_in_extra_is_one_oneof_error(tmp_path: Path) -> None:
    both = {"containerSpec": {"imageUri": IMAGE}, "pythonPackageSpec": PACKAGE}
    result, _ = run(tmp_path, job(pools(both), chief={"machine_type": "n1-standard-8"}))
    d = only_error(result)  # not also "missing-image": the pool has code, twice
    assert (d.code, d.path) == ("extra-oneof", f"{POOLS}[0].pythonPackageSpec")


def test_a_container_without_an_image_in_extra_still_runs_nothing(tmp_path: Path) -> None:
    result, _ = run(tmp_path, job(pools({"containerSpec": {"command": ["python", "t.py"]}}),
                                  chief={"machine_type": "n1-standard-8"}))
    assert only_error(result).code == "missing-image"


def test_an_unspecified_type_over_the_specs_leaves_a_count_without_a_type(tmp_path: Path) -> None:
    a2 = {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}, "image": IMAGE}
    result, lines = run(tmp_path, job(pools({"machineSpec": {"acceleratorType": "ACCELERATOR_TYPE_UNSPECIFIED"}}),
                                      chief=a2))
    d = only_error(result)
    assert (d.code, d.path) == ("accelerator-type-and-count", f"{POOLS}[0].machineSpec.acceleratorType")
    at_line(d, lines, "acceleratorType: ACCELERATOR_TYPE_UNSPECIFIED")


def test_no_type_and_no_count_strip_the_gpus_as_sent(tmp_path: Path) -> None:
    none = {"machineSpec": {"acceleratorType": "ACCELERATOR_TYPE_UNSPECIFIED", "acceleratorCount": 0}}
    a2 = {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}, "image": IMAGE}
    result, _ = run(tmp_path, job(pools(none), chief=a2))
    assert only_error(result).code == "missing-accelerator"  # an A2 without its GPUs
    t4 = {**N1, "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}}
    cpu, _ = run(tmp_path, job(pools(none), chief=t4), cost=True)
    assert cpu.valid, cpu.diagnostics
    assert cpu.job is not None and cpu.job.pools["chief"].accelerator is None  # priced as sent: no T4
    assert cpu.cost is not None and [line.kind for line in cpu.cost.pools[0].lines] == ["machine"]
