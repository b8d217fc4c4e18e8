"""The public Python API (vxtrain/__init__.py) mirrors the CLI."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from google.protobuf import json_format

import vxtrain
from vxtrain import api, bulk

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "configs" / "examples"


def test_all_is_sorted_and_complete() -> None:
    assert vxtrain.__all__ == sorted(vxtrain.__all__)
    for name in vxtrain.__all__:
        assert hasattr(vxtrain, name), name
    for verb in ("load", "validate", "plan", "compile", "submit"):
        assert callable(getattr(vxtrain, verb))


def test_plan_gives_the_compiled_job_and_bandwidth() -> None:
    result = vxtrain.plan(EXAMPLES / "reduction-server.yaml", vxtrain.Options(variables={"IMAGE_TAG": "t1"}))
    assert result.valid
    assert result.plan.reduction_server.replicas == 16
    assert result.custom_job["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["imageUri"].endswith(":t1")


def test_compile_gives_a_real_custom_job() -> None:
    from google.cloud.aiplatform_v1.types import CustomJob

    job = vxtrain.compile(EXAMPLES / "parameter-server.yaml")
    message = json_format.ParseDict(job, CustomJob.pb(CustomJob()))
    assert [p.replica_count for p in message.job_spec.worker_pool_specs] == [1, 4, 2, 1]


def test_invalid_spec_raises_spec_error_with_diagnostics(tmp_path: Path) -> None:
    spec = tmp_path / "bad.yaml"
    spec.write_text("display_name: x\nchief: {machine_type: n1-standard-4, image: i, replicas: 3}\n")
    for call in (vxtrain.plan, vxtrain.compile, vxtrain.submit):
        with pytest.raises(vxtrain.SpecError) as info:
            call(spec)
        assert info.value.diagnostics[0].code == "chief-replicas"
        assert info.value.diagnostics[0].line == 2
    with pytest.raises(vxtrain.SpecError):
        vxtrain.load(tmp_path / "missing.yaml")


def test_load_applies_variables_and_sets() -> None:
    doc = vxtrain.load(EXAMPLES / "reduction-server.yaml",
                       vxtrain.Options(variables={"IMAGE_TAG": "v9"}, sets=["workers.replicas=2"]))
    assert doc.data["workers"]["replicas"] == 2
    assert doc.data["defaults"]["image"].endswith(":v9")


@pytest.mark.slow
def test_submit_local_runs_the_quickstart_through_the_emulator() -> None:
    view = vxtrain.submit(EXAMPLES / "quickstart.yaml", target="local")
    assert view["state"] == "JOB_STATE_SUCCEEDED"
    assert "/customJobs/" in view["name"]


def test_submit_needs_a_project_and_region_for_vertex(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text("display_name: x\nchief: {machine_type: n1-standard-4, image: i}\n")
    with pytest.raises(vxtrain.UsageError, match="--project/--region"):
        vxtrain.submit(spec)


def test_importing_vxtrain_is_light() -> None:
    code = ("import sys, vxtrain; vxtrain.check_file(sys.argv[1]); "
            "sys.exit(any(m.startswith(('google.cloud.aiplatform', 'grpc')) for m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code, str(EXAMPLES / "reduction-server.yaml")], cwd=ROOT)
    assert res.returncode == 0


def test_bulk_validation_in_worker_processes_gives_the_same_results_in_order(tmp_path: Path) -> None:
    good = (ROOT / "configs" / "examples" / "quickstart.yaml").read_text()
    bad_dir = ROOT / "tests" / "data" / "bad"
    bad = sorted(p.read_text() for p in bad_dir.glob("*.yaml") if p.stat().st_size < 10_000)
    for i in range(240):
        text = bad[i % len(bad)] if i % 5 == 0 else good
        (tmp_path / f"spec{i:03d}.yaml").write_text(text)
    files = bulk.spec_files([tmp_path])
    options = api.Options()
    # 240 files are two batches of 100 or more: two workers, where this process may fork
    # (two CPUs or more, no other thread running); fewer files stay in this process.
    may_fork = threading.active_count() == 1 and len(os.sched_getaffinity(0)) >= 2
    assert bulk._workers(len(files)) == (2 if may_fork else 1)
    assert bulk._workers(2 * bulk._FILES_PER_WORKER - 1) == 1
    alone = [bulk._check_slim(p, options) for p in files]
    forked = bulk._parallel(files, options, workers=2)
    assert [r.file for r in forked] == [str(p) for p in files]
    assert [(r.file, r.diagnostics) for r in forked] == [(r.file, r.diagnostics) for r in alone]
    assert sum(not r.valid for r in forked) >= 40  # the bad ones really were checked


def test_a_folder_is_recursed_without_hidden_folders_virtual_envs_or_node_modules(tmp_path: Path) -> None:
    good = (ROOT / "configs" / "examples" / "quickstart.yaml").read_text()
    for rel in ("job.yaml", "jobs/a.yml", ".github/workflows/ci.yaml", ".pre-commit-config.yaml",
                "node_modules/x/c.yaml", "env/lib/conf.yaml", "src/__pycache__/x.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(good)
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    assert bulk.spec_files([tmp_path]) == [tmp_path / "job.yaml", tmp_path / "jobs" / "a.yml"]
    # a folder or file named on the command line is checked, hidden or not
    assert bulk.spec_files([tmp_path / ".github"]) == [tmp_path / ".github" / "workflows" / "ci.yaml"]
    assert bulk.spec_files([tmp_path / ".pre-commit-config.yaml"]) == [tmp_path / ".pre-commit-config.yaml"]


def test_a_job_on_a_persistent_resource_is_priced_through_it() -> None:
    """plan prices the spec's persistent_resource (and extra's persistentResourceId) at 0 per job."""
    cost = vxtrain.plan(EXAMPLES / "persistent-resource.yaml", vxtrain.Options(cost=True)).cost
    assert cost is not None and cost.pricing == "persistent_resource" and cost.per_trial_hour == 0
    assert cost.billed_via == "projects/my-project/locations/us-central1/persistentResources/train-pool"


def test_a_multi_host_tpu_slice_is_priced_per_host_of_its_topology() -> None:
    """tpu_topology 2x4 on ct5lp-hightpu-4t spans 2 hosts (tpu_machines.csv): twice one host's price."""
    cost = vxtrain.plan(EXAMPLES / "tpu-v5e-slice.yaml", vxtrain.Options(cost=True)).cost
    assert cost is not None
    (chief,) = cost.pools
    assert chief.hosts == 2 and chief.per_node_hour is not None
    assert cost.per_trial_hour == pytest.approx(2 * chief.per_node_hour)


