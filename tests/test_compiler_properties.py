"""Property: every valid job model compiles to a CustomJob that the real proto accepts,
with pools in slot order, ``{}`` gaps, no trailing empties, and a Reduction Server
pool untouched by ``defaults``."""
from __future__ import annotations

import string
from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import CustomJob, HyperparameterTuningJob
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vxtrain import catalog
from vxtrain import compiler
from vxtrain.planning import bandwidth as planning
from vxtrain import model, slots

#: (machine type, accelerator) pairs the catalog accepts; GPU ones can feed a Reduction Server.
MACHINES: list[tuple[str, dict[str, Any] | None]] = [
    ("n1-standard-4", None),
    ("n1-standard-8", {"type": "NVIDIA_TESLA_T4", "count": 1}),
    ("n1-highmem-96", {"type": "NVIDIA_TESLA_V100", "count": 8}),
    ("n1-standard-16", {"type": "NVIDIA_TESLA_V100", "count": 2}),
    ("a2-highgpu-1g", {"type": "NVIDIA_TESLA_A100", "count": 1}),
    ("g2-standard-8", {"type": "NVIDIA_L4", "count": 1}),
    ("e2-standard-4", None),
]
RS_MACHINES = ["n1-highcpu-16", "n1-highcpu-32", "n1-standard-16"]
#: Regions that offer every accelerator above for training (vxtrain/catalog/region_accelerators.csv;
#: no asia region offers all four, so the asia image is covered in tests/test_catalog.py).
REGIONS = [None, "us-central1", "europe-west4", "us-east1"]

words = st.text(string.ascii_letters + string.digits + "-_./=:", min_size=1, max_size=12)
free_text = st.text(max_size=16)
env_names = st.from_regex(r"\A[A-Z_][A-Z0-9_]{0,10}\Z")
envs = st.dictionaries(env_names, free_text, max_size=4)
durations = st.one_of(st.integers(1, 10**6), st.builds(lambda n, u: f"{n}{u}", st.integers(1, 999),
                                                        st.sampled_from(["s", "m", "h", "d", ""])))


@st.composite
def machines(draw: st.DrawFn, gpu: bool = False) -> dict[str, Any]:
    options = [m for m in MACHINES if m[1]] if gpu else MACHINES
    name, acc = draw(st.sampled_from(options))
    return {"machine_type": name, **({"accelerator": dict(acc)} if acc else {})}


#: Google's prebuilt training images (the only executor images the API takes).
EXECUTORS = ("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest",
             "europe-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
             "gcr.io/cloud-aiplatform/training/sklearn-cpu.1-0:latest")


@st.composite
def containers(draw: st.DrawFn) -> dict[str, Any]:
    """Image, command, args, env, disk, or a python package instead of the image."""
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        out["python_package"] = {"executor_image": draw(st.sampled_from(EXECUTORS)), "module": draw(words),
                                 "package_uris": draw(st.lists(words, min_size=1, max_size=2))}
    else:
        out["image"] = draw(words)
        if draw(st.booleans()):
            out["command"] = draw(st.lists(words, min_size=1, max_size=3))
    if draw(st.booleans()):
        out["args"] = draw(st.lists(free_text, max_size=3))
    if draw(st.booleans()):
        out["env"] = draw(envs)
    if draw(st.booleans()):
        out["disk"] = {"type": draw(st.sampled_from(["pd-ssd", "pd-standard"])),
                       "size_gb": draw(st.integers(100, 2000))}
    return out


@st.composite
def pool(draw: st.DrawFn, role: str, gpu: bool) -> dict[str, Any]:
    out: dict[str, Any] = draw(machines(gpu=gpu))
    if role != "chief":
        out["replicas"] = draw(st.integers(1, 8))
    if draw(st.booleans()):
        out.update(draw(containers()))
    return out


