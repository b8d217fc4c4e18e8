"""Input formats: detection, gcloud and legacy conversion, origins, native_document."""
from __future__ import annotations

import json

import dataclasses
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from vxtrain import api, pipeline
from vxtrain.compiler import compile_custom_job_spec
from vxtrain.diagnostics import Diagnostic
from vxtrain import formats
from vxtrain import catalog
from vxtrain.formats import gcloud
from vxtrain.formats import legacy
from vxtrain import model
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.loading import load_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "configs" / "examples"
RS_US = "us-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest"


def load(text: str, file: str = "spec.yaml") -> Document:
    """A Document (with positions) from YAML text, through the real loader."""
    document, diags = load_text(textwrap.dedent(text), file, environ={})
    assert document is not None, [d.render() for d in diags]
    return document


def convert(text: str, display_name: str | None = "job") -> tuple[NativeSpec, list[Diagnostic]]:
    native, diags = formats.to_native(load(text), display_name=display_name)
    assert native is not None
    return native, diags


def codes(diags: list[Diagnostic], severity: str | None = None) -> list[str]:
    return [d.code for d in diags if severity is None or d.severity == severity]


# --- detection ------------------------------------------------------------------------

@pytest.mark.parametrize(("data", "expected"), [
    ({"display_name": "x", "chief": {}}, "native"),
    ({}, "native"),
    ({"workerPoolSpecs": [{}]}, "gcloud"),
    ({"displayName": "x", "jobSpec": {"workerPoolSpecs": []}}, "gcloud"),
    ({"jobSpec": {"network": "n"}}, "native"),
    ({"trainingInput": {"scaleTier": "BASIC"}}, "legacy"),
    ({"jobId": "j", "trainingInput": {}}, "legacy"),
    ({"scaleTier": "CUSTOM"}, "legacy"),
    ({"masterType": "n1-standard-4"}, "legacy"),
    ({"masterConfig": {"imageUri": "x"}}, "legacy"),
    ({"workerCount": 2}, "legacy"),
    ({"scaleTier": "BASIC", "workerPoolSpecs": []}, "legacy"),
    ([1, 2], "native"),
    ("text", "native"),
    (None, "native"),
])
def test_detect(data: Any, expected: str) -> None:
    assert formats.detect(data) == expected


def test_native_passes_through_unchanged() -> None:
    doc = load("display_name: x\nchief: {machine_type: n1-standard-4}\n")
    native, diags = formats.to_native(doc, display_name="ignored")
    assert native is not None and diags == []
    assert native.format == "native" and native.origin == {} and native.source is doc
    assert native.data == {"display_name": "x", "chief": {"machine_type": "n1-standard-4"}}


def test_non_mapping_root_is_an_error_not_a_crash() -> None:
    native, diags = formats.to_native(Document(data=[1, 2], file="a.yaml"))
    assert native is None and codes(diags) == ["not-a-mapping"]


# --- gcloud ---------------------------------------------------------------------------

def test_gcloud_empty_pools_are_gaps() -> None:
    native, diags = convert("""
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8}
            containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
          - {}
          - {}
          - machineSpec: {machineType: n1-standard-4}
            replicaCount: 1
            containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
        """)
    assert diags == []
    assert set(native.data) == {"display_name", "chief", "evaluators"}
    assert native.data["evaluators"] == {"replicas": 1, "machine_type": "n1-standard-4",
                                         "image": "us-docker.pkg.dev/my-project/t/a:1"}
    assert native.where(("evaluators", "machine_type"))["path"] == "workerPoolSpecs[3].machineSpec.machineType"


@pytest.mark.parametrize(("image", "role"), [
    (RS_US, "reduction_server"),
    ("europe-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest", "reduction_server"),
    ("asia-docker.pkg.dev/vertex-ai-restricted/training/reductionserver@sha256:abc", "reduction_server"),
    ("us-docker.pkg.dev/my-project/train/ps:1", "parameter_servers"),
    ("us-docker.pkg.dev/my-project/reductionserver-fork:1", "parameter_servers"),
    ("us-docker.pkg.dev/me/mirror/reductionserver:1", "reduction_server"),  # a mirror of Google's image
])
def test_gcloud_pool_2_is_reduction_server_by_its_image(image: str, role: str) -> None:
    native, _ = convert(f"""
        workerPoolSpecs:
          - machineSpec: {{machineType: n1-standard-8}}
            containerSpec: {{imageUri: us-docker.pkg.dev/my-project/t/a:1}}
          - {{}}
          - machineSpec: {{machineType: n1-highcpu-16}}
            replicaCount: 2
            containerSpec: {{imageUri: "{image}"}}
        """)
    other = {"reduction_server", "parameter_servers"} - {role}
    assert native.data[role]["replicas"] == 2 and not other & set(native.data)
    assert native.data[role]["image"] == image


def test_gcloud_env_list_becomes_a_mapping_pointing_at_its_items() -> None:
    native, diags = convert("""
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8}
            containerSpec:
              imageUri: us-docker.pkg.dev/my-project/t/a:1
              env:
                - {name: NCCL_DEBUG, value: INFO}
                - name: MODE
                  value: train
        """)
    assert diags == []
    assert native.data["chief"]["env"] == {"NCCL_DEBUG": "INFO", "MODE": "train"}
    where = native.where(("chief", "env", "MODE"))
    assert (where["path"], where["line"], where["column"]) == (
        "workerPoolSpecs[0].containerSpec.env[1].name", 8, 11)


def test_gcloud_duplicate_env_is_an_error() -> None:
    _, diags = convert("""
        workerPoolSpecs:
          - containerSpec:
              env: [{name: A, value: "1"}, {name: A, value: "2"}]
        """)
    assert codes(diags) == ["duplicate-env"]


def test_gcloud_unknown_key_did_you_mean_with_position() -> None:
    _, diags = convert("""
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8}
          - machineSpec:
              machineTyp: n1-standard-8
            replicaCount: 2
        """)
    [d] = diags
    assert (d.severity, d.code, d.path) == ("error", "unknown-key", "workerPoolSpecs[1].machineSpec.machineTyp")
    assert (d.line, d.column) == (5, 7)
    assert "did you mean 'machineType'?" in d.message and "machineTyp" in d.message


