"""GPUs in local runs: the host's inventory, who gets which GPU, the refusal and the options.

The inventories are set, as a user sets them, through ``CUDA_VISIBLE_DEVICES``,
``--gpus`` or a stand-in ``nvidia-smi`` on PATH (an external program); the
assignment is checked by properties; the runs are real processes that print the
``CUDA_VISIBLE_DEVICES`` they got.
"""
from __future__ import annotations

import collections
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vxtrain.errors import GpuShortageError, UsageError
from vxtrain.model import Job, build
from vxtrain.runtime import gpus
from vxtrain.runtime import runner as local
from vxtrain.runtime.gpus import GpuOptions

T4 = {"type": "NVIDIA_TESLA_T4", "count": 1}
#: Every replica prints the CUDA_VISIBLE_DEVICES it got, and records that it started.
SHOW = ("import json, os; name = json.loads(os.environ['CLUSTER_SPEC'])['task']; "
        "name = f\"{name['type']}-{name['index']}\"; "
        "open(os.path.join(os.environ['MARKS'], name), 'w').close(); "
        "print('CVD=' + repr(os.environ['CUDA_VISIBLE_DEVICES']))")


def gpu_job(marks: Path | None = None, *, chief: int = 1, workers: int = 2, per_worker: int = 1,
            ps: int = 0, evaluators: int = 0, **extra: Any) -> Job:
    """Chief (``chief`` GPUs), ``workers`` workers of ``per_worker`` GPUs, CPU-only PS and evaluators."""
    base = {"machine_type": "n1-standard-8", "image": "gcr.io/p/t:1"}
    data: dict[str, Any] = {"display_name": "g", "chief": {**base, **({"accelerator": {**T4, "count": chief}}
                                                                     if chief else {})}}
    if workers:
        data["workers"] = {**base, "replicas": workers, "accelerator": {**T4, "count": per_worker}}
    if ps:
        data["parameter_servers"] = {**base, "replicas": ps}
    if evaluators:
        data["evaluators"] = {**base, "replicas": evaluators}
    if marks is not None:
        data["local"] = {"command": [sys.executable, "-c", SHOW], "env": {"MARKS": str(marks)}}
    return build({**data, **extra})


def visible(plan: gpus.GpuPlan) -> dict[str, str]:
    return {name: plan.visible(name) for name in plan.devices}


# --- the device list syntax and the inventory -------------------------------------------------

def test_a_device_list_takes_indices_and_uuids() -> None:
    assert gpus.parse_gpu_list("0, 3,GPU-8932f937-d72c-4106-c12f-20bd9faed9f6,MIG-4b3a") == (
        "0", "3", "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "MIG-4b3a")
    assert gpus.parse_gpu_list("") == () and gpus.parse_gpu_list(" ") == ()


@pytest.mark.parametrize("text, bad", [("0,gpu1", "gpu1"), ("-1", "-1"), ("0,,1", ""), ("all", "all")])
def test_gpus_refuses_what_is_not_a_device(text: str, bad: str) -> None:
    with pytest.raises(UsageError, match=f"got {bad!r} in {text!r}"):
        gpus.parse_gpu_list(text)


def test_gpus_refuses_a_device_twice_and_points_at_share_gpus() -> None:
    with pytest.raises(UsageError, match="names 0 more than once.*--share-gpus"):
        gpus.parse_gpu_list("0,1,0")


def test_no_gpus_with_another_gpu_option_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="--no-gpus"):
        gpus.options_from_flags("0", False, True)
    with pytest.raises(UsageError, match="--no-gpus"):
        gpus.options_from_flags(None, True, True)
    assert gpus.options_from_flags("1,0", True, False) == GpuOptions(("1", "0"), True, False)


@pytest.mark.parametrize("value, devices", [
    ("0,1", ("0", "1")), ("GPU-aa-bb, GPU-cc", ("GPU-aa-bb", "GPU-cc")), ("", ()),
    ("-1", ()),  # CUDA reads up to the first entry that is not a device: the usual way to hide all
    ("2,x,3", ("2",)), ("1,1,0", ("1", "0")),
])
def test_vxtrains_own_cuda_visible_devices_is_the_inventory(value: str, devices: tuple[str, ...]) -> None:
    found = gpus.host_inventory({"CUDA_VISIBLE_DEVICES": value, "PATH": ""})
    assert found.devices == devices and found.source == f"CUDA_VISIBLE_DEVICES={value!r}"