@st.composite
def jobs(draw: st.DrawFn, pool2s: tuple[str | None, ...] = (None, "parameter_servers",
                                                             "reduction_server")) -> dict[str, Any]:
    """A native mapping a valid spec normalizes into."""
    pool2 = draw(st.sampled_from(pool2s))
    gpu = pool2 == "reduction_server"  # a Reduction Server needs GPU training pools
    data: dict[str, Any] = {"display_name": draw(words), "defaults": draw(containers()),
                            "chief": draw(pool("chief", gpu))}
    region = draw(st.sampled_from(REGIONS))
    if region is not None:
        data["region"] = region
    if gpu or draw(st.booleans()):
        data["workers"] = draw(pool("workers", gpu))
    if pool2 == "parameter_servers":
        data[pool2] = draw(pool(pool2, False))
    elif pool2 == "reduction_server":
        data[pool2] = {"replicas": draw(st.one_of(st.just("auto"), st.integers(1, 40)))}
        if draw(st.booleans()):
            data[pool2]["machine_type"] = draw(st.sampled_from(RS_MACHINES))
    if draw(st.booleans()):
        data["evaluators"] = draw(pool("evaluators", False))
    data.update(draw(job_fields()))
    data.update(draw(newer_job_fields(data.get("region"))))
    if "network" in data or "psc_interface" in data:  # a mount needs a network to reach it
        data["chief"].update(draw(st.fixed_dictionaries({}, optional={
            "nfs_mounts": st.lists(nfs_mounts, min_size=1, max_size=2, unique_by=lambda m: m["mount_point"]),
            "lustre_mounts": st.lists(lustre_mounts, min_size=1, max_size=2, unique_by=lambda m: m["mount_point"])})))
    if data["chief"].get("accelerator") == {"type": "NVIDIA_TESLA_A100", "count": 1} and draw(st.booleans()):
        data["chief"]["accelerator"]["partition_size"] = draw(st.sampled_from(["1g.5gb", "3g.20gb", "7g.40gb"]))
    return data


names = st.from_regex(r"\A[a-z]([-a-z0-9]{0,20}[a-z0-9])?\Z")
private_ips = st.builds(lambda a, b: f"10.{a}.{b}.2", st.integers(0, 255), st.integers(0, 255))
nfs_mounts = st.fixed_dictionaries({"server": private_ips, "path": st.builds(lambda n: f"/{n}", names),
                                    "mount_point": names})
lustre_mounts = st.fixed_dictionaries({"instance_ip": private_ips, "volume_handle": names, "filesystem": names,
                                       "mount_point": names})


@st.composite
def newer_job_fields(draw: st.DrawFn, region: str | None) -> dict[str, Any]:
    """psc_interface, reserved_ip_ranges, the experiment fields, the dashboard: as a valid spec has them."""
    ctx = f"projects/p/locations/{region or 'us-central1'}/metadataStores/default/contexts/"
    experiment = draw(names)
    out: dict[str, Any] = draw(st.fixed_dictionaries({}, optional={
        "psc_interface": st.fixed_dictionaries({"network_attachment": names}, optional={
            "dns_peering": st.lists(st.fixed_dictionaries({
                "domain": st.builds(lambda n: f"{n}.example.", names), "target_project": names,
                "target_network": names}), min_size=1, max_size=2)}),
        "enable_dashboard_access": st.booleans(),
        "protected_artifact_location_id": st.sampled_from(["asia-northeast1", "europe-west1"]),
        "experiment": st.just(ctx + experiment)}))
    if "experiment" in out and draw(st.booleans()):
        out["experiment_run"] = f"{ctx}{experiment}-{draw(names)}"
    return out


@st.composite
def job_fields(draw: st.DrawFn) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if draw(st.booleans()):
        # No FLEX_START: it needs the same L4/A100/H100/H200/B200 machine in every pool and a timeout
        # of 7 days at most (tests/validation/test_scheduling_rules.py); its compiled form is in test_compiler.py.
        out["scheduling"] = draw(st.fixed_dictionaries({}, optional={
            "timeout": durations, "max_wait": durations, "restart_job_on_worker_restart": st.booleans(),
            "disable_retries": st.booleans(), "strategy": st.sampled_from(["STANDARD", "SPOT"])}))
    if draw(st.booleans()):
        out["labels"] = draw(st.dictionaries(st.from_regex(r"\A[a-z][a-z0-9_-]{0,8}\Z"),
                                             st.from_regex(r"\A[a-z0-9_-]{0,8}\Z"), max_size=3))
    optional = {"network": words, "base_output_dir": words, "enable_web_access": st.booleans()}
    out.update(draw(st.fixed_dictionaries({}, optional=optional)))
    if draw(st.booleans()):
        out["service_account"] = draw(words)
        if draw(st.booleans()):  # Vertex needs a service account to upload to a TensorBoard
            out["tensorboard"] = draw(words)
    return out


def compile_like_the_pipeline(data: dict[str, Any]) -> tuple[model.Job, dict[str, Any]]:
    job = model.build(data)
    job = planning.resolve(job, planning.plan(job))
    return job, compiler.compile_custom_job(job)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs())