@pytest.mark.parametrize(("snippet", "path", "suggestion"), [
    ("serviceAcount: x", "serviceAcount", "serviceAccount"),
    ("scheduling: {timout: 60s}", "scheduling.timout", "timeout"),
    ("baseOutputDirectory: {outputUri: gs://b}", "baseOutputDirectory.outputUri", "outputUriPrefix"),
])
def test_gcloud_unknown_keys_at_every_level(snippet: str, path: str, suggestion: str) -> None:
    _, diags = convert("workerPoolSpecs: [{machineSpec: {machineType: n1-standard-4}}]\n" + snippet + "\n")
    [d] = diags
    assert d.path == path and f"'{suggestion}'" in d.message


def test_gcloud_display_name_on_a_bare_spec_explains_jobspec() -> None:
    _, diags = convert("displayName: x\nworkerPoolSpecs: [{}]\n")
    assert codes(diags) == ["unknown-key"] and "jobSpec" in diags[0].message


def test_gcloud_replica_count_as_int64_string() -> None:
    native, _ = convert("""
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8}
          - machineSpec: {machineType: n1-standard-8}
            replicaCount: "4"
        """)
    assert native.data["workers"]["replicas"] == 4


@pytest.mark.parametrize("count", ["²", "٣"])
def test_gcloud_replica_count_of_non_ascii_digits_is_left_for_the_schema(count: str) -> None:
    native, _ = convert(f"""
        workerPoolSpecs:
          - machineSpec: {{machineType: n1-standard-8}}
          - machineSpec: {{machineType: n1-standard-8}}
            replicaCount: "{count}"
        """)
    assert native.data["workers"]["replicas"] == count  # the schema reports it, at its line


def test_gcloud_whole_custom_job() -> None:
    native, diags = convert("""
        displayName: from-file
        labels: {team: nlp}
        state: JOB_STATE_SUCCEEDED
        encryptionSpec: {kmsKeyName: projects/p/locations/l/keyRings/r/cryptoKeys/k}
        jobSpec:
          workerPoolSpecs:
            - machineSpec: {machineType: n1-standard-8}
              containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
        """, display_name="stem")
    assert native.data["display_name"] == "from-file"
    assert native.data["labels"] == {"team": "nlp"}
    assert native.data["extra"] == {"encryptionSpec": {"kmsKeyName": "projects/p/locations/l/keyRings/r/cryptoKeys/k"}}
    assert codes(diags) == ["output-only-ignored"] and diags[0].severity == "warning"
    assert native.where(("chief", "machine_type"))["path"] == "jobSpec.workerPoolSpecs[0].machineSpec.machineType"


def test_gcloud_display_name_falls_back_to_the_argument() -> None:
    native, _ = convert("workerPoolSpecs: [{}]\n", display_name="my-stem")
    assert native.data["display_name"] == "my-stem"
    native, _ = convert("workerPoolSpecs: [{}]\n", display_name=None)
    assert "display_name" not in native.data


def test_gcloud_job_fields_and_durations() -> None:
    native, diags = convert("""
        workerPoolSpecs: [{machineSpec: {machineType: n1-standard-4}}]
        serviceAccount: sa@my-project.iam.gserviceaccount.com
        network: projects/123/global/networks/vpc
        tensorboard: projects/p/locations/us-central1/tensorboards/1
        enableWebAccess: true
        baseOutputDirectory: {outputUriPrefix: gs://my-project-b/runs}
        scheduling:
          timeout: 86400s
          maxWaitDuration: 5400s
          strategy: FLEX_START
          restartJobOnWorkerRestart: true
          disableRetries: false
        """)
    assert diags == []
    assert {k: v for k, v in native.data.items() if k not in ("chief", "display_name")} == {
        "service_account": "sa@my-project.iam.gserviceaccount.com",
        "network": "projects/123/global/networks/vpc",
        "tensorboard": "projects/p/locations/us-central1/tensorboards/1",
        "enable_web_access": True, "base_output_dir": "gs://my-project-b/runs",
        "scheduling": {"timeout": "1d", "max_wait": "90m", "strategy": "FLEX_START",
                       "restart_job_on_worker_restart": True, "disable_retries": False},
    }


def test_gcloud_bad_duration_is_an_error() -> None:
    _, diags = convert("workerPoolSpecs: [{}]\nscheduling: {timeout: two days}\n")
    assert codes(diags) == ["bad-value"] and diags[0].path == "scheduling.timeout"


@pytest.mark.parametrize("timeout", ["infs", "nans", "1e400s", ".inf", ".nan"])
def test_gcloud_infinite_duration_is_an_error(timeout: str) -> None:
    _, diags = convert(f"workerPoolSpecs: [{{}}]\nscheduling: {{timeout: {timeout}}}\n")
    assert codes(diags) == ["bad-value"] and diags[0].path == "scheduling.timeout"


def test_gcloud_fields_without_a_native_key_go_to_extra_and_compile_back() -> None:
    native, diags = convert("""
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8}
            containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
          - machineSpec: {machineType: ct5lp-hightpu-4t, tpuTopology: 2x2}
            replicaCount: 2
            containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
        models: [projects/p/locations/us-central1/models/m]
        persistentResourceId: my-pool
        """)
    assert diags == []
    assert native.data["extra"] == {"jobSpec": {"models": ["projects/p/locations/us-central1/models/m"]}}
    # tpuTopology and persistentResourceId have native keys (checked like the native ones)
    assert native.data["workers"]["tpu_topology"] == "2x2" and native.data["persistent_resource"] == "my-pool"
    spec = compile_custom_job_spec(model.build(native.data))
    assert spec["models"] == ["projects/p/locations/us-central1/models/m"] and spec["persistentResourceId"] == "my-pool"
    assert spec["workerPoolSpecs"][1]["machineSpec"] == {"machineType": "ct5lp-hightpu-4t", "tpuTopology": "2x2"}