def test_a_file_whose_check_raises_is_that_files_error_and_the_others_are_checked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "task.py").write_text("")
    (tmp_path / "a.yaml").write_text("display_name: a\nchief:\n  machine_type: n1-standard-4\n  python_package:\n"
                                     "    executor_image: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:"
                                     "latest\n    module: task\n    source: code\n")
    (tmp_path / "b.yaml").write_text("display_name: b\nchief: {machine_type: n1-standard-4, image: i}\n")
    monkeypatch.setenv("VXTRAIN_SOURCE_MAX_FILES", "many")  # raised while a.yaml's source folder is walked
    a, b = api.validate([tmp_path])
    assert [d.code for d in a.diagnostics] == ["check-failed"] and "VXTRAIN_SOURCE_MAX_FILES" in a.diagnostics[0].message
    assert a.diagnostics[0].file == str(tmp_path / "a.yaml")
    assert b.valid


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_in_one_specs_source_folder_is_that_specs_error(tmp_path: Path) -> None:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "task.py").write_text("")
    locked = tmp_path / "code" / "locked.bin"
    locked.write_bytes(b"x")
    locked.chmod(0)
    (tmp_path / "a.yaml").write_text("display_name: a\nchief:\n  machine_type: n1-standard-4\n  python_package:\n"
                                     "    executor_image: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:"
                                     "latest\n    module: task\n    source: code\n")
    (tmp_path / "b.yaml").write_text("display_name: b\nchief: {machine_type: n1-standard-4, image: i}\n")
    try:
        a, b = api.validate([tmp_path])
    finally:
        locked.chmod(0o644)
    assert [(d.code, d.line) for d in a.diagnostics if d.severity == "error"] == [("source-unreadable", 7)]
    assert b.valid