def fake_smi(folder: Path, output: str, code: int = 0) -> str:
    """A stand-in ``nvidia-smi`` (an external program) printing ``output``; its folder, for PATH."""
    folder.mkdir(exist_ok=True)
    program = folder / "nvidia-smi"
    program.write_text(f"#!/bin/sh\n[ \"$1\" = -L ] || exit 64\ncat <<'EOF'\n{output}\nEOF\nexit {code}\n")
    program.chmod(program.stat().st_mode | stat.S_IEXEC)
    return str(folder)


SMI = ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-5f2d0c1e-1111-2222-3333-444455556666)\n"
       "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-0a1b2c3d-7777-8888-9999-aaaabbbbcccc)")


@pytest.fixture
def no_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a host without nvidia-ml-py (``import pynvml`` fails), whatever this one has."""
    monkeypatch.setitem(sys.modules, "pynvml", None)


def test_without_cuda_visible_devices_nvidia_smi_lists_the_gpus_by_uuid(tmp_path: Path, no_nvml: None) -> None:
    found = gpus.host_inventory({"PATH": fake_smi(tmp_path / "bin", SMI)})
    assert found.devices == ("GPU-5f2d0c1e-1111-2222-3333-444455556666", "GPU-0a1b2c3d-7777-8888-9999-aaaabbbbcccc")
    assert found.source == "nvidia-smi -L"


def test_a_failing_nvidia_smi_or_none_at_all_means_no_gpu(tmp_path: Path, no_nvml: None) -> None:
    broken = fake_smi(tmp_path / "bin", "NVIDIA-SMI has failed because it couldn't communicate with the "
                                        "NVIDIA driver.", code=9)
    assert gpus.host_inventory({"PATH": broken}).devices == ()
    nothing = gpus.host_inventory({"PATH": str(tmp_path / "empty")})
    assert nothing.devices == () and "neither nvidia-ml-py nor nvidia-smi" in nothing.source


def test_cuda_visible_devices_wins_over_nvidia_smi(tmp_path: Path, no_nvml: None) -> None:
    found = gpus.host_inventory({"PATH": fake_smi(tmp_path / "bin", SMI), "CUDA_VISIBLE_DEVICES": "1"})
    assert found.devices == ("1",)


# --- the assignment, as properties --------------------------------------------------------------

counts_st = st.lists(st.integers(0, 4), max_size=8)
inventory_st = st.lists(st.one_of(st.integers(0, 15).map(str), st.uuids().map(lambda u: f"GPU-{u}")),
                        max_size=12, unique=True)


@settings(max_examples=300, deadline=None)
@given(counts_st, inventory_st)
def test_without_sharing_every_replica_gets_its_count_and_no_gpu_is_handed_twice(
        counts: list[int], inventory: list[str]) -> None:
    got = gpus.assign(counts, inventory)
    if sum(counts) > len(inventory):
        assert got is None  # short: refused, never partly handed out
        return
    assert got is not None
    assert [len(d) for d in got] == counts
    handed = [d for devices in got for d in devices]
    assert len(handed) == len(set(handed))
    assert handed == inventory[:len(handed)]  # in pool order, from the front of the inventory


@settings(max_examples=300, deadline=None)
@given(counts_st, inventory_st.filter(bool))
def test_sharing_hands_out_round_robin_evenly_and_never_twice_to_one_replica(
        counts: list[int], inventory: list[str]) -> None:
    got = gpus.assign(counts, inventory, share=True)
    assert got is not None
    assert [len(d) for d in got] == [min(n, len(inventory)) for n in counts]
    assert all(len(set(d)) == len(d) for d in got)  # CUDA cannot show one device twice to a process
    uses = collections.Counter(d for devices in got for d in devices)
    assert set(uses) <= set(inventory)
    if sum(counts) >= len(inventory):
        assert max(uses.values()) - min(uses[d] for d in inventory) <= 1
    if sum(counts) <= len(inventory):
        assert got == gpus.assign(counts, inventory)  # enough GPUs: sharing changes nothing


def test_sharing_an_empty_inventory_is_still_short() -> None:
    assert gpus.assign([1], [], share=True) is None


# --- a job's plan ----------------------------------------------------------------------------------

def test_gpus_go_in_pool_order_and_cpu_pools_get_none() -> None:
    job = gpu_job(chief=1, workers=2, per_worker=2, ps=1, evaluators=1)
    plan = gpus.resolve(job, GpuOptions(("4", "5", "6", "7", "8", "9")))
    assert visible(plan) == {"workerpool0-0": "4", "workerpool1-0": "5,6", "workerpool1-1": "7,8",
                             "workerpool2-0": "", "workerpool3-0": ""}
    assert plan.needed == 5 and not plan.notes and not plan.warnings


def test_uuids_are_handed_out_as_they_are() -> None:
    ids = ("GPU-5f2d0c1e-1111-2222-3333-444455556666", "GPU-0a1b2c3d-7777-8888-9999-aaaabbbbcccc")
    plan = gpus.resolve(gpu_job(workers=1), environ={"CUDA_VISIBLE_DEVICES": ",".join(ids)})
    assert visible(plan) == {"workerpool0-0": ids[0], "workerpool1-0": ids[1]}


def test_too_few_gpus_refuse_naming_each_pool_the_host_and_the_options() -> None:
    with pytest.raises(GpuShortageError) as refused:
        gpus.resolve(gpu_job(workers=2, per_worker=2), environ={"CUDA_VISIBLE_DEVICES": "0,1"})
    text = str(refused.value)
    assert text.splitlines()[0] == ("the job needs 5 GPUs and this host has 2 (CUDA_VISIBLE_DEVICES='0,1'); "
                                    "nothing was started:")
    assert "  chief.accelerator.count: 1 GPU x 1 replica = 1 (workerpool0)" in text
    assert "  workers.accelerator.count: 2 GPUs x 2 replicas = 4 (workerpool1)" in text
    assert all(flag in text for flag in ("pass --gpus LIST", "--share-gpus", "--no-gpus"))
    assert refused.value.exit_code == 1


def test_the_emulators_refusal_names_the_custom_jobs_keys_and_its_own_options() -> None:
    with pytest.raises(GpuShortageError) as refused:
        gpus.resolve(gpu_job(), GpuOptions(("0",)), emulator=True)
    assert "workerPoolSpecs[1].machineSpec.acceleratorCount: 1 GPU x 2 replicas" in str(refused.value)
    assert "start the emulator with --gpus LIST" in str(refused.value)


def test_a_host_without_gpus_runs_everything_on_the_cpu_with_one_note() -> None:
    plan = gpus.resolve(gpu_job(), environ={"CUDA_VISIBLE_DEVICES": ""})
    assert set(visible(plan).values()) == {""} and not plan.warnings
    assert plan.notes == ("this host has no GPU (CUDA_VISIBLE_DEVICES=''): the job asks for 3 GPUs; "
                          "every replica runs on the CPU",)


def test_a_job_without_gpus_never_reads_the_inventory(tmp_path: Path) -> None:
    job = gpu_job(chief=0, workers=0, evaluators=1)
    plan = gpus.resolve(job, environ={"CUDA_VISIBLE_DEVICES": "0"})
    assert plan.inventory.source == "not read" and not plan.notes and set(visible(plan).values()) == {""}


def test_share_gpus_round_robin_with_the_nccl_warning() -> None:
    plan = gpus.resolve(gpu_job(), GpuOptions(("0", "1"), share=True))
    assert visible(plan) == {"workerpool0-0": "0", "workerpool1-0": "1", "workerpool1-1": "0"}
    assert len(plan.warnings) == 1 and '"Duplicate GPU detected"' in plan.warnings[0]
    roomy = gpus.resolve(gpu_job(), GpuOptions(("0", "1", "2"), share=True))
    assert not roomy.warnings  # enough GPUs: nothing is shared


def test_no_gpus_gives_every_replica_none_and_names_the_pools_that_asked() -> None:
    plan = gpus.resolve(gpu_job(workers=2, per_worker=2, evaluators=1), GpuOptions(none=True),
                        environ={"CUDA_VISIBLE_DEVICES": "0"})
    assert set(visible(plan).values()) == {""}
    assert plan.warnings == ("--no-gpus: chief (1 GPU), workers (2 replicas x 2 GPUs) ask for GPUs; "
                             "every replica runs on the CPU",)


def test_tpu_pools_and_the_reduction_server_take_no_gpu() -> None:
    tpu = build({"display_name": "t", "chief": {"machine_type": "cloud-tpu", "image": "i",
                                                 "accelerator": {"type": "TPU_V3", "count": 8}}})
    plan = gpus.resolve(tpu, environ={"CUDA_VISIBLE_DEVICES": "0"})
    assert plan.needed == 0 and visible(plan) == {"workerpool0-0": ""}
    rs = gpu_job(workers=1, reduction_server={"machine_type": "n1-highcpu-16", "replicas": 2})
    assert list(gpus.resolve(rs, GpuOptions(("0", "1"))).devices) == ["workerpool0-0", "workerpool1-0"]


# --- studies: trials at once --------------------------------------------------------------------

def test_a_study_runs_as_many_trials_at_once_as_the_gpus_fit() -> None:
    plan = gpus.resolve(gpu_job(workers=1), GpuOptions(("0", "1", "2", "3", "4")))
    slots = gpus.trial_slots(plan, 4)
    assert slots.at_once == 2 and slots.slots == [("0", "1"), ("2", "3")]
    assert slots.note == ("parallel_trials is 4, but each trial needs 2 GPUs and this host has 5 "
                          "(--gpus: 0, 1, 2, 3, 4): 2 trials at a time")
    assert gpus.trial_slots(plan, 1) == gpus.TrialGpus(1, [("0", "1")], None)


def test_trials_are_not_limited_on_the_cpu_and_share_one_slot_when_short() -> None:
    cpu = gpus.resolve(gpu_job(), environ={"CUDA_VISIBLE_DEVICES": ""})
    assert gpus.trial_slots(cpu, 3).at_once == 3 and gpus.trial_slots(cpu, 3).note is None
    shared = gpus.resolve(gpu_job(), GpuOptions(("0",), share=True))
    assert gpus.trial_slots(shared, 3).slots == [("0",)]


# --- real runs --------------------------------------------------------------------------------

class Lines(list[str]):
    """An ``out`` callable that keeps every line."""

    def __call__(self, text: str) -> None:
        self.append(text.rstrip("\n"))

    def of(self, name: str) -> str:
        return next(line.split("CVD=", 1)[1] for line in self if line.startswith(f"[{name}] CVD="))


def run(job: Job, **kw: Any) -> tuple[local.LocalRunResult, Lines]:
    out = Lines()
    return local.run_job(job, {"workerPoolSpecs": []}, out=out, grace=1.0, **kw), out


@pytest.mark.slow
def test_each_replica_gets_its_own_gpus_from_cuda_visible_devices(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5,GPU-aa11,7")
    result, out = run(gpu_job(tmp_path, workers=1, per_worker=2, evaluators=1))
    assert result.succeeded, out
    assert [out.of(n) for n in ("workerpool0-0", "workerpool1-0", "workerpool3-0")] == ["'3'", "'5,GPU-aa11'", "''"]
    assert [r.gpus for r in result.replicas] == [["3"], ["5", "GPU-aa11"], []]
    assert result.to_json()["replicas"][1]["gpus"] == ["5", "GPU-aa11"]
    assert ("[vxtrain] starting 3 replica(s): workerpool0-0 (chief, GPU 3), workerpool1-0 (workers, GPUs "
            "5,GPU-aa11), workerpool3-0 (evaluators)") in out


@pytest.mark.slow
def test_gpus_nvidia_smi_lists_reach_the_replicas_by_uuid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_nvml: None) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", f"{fake_smi(tmp_path / 'bin', SMI)}{os.pathsep}{os.environ['PATH']}")
    marks = tmp_path / "marks"
    marks.mkdir()
    result, out = run(gpu_job(marks, workers=1))
    assert result.succeeded, out
    assert out.of("workerpool0-0") == "'GPU-5f2d0c1e-1111-2222-3333-444455556666'"
    assert out.of("workerpool1-0") == "'GPU-0a1b2c3d-7777-8888-9999-aaaabbbbcccc'"


@pytest.mark.slow
def test_a_short_host_refuses_before_any_replica_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    with pytest.raises(GpuShortageError, match="needs 3 GPUs and this host has 1"):
        run(gpu_job(tmp_path))
    assert list(tmp_path.iterdir()) == []  # no replica ever ran


@pytest.mark.slow
def test_share_and_no_gpus_in_a_real_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    result, out = run(gpu_job(tmp_path), gpus=GpuOptions(share=True))
    assert result.succeeded and {out.of(f"workerpool{k}") for k in ("0-0", "1-0", "1-1")} == {"'0'"}
    assert sum("NCCL refuses" in line for line in out) == 1
    result, out = run(gpu_job(tmp_path), gpus=GpuOptions(none=True))
    assert result.succeeded and {out.of(f"workerpool{k}") for k in ("0-0", "1-0", "1-1")} == {"''"}
    assert [line for line in out if "warning" in line] == [
        "[vxtrain] warning: --no-gpus: chief (1 GPU), workers (2 replicas x 1 GPU) ask for GPUs; every replica "
        "runs on the CPU"]


@pytest.mark.slow
def test_a_host_without_gpus_runs_the_job_on_the_cpu_saying_so_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_nvml: None) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'no-nvidia-smi'}{os.pathsep}{os.environ['PATH']}")
    if gpus.host_inventory().devices:
        pytest.skip("this host has GPUs")
    result, out = run(gpu_job(tmp_path, workers=1))
    assert result.succeeded and out.of("workerpool1-0") == "''"
    assert sum("this host has no GPU" in line for line in out) == 1


@pytest.mark.slow
def test_a_caller_cuda_visible_devices_never_leaks_into_a_cpu_replica(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A CPU pool's Vertex machine has no GPU: the caller's CUDA_VISIBLE_DEVICES is not passed on."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    result, out = run(gpu_job(tmp_path, chief=0, workers=0, evaluators=1))
    assert result.succeeded and out.of("workerpool0-0") == "''" and out.of("workerpool3-0") == "''"
    assert json.dumps(result.to_json()).count('"gpus": []') == 2


# --- through the commands: local-run, a study, submit --target local ------------------------------

def spec_file(tmp_path: Path, code: str, *, workers: int = 1, **extra: Any) -> Path:
    """A spec whose chief and ``workers`` workers each ask for one GPU and run ``code``."""
    pool = {"machine_type": "n1-standard-8", "accelerator": T4}
    spec: dict[str, Any] = {"display_name": "g", "defaults": {"image": "gcr.io/p/t:1"}, "chief": pool,
                            "local": {"command": ["python", "-c", code]}, **extra}
    if workers:
        spec["workers"] = {**pool, "replicas": workers}
    path = tmp_path / "gpu.yaml"
    path.write_text(json.dumps(spec))
    return path


PRINT = "import os; print('CVD=' + repr(os.environ['CUDA_VISIBLE_DEVICES']))"


@pytest.mark.slow
def test_local_run_json_shows_each_replicas_gpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.incli import run as cli  # here: the CLI is what this test exercises

    code, doc, err = cli(capsys, "local-run", str(spec_file(tmp_path, PRINT)), "--output", "json",
                         "--gpus", "GPU-aa11,GPU-bb22")
    assert code == 0, err
    assert [(r["name"], r["gpus"]) for r in doc["replicas"]] == [("workerpool0-0", ["GPU-aa11"]),
                                                                 ("workerpool1-0", ["GPU-bb22"])]
    assert "[workerpool1-0] CVD='GPU-bb22'" in err  # the replicas' lines: stderr under --output json


@pytest.mark.slow
def test_local_run_refuses_a_short_host_with_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.incli import run as cli  # here: the CLI is what this test exercises

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    code, out, err = cli(capsys, "local-run", str(spec_file(tmp_path, PRINT)))
    assert code == 1 and out == "" and "CVD=" not in err
    assert err.startswith("vxtrain: error: the job needs 2 GPUs and this host has 1 (CUDA_VISIBLE_DEVICES='0')")
    assert "Traceback" not in err
    code, doc, _ = cli(capsys, "local-run", str(spec_file(tmp_path, PRINT)), "-o", "json")
    assert code == 1 and doc["error"]["type"] == "GpuShortageError" and doc["error"]["exit_code"] == 1


@pytest.mark.slow
def test_gpu_options_that_do_not_fit_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from tests.incli import run as cli  # here: the CLI is what this test exercises

    spec = str(spec_file(tmp_path, PRINT))
    assert cli(capsys, "local-run", spec, "--gpus", "0,zero")[0] == 2
    assert cli(capsys, "local-run", spec, "--gpus", "0", "--no-gpus")[0] == 2
    code, _, err = cli(capsys, "submit", spec, "--gpus", "0,1", "--project", "p", "--region", "us-central1")
    assert code == 2 and "are for local runs: add --target local" in err


@pytest.mark.slow
def test_a_study_never_runs_two_trials_on_one_gpu(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each trial holds a lock file per GPU while it runs: a GPU handed to two trials at once
    would make the second fail to create it."""
    from tests.incli import run as cli  # here: the CLI is what this test exercises

    locks = tmp_path / "locks"
    locks.mkdir()
    code = ("import os, time; cvd = os.environ['CUDA_VISIBLE_DEVICES']; "
            f"lock = os.path.join({str(locks)!r}, 'gpu-' + cvd); fd = os.open(lock, os.O_CREAT | os.O_EXCL); "
            "time.sleep(0.4); os.close(fd); os.remove(lock); print('trained on', cvd)")
    study_ = {"metric": {"id": "accuracy", "goal": "maximize"}, "algorithm": "grid",
              "parameters": {"x": {"type": "integer", "min": 1, "max": 4}}, "max_trials": 4, "parallel_trials": 3}
    spec = spec_file(tmp_path, code, workers=0, study=study_)
    status, doc, err = cli(capsys, "local-run", str(spec), "--gpus", "0,1", "-o", "json")
    assert status == 0, err
    assert [t["state"] for t in doc["trials"]] == ["SUCCEEDED"] * 4
    note = ("parallel_trials is 3, but each trial needs 1 GPU and this host has 2 (--gpus: 0, 1): "
            "2 trials at a time")
    assert note in doc["notes"] and err.count(note) == 1
    assert {line.rsplit(" ", 1)[1] for line in err.splitlines() if "trained on" in line} == {"0", "1"}