def test_gcloud_newer_job_fields_map_to_native_keys_and_compile_back() -> None:
    text = """
        workerPoolSpecs:
          - machineSpec: {machineType: a2-highgpu-1g, acceleratorType: NVIDIA_TESLA_A100, acceleratorCount: 1,
                          gpuPartitionSize: 1g.5gb}
            containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
          - machineSpec: {machineType: n1-standard-8}
            replicaCount: 2
            containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
            nfsMounts: [{server: 10.0.0.2, path: /data, mountPoint: data}]
            lustreMounts: [{instanceIp: 10.0.0.3, volumeHandle: vh, filesystem: fs, mountPoint: l}]
        reservedIpRanges: [vertex-range]
        pscInterfaceConfig:
          networkAttachment: att
          dnsPeeringConfigs: [{domain: corp.example.com., targetProject: p2, targetNetwork: vpc}]
        enableDashboardAccess: true
        experiment: projects/p/locations/us-central1/metadataStores/default/contexts/e
        experimentRun: projects/p/locations/us-central1/metadataStores/default/contexts/e-r
        protectedArtifactLocationId: europe-west4
        """
    native, diags = convert(text)
    assert diags == [] and "extra" not in native.data
    assert native.data["chief"]["accelerator"]["partition_size"] == "1g.5gb"
    assert native.data["workers"]["nfs_mounts"] == [{"server": "10.0.0.2", "path": "/data", "mount_point": "data"}]
    assert native.data["workers"]["lustre_mounts"][0]["volume_handle"] == "vh"
    assert native.data["psc_interface"] == {"network_attachment": "att", "dns_peering": [
        {"domain": "corp.example.com.", "target_project": "p2", "target_network": "vpc"}]}
    assert native.data["reserved_ip_ranges"] == ["vertex-range"] and native.data["enable_dashboard_access"] is True
    assert native.where(("psc_interface", "dns_peering", 0, "target_project"))["path"] \
        == "pscInterfaceConfig.dnsPeeringConfigs[0].targetProject"
    # the round trip: every field the file gave comes back as it was written
    spec = compile_custom_job_spec(model.build(native.data))
    assert spec == {**yaml.safe_load(textwrap.dedent(text)), "workerPoolSpecs": spec["workerPoolSpecs"]}
    assert spec["workerPoolSpecs"][0]["machineSpec"]["gpuPartitionSize"] == "1g.5gb"
    assert spec["workerPoolSpecs"][1]["nfsMounts"] == [{"server": "10.0.0.2", "path": "/data", "mountPoint": "data"}]
    assert spec["workerPoolSpecs"][1]["lustreMounts"][0]["instanceIp"] == "10.0.0.3"


def test_gcloud_python_package_spec() -> None:
    native, diags = convert("""
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8}
            pythonPackageSpec:
              executorImageUri: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest
              packageUris: [gs://my-project-b/trainer-0.1.tar.gz]
              pythonModule: trainer.task
              args: [--epochs=2]
        """)
    assert diags == []
    assert native.data["chief"] == {
        "machine_type": "n1-standard-8", "args": ["--epochs=2"],
        "python_package": {"executor_image": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest",
                           "package_uris": ["gs://my-project-b/trainer-0.1.tar.gz"], "module": "trainer.task"}}


def test_gcloud_container_and_package_together_is_an_error() -> None:
    _, diags = convert("""
        workerPoolSpecs:
          - containerSpec: {imageUri: a}
            pythonPackageSpec: {executorImageUri: b}
        """)
    assert codes(diags) == ["conflicting-keys"]


def test_gcloud_more_than_four_pools_is_an_error() -> None:
    _, diags = convert("workerPoolSpecs: [{}, {}, {}, {}, {}]\n")
    assert codes(diags) == ["too-many-pools"] and diags[0].path == "workerPoolSpecs[4]"


def test_gcloud_rs_pool_drops_container_settings_with_a_warning() -> None:
    native, diags = convert(f"""
        workerPoolSpecs:
          - {{}}
          - {{}}
          - containerSpec: {{imageUri: "{RS_US}", args: [--x]}}
        """)
    assert native.data["reduction_server"] == {"image": RS_US}
    assert codes(diags, "warning") == ["rs-container-ignored"]


def test_gcloud_accepts_the_fields_of_the_installed_protos() -> None:
    assert "persistentResourceId" in gcloud.fields_of("CustomJobSpec")  # not in the fallback
    assert "nfsMounts" in gcloud.fields_of("WorkerPoolSpec")
    for message, (_, fallback) in gcloud.MESSAGES.items():
        assert set(fallback) <= set(gcloud.fields_of(message)), message


def test_conversion_never_imports_aiplatform() -> None:
    code = ("import sys; from vxtrain import formats; from vxtrain.formats import gcloud, legacy; from vxtrain.loading import load_text\n"
            f"doc, _ = load_text(open({str(EXAMPLES / 'gcloud-config.yaml')!r}).read(), 'g.yaml')\n"
            "formats.to_native(doc)\n"
            "bad = [m for m in sys.modules if m.startswith('google.cloud.aiplatform')]\n"
            "assert not bad, bad\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT, timeout=60)


# --- legacy ---------------------------------------------------------------------------

LEGACY_CUSTOM = """
    trainingInput:
      scaleTier: CUSTOM
      region: europe-west4
      masterType: n1-standard-16
      masterConfig:
        imageUri: us-docker.pkg.dev/my-project/t/a:1
        containerCommand: [python, -m, trainer.task]
        acceleratorConfig: {count: 2, type: NVIDIA_TESLA_T4}
      workerType: n1-standard-8
      workerCount: 3
      workerConfig:
        containerArgs: [--role=worker]
        diskConfig: {bootDiskType: pd-standard, bootDiskSizeGb: 200}
      parameterServerType: n1-highmem-8
      parameterServerCount: "2"
      evaluatorType: n1-standard-4
      evaluatorCount: 1
      evaluatorConfig:
        imageUri: us-docker.pkg.dev/my-project/t/eval:1
      args: [--epochs=3]
      serviceAccount: sa@my-project.iam.gserviceaccount.com
      network: projects/123/global/networks/vpc
      jobDir: gs://my-project-b/runs/x
      enableWebAccess: true
      useChiefInTfConfig: true
      encryptionConfig: {kmsKeyName: projects/p/locations/l/keyRings/r/cryptoKeys/k}
      scheduling: {maxRunningTime: 7200s}
    """


def test_legacy_custom_maps_exactly() -> None:
    native, diags = convert(LEGACY_CUSTOM)
    assert diags == []
    image = "us-docker.pkg.dev/my-project/t/a:1"
    assert native.data == {
        "display_name": "job",
        "chief": {"machine_type": "n1-standard-16", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 2},
                  "image": image, "command": ["python", "-m", "trainer.task"], "args": ["--epochs=3"]},
        "workers": {"replicas": 3, "machine_type": "n1-standard-8", "image": image, "args": ["--role=worker"],
                    "disk": {"type": "pd-standard", "size_gb": 200}},
        "parameter_servers": {"replicas": 2, "machine_type": "n1-highmem-8", "image": image, "args": ["--epochs=3"]},
        "evaluators": {"replicas": 1, "machine_type": "n1-standard-4", "image": "us-docker.pkg.dev/my-project/t/eval:1",
                       "args": ["--epochs=3"]},
        "region": "europe-west4", "service_account": "sa@my-project.iam.gserviceaccount.com",
        "network": "projects/123/global/networks/vpc", "base_output_dir": "gs://my-project-b/runs/x",
        "enable_web_access": True,
        "extra": {"encryptionSpec": {"kmsKeyName": "projects/p/locations/l/keyRings/r/cryptoKeys/k"}},
        "scheduling": {"timeout": "2h"},
    }


