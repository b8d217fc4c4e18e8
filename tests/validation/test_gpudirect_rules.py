"""GPUDirect-RDMA jobs and GPU partitions (vxtrain.validation.gpudirect_rules): the warning
``gpudirect-nccl-env`` for a multi-node RDMA job whose command does not begin by sourcing the
NCCL settings (also when the command is written in ``extra:``), and MIG's partition rules."""
from __future__ import annotations

import shlex
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from vxtrain import api, model
from vxtrain.catalog import networking
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.validation import gpudirect_rules, rules
from tests.validation.specs import E, W, changed

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
LINE = "source /usr/local/gib/scripts/set_nccl_env.sh"
B200 = {"machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 8}}
H200 = {"machine_type": "a3-ultragpu-8g", "accelerator": {"type": "NVIDIA_H200_141GB", "count": 8}}
GB200 = {"machine_type": "a4x-highgpu-4g", "accelerator": {"type": "NVIDIA_GB200", "count": 4},
         "reservation": {"affinity": "specific", "name": "projects/p/zones/us-central1-a/reservations/r"}}
MEGA = {"machine_type": "a3-megagpu-8g", "accelerator": {"type": "NVIDIA_H100_MEGA_80GB", "count": 8}}
A100 = {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}}
TORCHRUN = ["torchrun", "--nnodes=2", "train.py"]
WITH_LINE = ["bash", "-c", f"{LINE} && exec torchrun train.py"]
BASE: dict[str, Any] = {"display_name": "t", "region": "us-central1",
                        "defaults": {"image": IMAGE, "command": TORCHRUN}, "chief": B200,
                        "workers": {**B200, "replicas": 1}}
CODES = ("gpudirect-", "gpu-partition-")


def spec(**changes: Any) -> dict[str, Any]:
    return changed(BASE, **changes)


def diagnostics(data: dict[str, Any]) -> list[Diagnostic]:
    return [d for d in rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))
            if d.code.startswith(CODES)]


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((d.severity, d.code, d.path) for d in diagnostics(data))


CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("two-b200-nodes", BASE, [W("gpudirect-nccl-env", "defaults.command")]),
    ("one-node", spec(workers=None), []),
    ("chief-with-line", spec(defaults={"command": WITH_LINE}), []),
    ("h200", spec(chief=H200, workers={**H200, "replicas": 3}), [W("gpudirect-nccl-env", "defaults.command")]),
    ("gb200", spec(chief=GB200, workers={**GB200, "replicas": 1}), [W("gpudirect-nccl-env", "defaults.command")]),
    ("tcpxo-is-not-rdma", spec(chief=MEGA, workers={**MEGA, "replicas": 3}), []),
    ("a100-is-tcp", spec(chief=A100, workers={**A100, "replicas": 3}), []),
    ("one-rdma-node-beside-a100", spec(workers={**A100, "replicas": 4}), []),
    ("evaluator-not-counted", spec(workers=None, evaluators={**B200, "replicas": 1}), []),
    ("pool-own-command", spec(workers={**B200, "replicas": 1, "command": WITH_LINE}),
     [W("gpudirect-nccl-env", "defaults.command")]),  # the chief still lacks it
    ("args-only", BASE | {"defaults": {"image": IMAGE, "args": ["--epochs=3"]}},
     [W("gpudirect-nccl-env", "defaults.args")]),
    ("image-entrypoint", BASE | {"defaults": {"image": IMAGE}},
     [W("gpudirect-nccl-env", "chief"), W("gpudirect-nccl-env", "workers")]),
    ("python-package", BASE | {"defaults": {"python_package": {
        "executor_image": "us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest",
        "package_uris": ["gs://b/t.tar.gz"], "module": "trainer.task"}}},
     [W("gpudirect-nccl-env", "defaults.python_package")]),
    # the line in the shapes a shell takes it
    ("sh-dot", spec(defaults={"command": ["sh", "-c", f". {networking.NCCL_ENV_SCRIPT}; python t.py"]}), []),
    ("bin-bash-lc", spec(defaults={"command": ["/bin/bash", "-lc", f"{LINE}\npython t.py"]}), []),
    ("bash-then-args", spec(defaults={"command": ["bash"], "args": ["-c", f"{LINE} && python t.py"]}), []),
    ("quoted-script", spec(defaults={"command": ["bash", "-c", f"source '{networking.NCCL_ENV_SCRIPT}' && x"]}), []),
    ("line-not-first", spec(defaults={"command": ["bash", "-c", f"cd /app && {LINE} && python t.py"]}),
     [W("gpudirect-nccl-env", "defaults.command")]),
    ("other-script", spec(defaults={"command": ["bash", "-c", "source /usr/local/gib/scripts/set_nccl_env.sh.bak"]}),
     [W("gpudirect-nccl-env", "defaults.command")]),
    ("bash-without-c", spec(defaults={"command": ["bash", "run.sh"]}), [W("gpudirect-nccl-env", "defaults.command")]),
    # the command extra: sends replaces the pool's: checked there
    ("extra-command-adds-line", spec(extra={"jobSpec": {"workerPoolSpecs": [
        {"containerSpec": {"command": WITH_LINE}}, {"containerSpec": {"command": WITH_LINE}}]}}), []),
    ("extra-command-lacks-line", spec(defaults={"command": WITH_LINE}, extra={"jobSpec": {"workerPoolSpecs": [
        {}, {"containerSpec": {"command": TORCHRUN}}]}}),
     [W("gpudirect-nccl-env", "extra.jobSpec.workerPoolSpecs[1].containerSpec.command")]),
    # GPU partitions (MIG)
    ("partition", spec(workers=None, defaults={"image": IMAGE}, chief={**A100, "accelerator": {
        "type": "NVIDIA_TESLA_A100", "count": 1, "partition_size": "1g.5gb"}}), []),
    ("partition-count-2", spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "a2-highgpu-2g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 2,
                                                         "partition_size": "1g.5gb"}}),
     [E("gpu-partition-count", "chief.accelerator.count")]),
    ("partition-a100-40gb-1g-10gb", spec(workers=None, defaults={"image": IMAGE}, chief={**A100, "accelerator": {
        "type": "NVIDIA_TESLA_A100", "count": 1, "partition_size": "1g.10gb"}}), []),  # NVIDIA's A100 40GB table
    ("partition-8g-does-not-exist", spec(workers=None, defaults={"image": IMAGE}, chief={**A100, "accelerator": {
        "type": "NVIDIA_TESLA_A100", "count": 1, "partition_size": "8g.40gb"}}),
     [E("gpu-partition-size", "chief.accelerator.partition_size")]),
    ("partition-a100-80gb-size-on-a100-40gb", spec(workers=None, defaults={"image": IMAGE}, chief={
        **A100, "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1, "partition_size": "7g.80gb"}}),
     [E("gpu-partition-size", "chief.accelerator.partition_size")]),
    ("partition-h200", spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "a3-ultragpu-8g", "accelerator": {"type": "NVIDIA_H200_141GB", "count": 1,
                                                          "partition_size": "1g.18gb"}}), []),
    ("partition-h200-a100-size", spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "a3-ultragpu-8g", "accelerator": {"type": "NVIDIA_H200_141GB", "count": 1,
                                                          "partition_size": "1g.10gb"}}),
     [E("gpu-partition-size", "chief.accelerator.partition_size")]),
    ("partition-b200", spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 1,
                                                         "partition_size": "7g.180gb"}}), []),
    ("partition-on-t4", spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1,
                                                         "partition_size": "1g.5gb"}}),
     [E("gpu-partition-unsupported", "chief.accelerator.partition_size")]),
    ("partition-on-l4", spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "g2-standard-8", "accelerator": {"type": "NVIDIA_L4", "count": 1, "partition_size": "1g.6gb"}}),
     [E("gpu-partition-unsupported", "chief.accelerator.partition_size")]),
    ("partition-on-tpu", spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "cloud-tpu", "accelerator": {"type": "TPU_V3", "count": 8, "partition_size": "1g.5gb"}}),
     [E("gpu-partition-needs-gpu", "chief.accelerator.partition_size")]),
    ("partition-in-defaults-once", BASE | {"chief": {}, "workers": {"replicas": 2}, "defaults": {"image": IMAGE, **A100,
        "accelerator": {"type": "NVIDIA_A100_80GB", "count": 1, "partition_size": "9g.1gb"}}},
     [E("gpu-partition-size", "defaults.accelerator.partition_size")]),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_gpudirect_rules(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


def test_the_warning_gives_the_exact_command_to_write() -> None:
    (d,) = diagnostics(BASE)
    assert "chief (a4-highgpu-8g) and workers (a4-highgpu-8g) run on GPUDirect-RDMA machines, 2 nodes" in d.message
    assert f'command: [bash, -c, "{LINE} && exec torchrun --nnodes=2 train.py"]' in d.message
    assert "When using RDMA, add" in d.message


def test_the_suggested_command_is_accepted_by_the_rule() -> None:
    """The fix the message gives, written back, silences it (the check and the fix agree)."""
    (d,) = diagnostics(BASE)
    written = d.message.split("write it as command: ")[1].split(" (and no args)")[0]
    fixed = yaml.safe_load(written)
    assert gpudirect_rules.begins_with_nccl_env(fixed)
    assert found(spec(defaults={"command": fixed})) == []


@given(st.lists(st.text(alphabet="abcxyz-_=./ '\"$;&", min_size=1, max_size=8), min_size=1, max_size=5))
def test_any_command_is_fixed_by_its_suggestion(argv: list[str]) -> None:
    message = gpudirect_rules.fixed_command(argv)
    fixed = yaml.safe_load(message.split("write it as command: ")[1].split(" (and no args)")[0])
    assert gpudirect_rules.begins_with_nccl_env(fixed)
    script = fixed[2].removeprefix(f"{LINE} && ")
    if gpudirect_rules.shell_script(argv) is None:  # the original command, run by exec, word for word
        assert shlex.split(script) == ["exec", *argv]


def test_warning_has_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        display_name: t
        region: us-central1
        defaults:
          image: {IMAGE}
        chief:
          machine_type: a3-ultragpu-8g
          accelerator: {{type: NVIDIA_H200_141GB, count: 8}}
          command: [python, -m, trainer.task]
        workers:
          replicas: 1
          machine_type: a3-ultragpu-8g
          accelerator: {{type: NVIDIA_H200_141GB, count: 8}}
          command: [bash, -c, "{LINE} && python -m trainer.task"]
        """))
    result = api.check_file(path, api.Options(environ={}))
    (d,) = [d for d in result.diagnostics if d.code == "gpudirect-nccl-env"]
    assert (d.severity, d.path, d.file, d.line, d.column) == ("warning", "chief.command", str(path), 8, 3)
    assert "chief (a3-ultragpu-8g) runs on GPUDirect-RDMA machines, 2 nodes in all" in d.message
    strict = api.check_file(path, api.Options(environ={}, strict=True))
    assert strict.custom_job is not None  # a warning: the job is still sent (--strict makes the exit 1)


def test_command_in_extra_is_checked_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        display_name: t
        region: us-central1
        defaults:
          image: {IMAGE}
          command: [bash, -c, "{LINE} && python -m trainer.task"]
        chief: {{machine_type: a4-highgpu-8g, accelerator: {{type: NVIDIA_B200, count: 8}}}}
        workers: {{replicas: 3, machine_type: a4-highgpu-8g, accelerator: {{type: NVIDIA_B200, count: 8}}}}
        extra:
          jobSpec:
            workerPoolSpecs:
              - containerSpec:
                  command: [python, -m, trainer.task]
        """))
    result = api.check_file(path, api.Options(environ={}))
    (d,) = [d for d in result.diagnostics if d.code == "gpudirect-nccl-env"]
    assert (d.path, d.line, d.column) == ("extra.jobSpec.workerPoolSpecs[0].containerSpec.command", 12, 11)
    assert "chief (a4-highgpu-8g) runs on GPUDirect-RDMA machines, 4 nodes in all" in d.message