def test_every_valid_job_compiles_to_a_real_custom_job(data: dict[str, Any]) -> None:
    job, out = compile_like_the_pipeline(data)
    json_format.ParseDict(out, CustomJob.pb(CustomJob()))
    pools = out["jobSpec"]["workerPoolSpecs"]
    present = {slots.POOL_INDEX[r] for r in slots.ROLES if r in data}
    assert len(pools) == max(present) + 1  # no trailing empties
    for index, spec in enumerate(pools):
        assert bool(spec) == (index in present)  # gaps are {}
        if spec:
            assert spec["replicaCount"] == job.ordered_pools()[sorted(present).index(index)].replicas


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs())
def test_the_newer_job_fields_compile_to_their_proto_fields_and_convert_back(data: dict[str, Any]) -> None:
    """Each key lands on the CustomJobSpec / WorkerPoolSpec / MachineSpec field the protos name, and
    reading the compiled job back as a gcloud config gives the same native keys (one mapping, both ways)."""
    from vxtrain.formats import gcloud
    from vxtrain.loading.document import Document

    _, out = compile_like_the_pipeline(data)
    json_format.ParseDict(out, CustomJob.pb(CustomJob()))
    spec = out["jobSpec"]
    for key, field in gcloud.NETWORK_FIELDS.items():
        assert spec.get(key) == data.get(field)
    psc = data.get("psc_interface")
    assert ("pscInterfaceConfig" in spec) == (psc is not None)
    if psc is not None:
        assert spec["pscInterfaceConfig"]["networkAttachment"] == psc["network_attachment"]
        assert [p["targetProject"] for p in spec["pscInterfaceConfig"].get("dnsPeeringConfigs", [])] == \
            [p["target_project"] for p in psc.get("dns_peering", [])]
    chief = spec["workerPoolSpecs"][0]
    assert [m["mountPoint"] for m in chief.get("nfsMounts", [])] == \
        [m["mount_point"] for m in data["chief"].get("nfs_mounts", [])]
    assert [m["volumeHandle"] for m in chief.get("lustreMounts", [])] == \
        [m["volume_handle"] for m in data["chief"].get("lustre_mounts", [])]
    assert chief["machineSpec"].get("gpuPartitionSize") == data["chief"].get("accelerator", {}).get("partition_size")
    native, diags = gcloud.convert(Document(spec, "back.yaml", {}), display_name=data["display_name"])
    assert [d for d in diags if d.severity == "error"] == []
    assert compiler.compile_custom_job_spec(model.build(native.data)) == spec


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs(pool2s=("reduction_server",)))
def test_reduction_server_never_gets_defaults(data: dict[str, Any]) -> None:
    _, out = compile_like_the_pipeline(data)
    rs = out["jobSpec"]["workerPoolSpecs"][2]
    machine = data["reduction_server"].get("machine_type", model.DEFAULT_RS_MACHINE)
    assert rs["machineSpec"] == {"machineType": machine}
    assert rs["containerSpec"] == {"imageUri": catalog.reduction_server_image(data.get("region"))}
    assert set(rs) == {"machineSpec", "replicaCount", "containerSpec"}
    assert rs["replicaCount"] >= 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs(), st.sampled_from(["default", "random", "grid"]),
       st.lists(st.sampled_from(["double", "integer", "discrete", "categorical"]), min_size=1, max_size=4))
def test_studies_compile_to_a_real_hpt_job(data: dict[str, Any], algorithm: str, kinds: list[str]) -> None:
    params = {}
    for i, kind in enumerate(kinds):
        params[f"p{i}"] = {"type": kind, "min": 1, "max": 10, "values": [1, 2, 3]}
        if kind in ("double", "integer"):
            params[f"p{i}"]["scale"] = "linear"
    data["study"] = {"metric": {"id": "acc", "goal": "maximize"}, "parameters": params,
                     "max_trials": 4, "parallel_trials": 2, "algorithm": algorithm}
    job, _ = compile_like_the_pipeline(data)
    out = compiler.compile_hpt_job(job)
    json_format.ParseDict(out, HyperparameterTuningJob.pb(HyperparameterTuningJob()))
    assert out["trialJobSpec"] == compiler.compile_custom_job_spec(job)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs())
def test_the_generator_makes_specs_the_validator_accepts(data: dict[str, Any]) -> None:
    """Keeps the properties above about *valid* jobs: schema and rules find no error."""
    from vxtrain.validation import rules
    from vxtrain.validation import schema
    from vxtrain.loading.document import Document, NativeSpec

    native = NativeSpec(data, "native", Document(data, "gen.yaml", {}))
    diags = schema.check(native) + rules.check(model.build(data), native)
    diags += planning.plan(model.build(data), native).diagnostics
    assert [d.render() for d in diags if d.severity == "error"] == []