def test_legacy_image_inheritance_points_at_master_config() -> None:
    native, _ = convert(LEGACY_CUSTOM)
    assert native.where(("workers", "image"))["path"] == "trainingInput.masterConfig.imageUri"
    assert native.where(("evaluators", "image"))["path"] == "trainingInput.evaluatorConfig.imageUri"
    assert native.where(("workers", "replicas"))["path"] == "trainingInput.workerCount"
    assert native.where(("workers", "machine_type"))["path"] == "trainingInput.workerType"
    assert native.where(("chief", "accelerator", "count"))["path"] == "trainingInput.masterConfig.acceleratorConfig.count"


@pytest.mark.parametrize("tier", [None, "BASIC", "STANDARD_1"])
def test_legacy_counts_without_custom_are_errors(tier: str | None) -> None:
    text = ("trainingInput:\n" + (f"  scaleTier: {tier}\n" if tier else "")
            + "  masterConfig: {imageUri: us-docker.pkg.dev/my-project/t/a:1}\n"
            + "  workerCount: 4\n  workerType: n1-standard-8\n")
    _, diags = convert(text)
    errors = [d for d in diags if d.severity == "error"]
    assert {d.code for d in errors} == {"legacy-needs-custom"}
    assert {d.path for d in errors} == {"trainingInput.workerCount", "trainingInput.workerType"}
    assert all("scaleTier: CUSTOM" in d.message for d in errors)


def test_legacy_top_level_form_counts_without_custom_error() -> None:
    _, diags = convert("workerCount: 2\nworkerType: n1-standard-4\nmasterConfig: {imageUri: a}\n")
    assert "legacy-needs-custom" in codes(diags, "error")
    assert {d.path for d in diags if d.code == "legacy-needs-custom"} == {"workerCount", "workerType"}


def test_legacy_predefined_tier_maps_through_the_table_with_a_warning() -> None:
    native, diags = convert("""
        trainingInput:
          scaleTier: STANDARD_1
          masterConfig: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
        """)
    assert codes(diags) == ["legacy-scale-tier"] and diags[0].severity == "warning"
    assert diags[0].path == "trainingInput.scaleTier" and "approximate" in diags[0].message
    assert native.data["chief"]["machine_type"] == "n1-standard-8"  # n1-highcpu-8 is not offered for training
    assert native.data["workers"] == {"replicas": 4, "machine_type": "n1-standard-8",
                                      "image": "us-docker.pkg.dev/my-project/t/a:1"}
    assert native.data["parameter_servers"]["replicas"] == 3
    assert native.data["parameter_servers"]["machine_type"] == "n1-standard-4"
    assert native.where(("workers", "replicas"))["path"] == "trainingInput.scaleTier"


def test_scale_tier_table_is_data_with_a_source() -> None:
    assert legacy.SCALE_TIER_SOURCE == "https://cloud.google.com/ai-platform/training/docs/machine-types#scale_tiers"
    premium = {p.role: p for p in catalog.scale_tier("PREMIUM_1") or ()}
    assert premium["workers"].replicas == 19 and premium["parameter_servers"].replicas == 11
    (basic_gpu,) = catalog.scale_tier("BASIC_GPU") or ()
    gpu = catalog.legacy_machine(basic_gpu.legacy_machine)
    assert gpu is not None
    assert (gpu.machine_type, gpu.accelerator_type, gpu.accelerator_count) == ("n1-standard-8", "NVIDIA_TESLA_T4", 1)


def test_legacy_basic_gpu_tier_gets_a_t4_and_says_so() -> None:
    native, diags = convert("trainingInput: {scaleTier: BASIC_GPU, masterConfig: {imageUri: a}}\n")
    assert native.data["chief"]["accelerator"] == {"type": "NVIDIA_TESLA_T4", "count": 1}
    (replaced,) = [d for d in diags if d.code == "legacy-gpu-replaced"]
    assert replaced.severity == "warning" and replaced.path == "trainingInput.scaleTier"
    assert "1 × NVIDIA_TESLA_K80" in replaced.message and "1 × NVIDIA_TESLA_T4 on n1-standard-8" in replaced.message


@pytest.mark.parametrize("name, machine, accelerator", [
    ("standard_gpu", "n1-standard-8", {"type": "NVIDIA_TESLA_T4", "count": 1}),
    ("complex_model_m_gpu", "n1-standard-16", {"type": "NVIDIA_TESLA_T4", "count": 4}),
    ("complex_model_l_gpu", "n1-standard-32", {"type": "NVIDIA_TESLA_V100", "count": 8}),  # T4 stops at 4 on N1
])
def test_legacy_k80_names_keep_their_count_on_offered_gpus(name: str, machine: str,
                                                           accelerator: dict[str, object]) -> None:
    native, diags = convert(f"trainingInput: {{scaleTier: CUSTOM, masterType: {name}, masterConfig: {{imageUri: a}}}}\n")
    assert native.data["chief"]["machine_type"] == machine
    assert native.data["chief"]["accelerator"] == accelerator
    assert sorted(codes(diags)) == ["legacy-gpu-replaced", "legacy-machine-type"]
    assert all(d.severity == "warning" for d in diags)