def test_partition_size_in_extra_is_checked_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        display_name: t
        region: us-central1
        chief:
          image: {IMAGE}
          machine_type: a2-highgpu-2g
          accelerator: {{type: NVIDIA_TESLA_A100, count: 2}}
        extra:
          jobSpec:
            workerPoolSpecs:
              - machineSpec: {{gpuPartitionSize: 1g.5gb}}
        """))
    result = api.check_file(path, api.Options(environ={}))
    (d,) = [d for d in result.diagnostics if d.code.startswith("gpu-partition")]
    assert (d.code, d.path, d.line) == ("gpu-partition-count", "chief.accelerator.count", 6)
    assert "needs count: 1 (got 2)" in d.message
    assert result.custom_job is None  # an error: nothing is sent


def test_a_size_extra_sets_that_the_gpu_lacks_is_an_error_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(f"""\
        display_name: t
        region: us-central1
        chief:
          image: {IMAGE}
          machine_type: a2-ultragpu-1g
          accelerator: {{type: NVIDIA_A100_80GB, count: 1}}
        extra:
          jobSpec:
            workerPoolSpecs:
              - machineSpec: {{gpuPartitionSize: 8g.80gb}}
        """))
    result = api.check_file(path, api.Options(environ={}))
    (d,) = [d for d in result.diagnostics if d.code.startswith("gpu-partition")]
    assert (d.severity, d.code, d.line) == ("error", "gpu-partition-size", 10)
    assert d.path == "extra.jobSpec.workerPoolSpecs[0].machineSpec.gpuPartitionSize"
    assert "1g.10gb, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb" in d.message
    assert result.custom_job is None


# --- the table: which GPUs have MIG, and their sizes ------------------------------------------

#: NVIDIA's MIG user guide, "Supported GPUs" (MIG from the Ampere generation on), and each GPU's
#: profiles ("Supported MIG Profiles"; mig-parted's default config): what the catalog restates.
MIG_SIZES = {
    "NVIDIA_TESLA_A100": {"1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"},
    "NVIDIA_A100_80GB": {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
    "NVIDIA_H100_80GB": {"1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"},
    "NVIDIA_H200_141GB": {"1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"},
    "NVIDIA_B200": {"1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"},
}
NO_MIG = ("NVIDIA_TESLA_T4", "NVIDIA_TESLA_V100", "NVIDIA_TESLA_P100", "NVIDIA_TESLA_P4", "NVIDIA_L4",
          "NVIDIA_TESLA_K80")


@pytest.mark.parametrize("accelerator", sorted(MIG_SIZES))
def test_each_mig_gpu_has_its_profiles_and_no_other(accelerator: str) -> None:
    found = networking.gpu_partitions(accelerator)
    assert found is not None and set(found.sizes) == MIG_SIZES[accelerator]


@pytest.mark.parametrize("accelerator", NO_MIG)
def test_a_gpu_before_ampere_or_the_l4_has_no_mig(accelerator: str) -> None:
    found = networking.gpu_partitions(accelerator)
    assert found is not None and found.sizes == ()
    assert "supported-gpus" in found.source


def test_every_size_names_at_most_seven_compute_slices_and_the_gpus_memory() -> None:
    """No ``8g`` anywhere: a MIG GPU has seven compute slices (four on RTX PRO 6000)."""
    for accelerator in ("NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB",
                        "NVIDIA_H200_141GB", "NVIDIA_B200", "NVIDIA_GB200", "NVIDIA_RTX_PRO_6000"):
        found = networking.gpu_partitions(accelerator)
        sizes = found.sizes if found is not None else ()
        assert sizes, accelerator
        for size in sizes:
            compute, memory = size.removesuffix("gb").split("g.")
            assert 1 <= int(compute) <= 7 and int(memory) > 0, (accelerator, size)


def test_a_gpu_the_table_does_not_know_is_a_warning() -> None:
    data = spec(workers=None, defaults={"image": IMAGE}, chief={
        "machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_FUTURE_GPU", "count": 1,
                                                         "partition_size": "1g.5gb"}})
    assert W("gpu-partition-unchecked", "chief.accelerator.partition_size") in found(data)