@pytest.mark.slow
def test_a_study_on_a_short_host_refuses_before_its_first_trial(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.incli import run as cli  # here: the CLI is what this test exercises

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    study_ = {"metric": {"id": "accuracy", "goal": "maximize"}, "algorithm": "grid",
              "parameters": {"x": {"type": "integer", "min": 1, "max": 2}}, "max_trials": 2,
              "parallel_trials": 1}
    code, out, err = cli(capsys, "local-run", str(spec_file(tmp_path, PRINT, study=study_)))
    assert code == 1 and "needs 2 GPUs and this host has 1" in err and "CVD=" not in err + out


@pytest.mark.slow
def test_submit_target_local_follows_the_same_rule(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.incli import run as cli  # here: the CLI is what this test exercises

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    spec = str(spec_file(tmp_path, PRINT))
    code, out, err = cli(capsys, "submit", spec, "--target", "local")
    assert code == 1 and "the job needs 2 GPUs and this host has 1" in err
    assert "CVD=" not in err and "JOB_STATE" not in err  # refused before the job was created
    code, out, err = cli(capsys, "submit", spec, "--target", "local", "--share-gpus")
    assert code == 0, err
    assert "[workerpool0-0] CVD='0'" in err and "[workerpool1-0] CVD='0'" in err
    assert "Duplicate GPU detected" in err
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,6")
    code, out, err = cli(capsys, "submit", spec, "--target", "local")
    assert code == 0 and "[workerpool0-0] CVD='4'" in err and "[workerpool1-0] CVD='6'" in err


def test_an_empty_gpus_list_runs_on_the_cpu_and_says_why() -> None:
    plan = gpus.resolve(gpu_job(), GpuOptions(()), environ={"CUDA_VISIBLE_DEVICES": "0,1,2"})
    assert set(visible(plan).values()) == {""}
    assert plan.notes == ("--gpus names no GPU: the job asks for 3 GPUs; every replica runs on the CPU",)