@pytest.mark.parametrize("name", sorted(catalog.legacy_machine_names()))
def test_every_legacy_machine_maps_to_something_vertex_accepts(name: str) -> None:
    m = catalog.legacy_machine(name)
    assert m is not None
    assert catalog.offered(m.machine_type)
    if m.accelerator_type:
        assert catalog.training_accelerator(m.accelerator_type)
        allowed = catalog.allowed_accelerators(m.machine_type) or {}
        assert m.accelerator_count in allowed.get(m.accelerator_type, ())


def test_legacy_basic_tpu_is_refused() -> None:
    _, diags = convert("trainingInput: {scaleTier: BASIC_TPU, masterConfig: {imageUri: a}}\n")
    assert codes(diags, "error") == ["legacy-tpu-unsupported"]


def test_legacy_unknown_key_did_you_mean() -> None:
    _, diags = convert("""
        trainingInput:
          scaleTier: CUSTOM
          masterType: n1-standard-4
          masterConfig: {imageUri: a, containerArg: [x]}
          workerCont: 2
        """)
    found = {d.path: d.message for d in diags if d.code == "unknown-key"}
    assert "did you mean 'workerCount'?" in found["trainingInput.workerCont"]
    assert "did you mean 'containerArgs'?" in found["trainingInput.masterConfig.containerArg"]


def test_legacy_custom_needs_types() -> None:
    _, diags = convert("trainingInput: {scaleTier: CUSTOM, masterConfig: {imageUri: a}, workerCount: 2}\n")
    assert [(d.code, d.path) for d in diags] == [("missing-key", "trainingInput.scaleTier"),
                                                 ("missing-key", "trainingInput.workerCount")]


def test_legacy_machine_names_map_with_a_warning() -> None:
    native, diags = convert("""
        trainingInput:
          scaleTier: CUSTOM
          masterType: complex_model_m_gpu
          masterConfig: {imageUri: a}
        """)
    assert native.data["chief"]["machine_type"] == "n1-standard-16"
    assert native.data["chief"]["accelerator"] == {"type": "NVIDIA_TESLA_T4", "count": 4}
    assert codes(diags) == ["legacy-machine-type", "legacy-gpu-replaced"]
    assert all(d.severity == "warning" for d in diags)


def test_legacy_python_package_gets_an_executor_image() -> None:
    native, diags = convert("""
        trainingInput:
          scaleTier: CUSTOM
          region: europe-west4
          masterType: n1-standard-8
          masterConfig: {acceleratorConfig: {count: 1, type: NVIDIA_TESLA_T4}}
          parameterServerType: n1-standard-4
          parameterServerCount: 1
          packageUris: [gs://my-project-b/trainer-0.1.tar.gz]
          pythonModule: trainer.task
          runtimeVersion: "2.8"
          pythonVersion: "3.7"
        """)
    assert codes(diags) == ["legacy-executor-image"]
    pkg = native.data["chief"]["python_package"]
    assert pkg == {"executor_image": "europe-docker.pkg.dev/vertex-ai/training/tf-gpu.2-8:latest",
                   "package_uris": ["gs://my-project-b/trainer-0.1.tar.gz"], "module": "trainer.task"}
    ps = native.data["parameter_servers"]["python_package"]["executor_image"]
    assert ps == "europe-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest"


def test_legacy_python_package_without_runtime_version_asks_for_an_image() -> None:
    _, diags = convert("trainingInput: {packageUris: [gs://b/t.tar.gz], pythonModule: trainer.task}\n")
    errors = [d for d in diags if d.severity == "error"]
    assert codes(errors) == ["legacy-no-executor-image"] and "masterConfig.imageUri" in errors[0].message


def test_legacy_nothing_to_run_is_an_error() -> None:
    _, diags = convert("trainingInput: {scaleTier: CUSTOM, masterType: n1-standard-4}\n")
    assert codes(diags) == ["missing-key"] and "imageUri" in diags[0].message


def test_legacy_whole_job_and_hyperparameters() -> None:
    native, diags = convert("""
        jobId: census_hp_1
        labels: {team: tabular}
        trainingInput:
          scaleTier: CUSTOM
          masterType: n1-standard-8
          masterConfig: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
          scheduling: {maxRunningTime: 3600s, maxWaitTime: 600s}
          hyperparameters:
            goal: MAXIMIZE
            hyperparameterMetricTag: accuracy
            maxTrials: 20
            maxParallelTrials: 4
            algorithm: RANDOM_SEARCH
            params:
              - {parameterName: lr, type: DOUBLE, minValue: 0.0001, maxValue: 0.1, scaleType: UNIT_LOG_SCALE}
              - {parameterName: opt, type: CATEGORICAL, categoricalValues: [adam, sgd]}
        """, display_name="stem")
    assert codes(diags) == ["legacy-dropped"] and diags[0].path == "trainingInput.scheduling.maxWaitTime"
    assert native.data["display_name"] == "census_hp_1" and native.data["labels"] == {"team": "tabular"}
    assert native.data["study"] == {
        "metric": {"id": "accuracy", "goal": "maximize"}, "max_trials": 20, "parallel_trials": 4,
        "algorithm": "random",
        "parameters": {"lr": {"type": "double", "min": 0.0001, "max": 0.1, "scale": "log"},
                       "opt": {"type": "categorical", "values": ["adam", "sgd"]}}}


# --- origins through the real pipeline -------------------------------------------------

def test_later_diagnostics_point_at_the_gcloud_source() -> None:
    doc = load("""
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8}
            replicaCount: 2
            containerSpec: {imageUri: us-docker.pkg.dev/my-project/t/a:1}
            diskSpec: {bootDiskType: pd-fast}
        """, "g.yaml")
    result = pipeline.check_document(doc, api.Options(environ={}, region="us-central1", project="my-project"))
    found = {(d.path, d.line, d.column) for d in result.diagnostics if d.severity == "error"}
    assert ("workerPoolSpecs[0].replicaCount", 4, 5) in found
    assert ("workerPoolSpecs[0].diskSpec.bootDiskType", 6, 16) in found


def test_later_diagnostics_point_at_the_legacy_source() -> None:
    doc = load("""
        trainingInput:
          scaleTier: CUSTOM
          masterType: n1-standard-4
          masterConfig:
            imageUri: us-docker.pkg.dev/my-project/t/a:1
            acceleratorConfig: {count: 3, type: NVIDIA_TESLA_T4}
        """, "l.yaml")
    result = pipeline.check_document(doc, api.Options(environ={}, region="us-central1", project="my-project"))
    errors = [d for d in result.diagnostics if d.severity == "error"]
    assert errors and all(d.path.startswith("trainingInput.masterConfig.acceleratorConfig") for d in errors)


# --- examples ---------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "fmt", "warnings"), [
    ("gcloud-config.yaml", "gcloud", []),
    ("legacy-config.yaml", "legacy", []),
    ("legacy-basic-gpu.yaml", "legacy", ["legacy-scale-tier", "legacy-gpu-replaced"]),
])
def test_examples_convert_cleanly(name: str, fmt: str, warnings: list[str]) -> None:
    path = EXAMPLES / name
    native, diags = formats.to_native(load(path.read_text(), str(path)), display_name=path.stem)
    assert native is not None and native.format == fmt
    assert codes(diags) == warnings


def test_gcloud_example_has_a_reduction_server() -> None:
    path = EXAMPLES / "gcloud-config.yaml"
    native, _ = formats.to_native(load(path.read_text()), display_name="x")
    assert native is not None
    assert native.data["reduction_server"]["image"] == RS_US and native.data["workers"]["replicas"] == 4


# --- native_document -----------------------------------------------------------------------

def test_native_document_factors_shared_fields_but_never_into_rs() -> None:
    path = EXAMPLES / "gcloud-config.yaml"
    native, _ = formats.to_native(load(path.read_text()), display_name="bert")
    assert native is not None
    out = formats.native_document(native)
    assert list(out)[:3] == ["display_name", "service_account", "base_output_dir"]
    assert out["defaults"] == {
        "image": "us-docker.pkg.dev/my-project/train/bert:2024-06-01", "command": ["python", "-m", "trainer.task"],
        "args": ["--epochs=3", "--batch-size=256"], "env": {"NCCL_DEBUG": "INFO"},
        "disk": {"type": "pd-ssd", "size_gb": 200}}
    assert out["chief"] == {"machine_type": "n1-highmem-96", "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 8}}
    assert out["reduction_server"] == {"replicas": 16, "machine_type": "n1-highcpu-16", "image": RS_US}
    assert model.build(out).pools == model.build(native.data).pools


def test_native_document_keeps_differences_and_drops_empties() -> None:
    native = NativeSpec(data={
        "display_name": "x", "labels": {}, "network": None,
        "defaults": {"image": "img:1", "args": ["--a"]},
        "chief": {"replicas": 1, "machine_type": "n1-standard-4", "env": {}},
        "workers": {"replicas": 2, "machine_type": "n1-standard-4", "args": ["--b"]},
    }, format="native", source=Document(data={}, file="x.yaml"))
    out = formats.native_document(native)
    assert out == {"display_name": "x", "chief": {"machine_type": "n1-standard-4", "image": "img:1", "args": ["--a"]},
                   "workers": {"replicas": 2, "machine_type": "n1-standard-4", "image": "img:1", "args": ["--b"]}}
    assert model.build(out).pools == model.build(native.data).pools


# --- round trip: native → compile → gcloud → native ------------------------------------------

@pytest.mark.parametrize("name", ["reduction-server.yaml", "parameter-server.yaml", "python-package.yaml",
                                  "quickstart.yaml", "tf-ps.yaml", "torch-ddp.yaml", "legacy-config.yaml"])
def test_round_trip_through_gcloud_keeps_the_pools(name: str) -> None:
    result = api.check_file(EXAMPLES / name, api.Options(environ={}))
    assert result.custom_job is not None, [d.render() for d in result.diagnostics]
    text = yaml.safe_dump(compile_custom_job_spec(result.job), sort_keys=False)
    native, diags = formats.to_native(load(text, "rt.yaml"), display_name="rt")
    assert native is not None and native.format == "gcloud" and codes(diags, "error") == []
    back = model.build(native.data).pools
    expected = {role: dataclasses.replace(p, auto_replicas=False) for role, p in result.job.pools.items()}
    if "reduction_server" in expected:  # compile fills in the region's image
        expected["reduction_server"] = dataclasses.replace(expected["reduction_server"],
                                                           image=back["reduction_server"].image)
        assert back["reduction_server"].image is not None and "reductionserver" in back["reduction_server"].image
    assert back == expected


# --- robustness: any shape of input converts without raising ------------------------------

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_KEYS = st.sampled_from([
    "workerPoolSpecs", "jobSpec", "machineSpec", "machineType", "replicaCount", "containerSpec", "imageUri",
    "env", "name", "value", "pythonPackageSpec", "diskSpec", "scheduling", "timeout", "baseOutputDirectory",
    "trainingInput", "scaleTier", "masterType", "masterConfig", "workerCount", "workerType", "workerConfig",
    "acceleratorConfig", "count", "type", "packageUris", "pythonModule", "runtimeVersion", "hyperparameters",
    "params", "parameterName", "jobId", "labels", "displayName", "maxRunningTime", "diskConfig", "x",
])
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 30), st.sampled_from(
    ["CUSTOM", "BASIC", "BASIC_TPU", "PREMIUM_1", "n1-standard-4", "standard_gpu", "2.8", "86400s", RS_US, ""]))
def _nest_values(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(inner, max_size=5), st.dictionaries(_KEYS, inner, max_size=5))


_VALUES = st.recursive(_SCALARS, _nest_values, max_leaves=25)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_KEYS, _VALUES, min_size=1, max_size=6))
def test_any_input_converts_without_raising(data: dict[str, Any]) -> None:
    native, diags = formats.to_native(Document(data=data, file="f.yaml"), display_name="f")
    assert native is not None and isinstance(native.data, dict)
    assert all(isinstance(d, Diagnostic) for d in diags)
    formats.native_document(native)


# --- review fixes: AI Platform defaults, crashes, locations in the user's format ----------------

def _pipeline(text: str) -> api.Result:
    return pipeline.check_document(load(text), api.Options(environ={}))


def test_legacy_hyperparameters_take_ai_platforms_defaults() -> None:
    # HyperparameterSpec: goal "Defaults to MAXIMIZE", maxTrials and maxParallelTrials "Defaults to one";
    # ParameterSpec.scaleType NONE is no scaling. Vertex AI requires both counts, so they are written out.
    native, diags = convert("""
        trainingInput:
          scaleTier: CUSTOM
          masterType: n1-standard-8
          masterConfig: {imageUri: gcr.io/p/t}
          hyperparameters:
            params:
              - {parameterName: lr, type: DOUBLE, minValue: 0.001, maxValue: 0.1, scaleType: NONE}
        """)
    assert diags == []
    study = native.data["study"]
    assert study["metric"] == {"id": "training/hptuning/metric", "goal": "maximize"}
    assert (study["max_trials"], study["parallel_trials"]) == (1, 1) and "max_failed_trials" not in study
    assert study["parameters"]["lr"] == {"type": "double", "min": 0.001, "max": 0.1}
    native, _ = convert("trainingInput: {scaleTier: BASIC, masterConfig: {imageUri: a}, "
                        "hyperparameters: {goal: GOAL_TYPE_UNSPECIFIED, maxTrials: 4}}\n")
    assert native.data["study"]["metric"]["goal"] == "maximize" and native.data["study"]["max_trials"] == 4
    result = _pipeline("""
        trainingInput:
          scaleTier: CUSTOM
          masterType: n1-standard-8
          masterConfig: {imageUri: gcr.io/p/t}
          hyperparameters:
            hyperparameterMetricTag: acc
            params: [{parameterName: n, type: INTEGER, minValue: 1, maxValue: 4, scaleType: NONE}]
        """)
    assert result.valid, [d.render() for d in result.diagnostics]


@pytest.mark.parametrize("hyperparameters", [
    {"algorithm": ["GRID_SEARCH"]},
    {"algorithm": {"a": 1}},
    {"params": [{"parameterName": "a", "type": "DOUBLE", "scaleType": ["UNIT_LOG_SCALE"]}]},
    {"params": [{"parameterName": "a", "type": "DOUBLE", "scaleType": {"x": 1}}]},
])
def test_legacy_hyperparameters_of_any_shape_do_not_crash(hyperparameters: dict[str, Any]) -> None:
    text = yaml.safe_dump({"scaleTier": "BASIC", "masterConfig": {"imageUri": "a"},
                           "hyperparameters": hyperparameters})
    result = _pipeline(text)  # raised TypeError: unhashable type: 'list'
    assert not result.valid
    assert all(d.line is not None and d.path.startswith("hyperparameters") for d in result.diagnostics
               if d.severity == "error")


@pytest.mark.parametrize(("text", "path", "line"), [
    ("workerPoolSpecs:\n  - {}\n  - {replicaCount: 2}\n", "workerPoolSpecs[0]", 2),
    ("workerPoolSpecs: []\n", "workerPoolSpecs", 1),
    ("workerPoolSpecs: null\n", "workerPoolSpecs", 1),
    ("workerPoolSpecs: 3\n", "workerPoolSpecs", 1),
    ("jobSpec:\n  workerPoolSpecs:\n    - null\n", "jobSpec.workerPoolSpecs[0]", 3),
    ("trainingInput:\n  scaleTier: NOPE\n", "trainingInput.scaleTier", 2),
    ("trainingInput:\n  scaleTier: CUSTOM\n", "trainingInput.scaleTier", 2),
])
def test_a_missing_chief_is_located_in_the_users_format(text: str, path: str, line: int) -> None:
    result = _pipeline(text)
    (diag,) = [d for d in result.diagnostics if d.code == "missing-chief"]
    assert (diag.path, diag.line) == (path, line), diag
    assert "add 'chief:'" not in diag.message  # the native spelling means nothing to this user
    assert ("workerPoolSpecs[0]" if "Spec" in text else "masterType") in diag.message


def test_hints_for_a_pool_without_code_speak_the_users_format() -> None:
    result = _pipeline("workerPoolSpecs:\n  - {machineSpec: {machineType: n1-standard-4}}\n")
    (diag,) = [d for d in result.diagnostics if d.code == "missing-image"]
    assert diag.path == "workerPoolSpecs[0]" and "containerSpec" in diag.message and "'image'" not in diag.message
    result = _pipeline("trainingInput: {scaleTier: CUSTOM, masterType: n1-standard-4}\n")
    (diag,) = [d for d in result.diagnostics if d.code == "missing-image"]
    assert "masterConfig.imageUri" in diag.message and "'image'" not in diag.message


def test_wrong_shapes_name_the_value() -> None:
    _, diags = convert("workerPoolSpecs:\n  - {machineSpec: {machineType: a}, containerSpec: {imageUri: i, env: x1}}\n")
    assert [d.message for d in diags if d.code == "wrong-type"] == [
        'env must be a list of {name, value} items, got "x1"']
    _, diags = convert("trainingInput: {scaleTier: BASIC, masterConfig: {imageUri: a}, hyperparameters: {params: 7}}\n")
    assert any(d.code == "wrong-type" and d.message.endswith("got 7") for d in diags)


# Structured documents of both foreign formats, with junk anywhere: the whole pipeline never
# raises, and every diagnostic is located (line and column) in the file the user wrote.
def _nest_junk(k: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(k, max_size=3), st.dictionaries(st.text(max_size=3), k, max_size=2))


_JUNK = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-2, 9), st.text(max_size=3)),
                     _nest_junk, max_leaves=5)


def _v(*good: Any) -> Any:
    return st.one_of(st.sampled_from(good), _JUNK)


def _obj(**fields: Any) -> Any:
    return st.fixed_dictionaries({}, optional=fields)


_PARAM = _obj(parameterName=_v("lr", "n"), type=_v("DOUBLE", "INTEGER", "DISCRETE", "CATEGORICAL"),
              minValue=_v(0, 0.001, 1), maxValue=_v(0.1, 4), discreteValues=_v([1, 2]),
              categoricalValues=_v(["a", "b"]), scaleType=_v("NONE", "UNIT_LOG_SCALE"))
_REPLICA = _obj(imageUri=_v("gcr.io/x"), acceleratorConfig=_obj(count=_v(1, 4), type=_v("NVIDIA_TESLA_T4")),
                containerCommand=_v(["python"]), containerArgs=_v(["--a"]),
                diskConfig=_obj(bootDiskType=_v("pd-ssd"), bootDiskSizeGb=_v(100)))
_TI = _obj(scaleTier=_v("CUSTOM", "BASIC", "STANDARD_1", "BASIC_GPU", "BASIC_TPU"),
           masterType=_v("n1-standard-8", "standard_gpu"), workerType=_v("n1-standard-8", "standard_v100"),
           workerCount=_v(0, 2, "3"), parameterServerType=_v("n1-standard-4"), parameterServerCount=_v(1),
           evaluatorCount=_v(1, 2), evaluatorType=_v("n1-standard-4"),
           masterConfig=st.one_of(_REPLICA, _JUNK), workerConfig=_REPLICA, packageUris=_v(["gs://a"]),
           pythonModule=_v("t.task"), runtimeVersion=_v("2.11"), args=_v(["--x"]),
           hyperparameters=st.one_of(_obj(goal=_v("MAXIMIZE"), params=_v([]) | st.lists(_PARAM, max_size=2),
                                          maxTrials=_v(4), algorithm=_v("GRID_SEARCH")), _JUNK),
           scheduling=_obj(maxRunningTime=_v("7200s"), priority=_v(1)), bogus=_JUNK)
_POOL = st.one_of(st.just({}), _JUNK, _obj(
    machineSpec=_obj(machineType=_v("n1-highmem-96"), acceleratorType=_v("NVIDIA_TESLA_V100"),
                     acceleratorCount=_v(0, 8, "8")),
    replicaCount=_v(1, 2, "3"), containerSpec=_obj(imageUri=_v("gcr.io/x", RS_US), env=_v([{"name": "A"}])),
    pythonPackageSpec=_obj(executorImageUri=_v("e"), packageUris=_v(["p"]), pythonModule=_v("m")),
    diskSpec=_obj(bootDiskSizeGb=_v(100))))
_SPEC = _obj(workerPoolSpecs=st.one_of(st.lists(_POOL, max_size=5), _JUNK),
             scheduling=_obj(timeout=_v("86400s"), strategy=_v("SPOT")), baseOutputDirectory=_v("gs://y"))
_FOREIGN = st.one_of(_TI, st.fixed_dictionaries({"trainingInput": _TI}, optional={"jobId": _v("j")}),
                     _SPEC, st.fixed_dictionaries({"jobSpec": _SPEC}, optional={"displayName": _v("d")}))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(_FOREIGN)
def test_foreign_formats_never_crash_and_every_diagnostic_is_located(data: dict[str, Any]) -> None:
    document, loaded = load_text(yaml.safe_dump(data), "f.yaml", environ={})
    if document is None:  # the loader refused the text (junk such as an unterminated "${"): located too
        assert loaded and all(d.line is not None and d.code != "internal-error" for d in loaded), loaded
        return
    result = pipeline.check_document(document, api.Options(environ={}))
    for d in result.diagnostics:
        assert d.file == "f.yaml" and d.line is not None and d.column is not None, d
        assert d.code != "internal-error", d


def test_legacy_package_fields_beside_a_custom_container_are_warned_not_dropped_silently() -> None:
    native, diags = convert("""\
        trainingInput:
          scaleTier: CUSTOM
          masterType: n1-standard-8
          masterConfig: {imageUri: gcr.io/p/trainer}
          packageUris: [gs://b/trainer-1.tar.gz]
          pythonModule: trainer.task
        """)
    assert native.data["chief"] == {"machine_type": "n1-standard-8", "image": "gcr.io/p/trainer"}
    warned = [d for d in diags if d.code == "legacy-package-ignored"]
    assert len(warned) == 1 and warned[0].severity == "warning" and warned[0].line == 6
    assert "packageUris and pythonModule" in warned[0].message


@pytest.mark.parametrize(("affinity", "native_form"), [
    ({"reservationAffinityType": "ANY_RESERVATION"}, {"affinity": "any"}),
    ({"reservationAffinityType": "NO_RESERVATION"}, {"affinity": "none"}),
    ({"reservationAffinityType": "SPECIFIC_RESERVATION"}, {"affinity": "specific"}),
    ({"reservationAffinityType": "SPECIFIC_RESERVATION", "key": "compute.googleapis.com/reservation-name",
      "values": ["projects/p/zones/us-central1-a/reservations/r"]},
     {"affinity": "specific", "name": "projects/p/zones/us-central1-a/reservations/r"}),
])
def test_gcloud_reservation_affinity_becomes_the_native_reservation(affinity: dict, native_form: dict) -> None:
    native, diags = convert(f"""
        workerPoolSpecs:
          - machineSpec: {{machineType: a2-highgpu-1g, reservationAffinity: {json.dumps(affinity)}}}
            containerSpec: {{imageUri: us-docker.pkg.dev/my-project/t/a:1}}
        """)
    assert diags == [] and native.data["chief"]["reservation"] == native_form and "extra" not in native.data
    where = native.where(("chief", "reservation", "affinity"))
    assert where["line"] == 3 and where["path"].endswith("machineSpec.reservationAffinity.reservationAffinityType")
    spec = compile_custom_job_spec(model.build(native.data))
    assert spec["workerPoolSpecs"][0]["machineSpec"]["reservationAffinity"] == affinity


def test_gcloud_reservation_affinity_of_another_shape_stays_in_extra() -> None:
    affinity = {"reservationAffinityType": "SPECIFIC_RESERVATION", "key": "other/key", "values": ["a", "b"]}
    native, diags = convert(f"""
        workerPoolSpecs:
          - machineSpec: {{machineType: a2-highgpu-1g, reservationAffinity: {json.dumps(affinity)}}}
            containerSpec: {{imageUri: us-docker.pkg.dev/my-project/t/a:1}}
        """)
    assert diags == [] and "reservation" not in native.data["chief"]
    assert native.data["extra"]["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]["reservationAffinity"] == affinity
