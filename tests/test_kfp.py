"""vxtrain in Kubeflow / Vertex AI Pipelines: ``vxtrain.kfp.submit_op`` and ``convert --to kfp|kfp-gcpc``.

The pipelines run in KFP's own local runner (``kfp.local``, SubprocessRunner in this
interpreter) against the emulator: the step is KFP's executor running the component's
shipped source, which runs ``vxtrain submit``. kfp.local fills ``{{$.pipeline_job_uuid}}``
with ``random.randint``, so seeding ``random`` before a run gives a second run the first
one's run id: a retried task, as Vertex AI reruns it. The CustomTrainingJobOp pipeline is
read back from its YAML and its pools built as the op's launcher builds them (the client
library's proto-plus messages), then compared with ``plan``'s compiled pools.
"""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import textwrap
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import incli
from tests.conftest import CONFIGS

kfp = pytest.importorskip("kfp", reason="kfp is in the test extra (pip install -e '.[test]')")

from kfp import components, local  # noqa: E402  (after the skip)

from vxtrain.kfp import gcpc, step  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = sorted((CONFIGS / "examples").glob("*.yaml"))
#: An image name with "python" in it: kfp.local's SubprocessRunner warns of any other (and
#: this suite turns warnings into errors); the runner uses this interpreter whatever it says.
IMAGE = "python-vxtrain-test:1"
SPEC = """\
display_name: kfp-step
project: p
region: us-central1
chief:
  machine_type: n1-standard-4
  image: us-docker.pkg.dev/p/r/train:${TAG:-v1}
  command: [python, -m, trainer.task]
workers:
  replicas: 2
  machine_type: n1-standard-4
  image: us-docker.pkg.dev/p/r/train:${TAG:-v1}
"""


@pytest.fixture
def kfp_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """kfp.local on, in this interpreter, its outputs under tmp_path; the image set for convert."""
    monkeypatch.setenv("VXTRAIN_KFP_IMAGE", IMAGE)
    monkeypatch.chdir(tmp_path)  # the step writes a spec given as text to its working directory
    local.init(runner=local.SubprocessRunner(use_venv=False), pipeline_root=str(tmp_path / "outputs"))
    try:
        yield tmp_path
    finally:
        local.config.LocalExecutionConfig.instance = None


@pytest.fixture
def simulating() -> Iterator[Any]:
    """An emulator that simulates its jobs (each RUNNING 0.2 s, then SUCCEEDED): no replica runs."""
    import io

    from vxtrain.backends.emulator import start_emulator  # grpc + aiplatform: only for the tests that use it

    handle = start_emulator(simulate_seconds=0.2, out=io.StringIO(), stockout=["us-east1"], stockout_after=0.2)
    try:
        yield handle
    finally:
        handle.stop(grace=None)


def _jobs(address: str) -> list[dict[str, Any]]:
    from vxtrain.backends import open_backend
    from vxtrain.vocab.kinds import CUSTOM

    with open_backend(endpoint=address) as backend:
        return list(backend.list(CUSTOM, "projects/p/locations/us-central1", ""))


def _convert(capsys: pytest.CaptureFixture[str], spec: Path, to: str, *flags: str) -> tuple[int, str, str]:
    code, out, err = incli.run(capsys, "convert", str(spec), "--to", to, *flags)
    return code, out if isinstance(out, str) else json.dumps(out), err


def _run(pipeline: Any, seed: int, **arguments: Any) -> Any:
    """Run ``pipeline`` locally with the run id ``seed`` makes (kfp.local draws it from ``random``)."""
    random.seed(seed)
    return pipeline(**arguments)


@pytest.mark.slow
def test_the_converted_pipeline_ends_succeeded_and_a_rerun_of_its_run_adopts_the_job(
        kfp_local: Path, simulating: Any, capsys: pytest.CaptureFixture[str]) -> None:
    spec = kfp_local / "job.yaml"
    spec.write_text(SPEC)
    code, text, err = _convert(capsys, spec, "kfp")
    assert code == 0, err
    (kfp_local / "pipeline.yaml").write_text(text)
    pipeline = components.load_component_from_file(str(kfp_local / "pipeline.yaml"))

    first = _run(pipeline, 7, endpoint=simulating.address)
    assert first.outputs["state"] == "JOB_STATE_SUCCEEDED"
    assert first.outputs["cost_usd"] > 0
    (job,) = _jobs(simulating.address)
    assert first.outputs["job"] == job["name"]
    assert [a["name"] for a in json.loads(first.outputs["attempts"])] == [job["name"]]
    # The key is the run's id and the task's name, filled in by the pipeline's runner.
    assert re.fullmatch(r"\d+-submit-op", job["labels"]["vxtrain_idempotency_key"]), job["labels"]

    again = _run(pipeline, 7, endpoint=simulating.address)  # the same run id: a retried task
    assert again.outputs["job"] == job["name"] and again.outputs["state"] == "JOB_STATE_SUCCEEDED"
    assert len(_jobs(simulating.address)) == 1

    other = _run(pipeline, 8, endpoint=simulating.address)  # another run: a job of its own
    assert other.outputs["job"] != job["name"]
    assert len(_jobs(simulating.address)) == 2


@pytest.mark.slow
def test_submit_op_in_a_pipeline_of_ones_own_with_vars_and_a_failing_job(
        kfp_local: Path, simulating: Any) -> None:
    """The component as a user writes it into a pipeline: a path in the image and vars; a
    job that cannot get its machines fails the step (vxtrain's exit 5)."""
    from kfp import dsl

    import vxtrain.kfp

    spec = kfp_local / "job.yaml"
    spec.write_text(SPEC)
    op = vxtrain.kfp.submit_component(IMAGE)

    def train(region: str, endpoint: str) -> str:
        return op(spec=str(spec), vars={"TAG": "v2"}, endpoint=endpoint, region=region).outputs["job"]  # type: ignore[no-any-return]

    train = dsl.pipeline(name="train")(_typed(train))

    done = _run(train, 1, region="us-central1", endpoint=simulating.address)
    (job,) = _jobs(simulating.address)
    assert done.output == job["name"]
    images = {pool["containerSpec"]["imageUri"] for pool in job["jobSpec"]["workerPoolSpecs"]}
    assert images == {"us-docker.pkg.dev/p/r/train:v2"}

    with pytest.raises(RuntimeError, match="FAILURE"):
        _run(train, 2, region="us-east1", endpoint=simulating.address)  # the emulator's stockout region


def test_the_component_takes_its_image_from_the_environment_when_first_used() -> None:
    code = ("import vxtrain.kfp as k; s = k.submit_op.component_spec; "
            "print(s.implementation.container.image, sorted(s.inputs), sorted(s.outputs))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "VXTRAIN_KFP_IMAGE": "r.example/vxtrain@sha256:0"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(" ", 1) == [
        "r.example/vxtrain@sha256:0", "['endpoint', 'key', 'project', 'region', 'spec', 'vars', 'wait'] "
        "['attempts', 'cost_usd', 'job', 'state']\n"]


def test_a_task_gets_the_run_id_and_task_name_as_its_key_and_is_never_cached() -> None:
    from kfp import dsl

    import vxtrain.kfp

    def p() -> None:
        vxtrain.kfp.submit_component(IMAGE)(spec="job.yaml")
        vxtrain.kfp.submit_component(IMAGE)(spec="job.yaml", key="mine")

    spec = yaml.safe_load(_compiled(dsl.pipeline(name="p")(_typed(p))))
    tasks = spec["root"]["dag"]["tasks"]
    keys = [task["inputs"]["parameters"]["key"]["runtimeValue"]["constant"] for task in tasks.values()]
    assert sorted(keys) == ["mine", "{{$.pipeline_job_uuid}}-{{$.pipeline_task_name}}"]
    assert all(task["cachingOptions"] == {} for task in tasks.values())  # enableCache left out: false


def _typed(function: Any) -> Any:
    """``function`` with its annotations as objects: KFP reads them so, and this module's are
    strings (``from __future__ import annotations``)."""
    hints = typing.get_type_hints(function)
    if hints.get("return") is type(None):
        hints["return"] = None  # as written: KFP takes None, not NoneType, for no outputs
    function.__annotations__ = hints
    return function


def _compiled(pipeline: Any) -> str:
    import tempfile

    from kfp import compiler

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.yaml"
        compiler.Compiler().compile(pipeline, str(path))
        return path.read_text()


# --- the step, as the component's body runs it --------------------------------------------

def test_a_key_still_holding_a_placeholder_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    """A backend that left the placeholder in place would give every run the same key."""
    with pytest.raises(step.StepFailed) as failed:
        step.run("job.yaml", {}, "{{$.pipeline_job_uuid}}-train", wait=True)
    assert failed.value.code == 2
    assert "placeholder the pipeline did not resolve" in capsys.readouterr().err


def test_a_missing_spec_file_ends_the_step_with_exit_4(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(step.StepFailed) as failed:
        step.run("configs/nope.yaml", {}, "k", wait=True)
    assert failed.value.code == 4 and "no spec file 'configs/nope.yaml'" in failed.value.message


@pytest.mark.parametrize(("text", "expected"), [
    ("configs/job.yaml", False), ("gs://b/job.yaml", False), ("display_name: x\nchief: {}\n", True),
    ("{display_name: x, chief: {machine_type: n1-standard-4}}", True), ("  job.yaml  ", False)])
def test_what_the_spec_input_is_taken_for(text: str, expected: bool) -> None:
    assert step.is_text(text) is expected


def test_submits_exit_and_document_become_the_outputs_or_the_steps_failure() -> None:
    view = {"name": "projects/p/locations/r/customJobs/1", "state": "JOB_STATE_SUCCEEDED",
            "attempts": [{"attempt": 0, "rung": 0}], "cost": {"estimated": 1.5}}
    assert step.outputs(0, json.dumps(view)) == (view["name"], "JOB_STATE_SUCCEEDED", 1.5,
                                                 '[{"attempt": 0, "rung": 0}]')
    assert step.outputs(0, json.dumps({"name": "n", "state": "JOB_STATE_QUEUED"})).cost_usd == 0.0
    with pytest.raises(step.StepFailed) as failed:
        step.outputs(3, json.dumps({**view, "state": "JOB_STATE_FAILED", "error": {"message": "OOM"}}))
    assert (failed.value.code, failed.value.message) == (
        3, "vxtrain submit exited 3: projects/p/locations/r/customJobs/1 ended JOB_STATE_FAILED: OOM")
    with pytest.raises(step.StepFailed) as failed:
        step.outputs(5, json.dumps({"error": {"type": "NoCapacity", "message": "no rung had capacity"}}))
    assert (failed.value.code, failed.value.message) == (5, "vxtrain submit exited 5: no rung had capacity")


def test_the_command_line_the_step_runs() -> None:
    argv = step.submit_argv("s.yaml", {"TAG": "v2", "N": 3, "ON": True}, key="k", wait=True, endpoint="",
                            project="p", region="")
    assert argv[1:] == ["-m", "vxtrain", "submit", "s.yaml", "--output", "json", "--idempotency-key", "k",
                        "--wait", "--project", "p", "--var", "TAG=v2", "--var", "N=3", "--var", "ON=true"]
    assert step.submit_argv("s.yaml", {}, key="", wait=False, endpoint="127.0.0.1:1", project="",
                            region="")[4:] == ["s.yaml", "--output", "json", "--endpoint", "127.0.0.1:1"]


# --- convert --to kfp-gcpc -------------------------------------------------------------------

def _op_task(text: str) -> dict[str, Any]:
    """The CustomTrainingJobOp task's constant arguments in a compiled pipeline."""
    spec = yaml.safe_load(text)
    (task,) = spec["root"]["dag"]["tasks"].values()
    assert spec["deploymentSpec"]["executors"]["exec-custom-training-job"]["container"]["image"] == \
        "gcr.io/ml-pipeline/google-cloud-pipeline-components:2.22.0"
    return {name: value["runtimeValue"]["constant"] for name, value in task["inputs"]["parameters"].items()}


def _as_launched(pool: Any) -> Any:
    """A pool of the op's argument as its launcher reads it: KFP keeps numbers as doubles,
    and the backend writes a whole one as an integer into the payload's JSON."""
    if isinstance(pool, dict):
        return {k: _as_launched(v) for k, v in pool.items()}
    if isinstance(pool, list):
        return [_as_launched(v) for v in pool]
    return int(pool) if isinstance(pool, float) and pool.is_integer() else pool


GCPC_EXAMPLES = [p for p in EXAMPLES if p.name != "study.yaml"]


@pytest.mark.slow
@pytest.mark.parametrize("example", GCPC_EXAMPLES, ids=[p.name for p in GCPC_EXAMPLES])
def test_the_gcpc_pipelines_worker_pool_specs_are_the_plans_field_by_field(
        example: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each pool the op's launcher would send (a proto-plus WorkerPoolSpec built from the
    pipeline's argument, as ``create_custom_job(custom_job=dict)`` builds it) is the
    pool ``plan`` compiles, field by field."""
    from google.cloud.aiplatform_v1.types import WorkerPoolSpec

    code, planned, err = incli.run(capsys, "plan", str(example), "--var", "IMAGE_TAG=v1", "-o", "json")
    assert code == 0, err
    code, text, err = _convert(capsys, example, "kfp-gcpc", "--var", "IMAGE_TAG=v1")
    assert code == 0, err
    arguments = _op_task(text)
    pools = planned["custom_job"]["jobSpec"]["workerPoolSpecs"]
    sent = [WorkerPoolSpec(_as_launched(pool)) for pool in arguments["worker_pool_specs"]]
    assert [WorkerPoolSpec.to_dict(p) for p in sent] == [
        WorkerPoolSpec.to_dict(WorkerPoolSpec.from_json(json.dumps(pool))) for pool in pools]
    assert arguments["display_name"] == planned["custom_job"]["displayName"]
    assert "[quota-check-dropped]" in err


def test_gcpc_arguments_carry_every_field_of_a_full_job() -> None:
    custom_job = {
        "displayName": "full", "labels": {"team": "nlp"}, "encryptionSpec": {"kmsKeyName": "k"},
        "jobSpec": {
            "workerPoolSpecs": [{"machineSpec": {"machineType": "a2-highgpu-1g", "acceleratorType": "NVIDIA_TESLA_A100",
                                                 "acceleratorCount": 1},
                                 "replicaCount": "1", "diskSpec": {"bootDiskType": "pd-ssd", "bootDiskSizeGb": 200},
                                 "containerSpec": {"imageUri": "i", "env": [{"name": "A", "value": "b"}]}}],
            "scheduling": {"timeout": "3600s", "restartJobOnWorkerRestart": True, "strategy": "FLEX_START",
                           "maxWaitDuration": "1800s"},
            "serviceAccount": "sa@p.iam.gserviceaccount.com", "tensorboard": "t", "enableWebAccess": True,
            "network": "projects/1/global/networks/n", "reservedIpRanges": ["r"],
            "baseOutputDirectory": {"outputUriPrefix": "gs://b/o"}, "persistentResourceId": "pr",
            "pscInterfaceConfig": {"networkAttachment": "na"}}}
    op = gcpc.op_arguments(custom_job, "p", "europe-west4")
    assert op.dropped == []
    assert op.arguments == {
        "display_name": "full", "labels": {"team": "nlp"}, "encryption_spec_key_name": "k", "timeout": "3600s",
        "restart_job_on_worker_restart": True, "strategy": "FLEX_START", "max_wait_duration": "1800s",
        "service_account": "sa@p.iam.gserviceaccount.com", "tensorboard": "t", "enable_web_access": True,
        "network": "projects/1/global/networks/n", "reserved_ip_ranges": ["r"], "base_output_directory": "gs://b/o",
        "persistent_resource_id": "pr", "project": "p", "location": "europe-west4",
        "worker_pool_specs": [{
            "machine_spec": {"machine_type": "a2-highgpu-1g", "accelerator_type": "NVIDIA_TESLA_A100",
                             "accelerator_count": 1},
            "replica_count": 1, "disk_spec": {"boot_disk_type": "pd-ssd", "boot_disk_size_gb": 200},
            "container_spec": {"image_uri": "i", "env": [{"name": "A", "value": "b"}]}}],
        "psc_interface_config": {"network_attachment": "na"}}
    dropped = gcpc.op_arguments({**custom_job, "jobSpec": {
        **custom_job["jobSpec"], "enableDashboardAccess": True,
        "scheduling": {"timeout": "60s", "disableRetries": True}}}, None, None)
    assert dropped.dropped == ["jobSpec.enableDashboardAccess", "jobSpec.scheduling.disableRetries"]
    assert "project" not in dropped.arguments and "location" not in dropped.arguments


@pytest.mark.parametrize(("spec", "why"), [
    ("display_name: gaps\nchief: {machine_type: n1-standard-4, image: i}\n"
     "evaluators: {machine_type: n1-standard-4, image: i}\n", "drops an empty worker pool slot"),
    ('display_name: say "hi"\nchief: {machine_type: n1-standard-4, image: i}\n', "holds a quote"),
    ("display_name: x\nenable_dashboard_access: true\nchief: {machine_type: n1-standard-4, image: i}\n",
     "no input for `jobSpec.enableDashboardAccess`"),
    ((CONFIGS / "examples" / "study.yaml").read_text(), "a study"),
])
def test_a_job_the_op_would_send_otherwise_is_refused(spec: str, why: str, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(spec)
    code, out, err = _convert(capsys, path, "kfp-gcpc")
    assert (code, out) == (1, "")
    assert "[kfp-gcpc-cannot-carry]" in err and why in err, err


def test_kfp_gcpc_warns_of_the_ladder_recovery_notify_and_quota_check_it_drops(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent("""\
        display_name: spot
        region: us-central1
        base_output_dir: gs://b/spot
        scheduling: {strategy: SPOT}
        chief: {machine_type: n1-standard-4, image: i}
        recovery: {max_recoveries: 2}
        notify: [https://hooks.example/x]
        fallback: [{region: europe-west4}]
        """))
    code, text, err = _convert(capsys, path, "kfp-gcpc")
    assert code == 0, err
    codes = re.findall(r"^\S+:(\d+):\d+: warning: .*\[([a-z-]+)\]", err, re.M)
    assert sorted(codes) == [("1", "quota-check-dropped"), ("6", "submit-only-dropped"), ("7", "submit-only-dropped"),
                             ("8", "fallback-dropped")]
    assert _op_task(text)["location"] == "us-central1"


def test_kfp_gcpc_warns_of_hooks_given_by_environment_variable_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("display_name: hooked\nregion: us-central1\nchief: {machine_type: n1-standard-4, image: i}\n"
                    "notify: [{url_env: RELEASE_HOOK, secret_env: RELEASE_SECRET}]\n")
    code, _, err = _convert(capsys, path, "kfp-gcpc")
    assert code == 0, err
    assert re.search(r":4:\d+: warning: --to kfp-gcpc leaves out `notify:`.*\[submit-only-dropped\]", err), err


def test_the_kfp_target_keeps_the_whole_spec_and_warns_of_an_unset_image(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VXTRAIN_KFP_IMAGE", raising=False)
    path = tmp_path / "job.yaml"
    path.write_text(SPEC + "fallback: [{region: europe-west4}]\n")
    code, text, err = _convert(capsys, path, "kfp", "--var", "TAG=v3")
    assert code == 0
    assert "[kfp-image-unset]" in err and "fallback-dropped" not in err
    spec = yaml.safe_load(text)
    (task,) = spec["root"]["dag"]["tasks"].values()
    embedded = yaml.safe_load(task["inputs"]["parameters"]["spec"]["runtimeValue"]["constant"])
    assert embedded["fallback"] == [{"region": "europe-west4"}]
    assert embedded["chief"]["image"] == "us-docker.pkg.dev/p/r/train:v3"  # as checked: --var applied
    assert spec["deploymentSpec"]["executors"]["exec-submit-op"]["container"]["image"] == \
        "set-vxtrain-kfp-image.invalid/vxtrain:0.1.0"
    assert spec["pipelineInfo"]["name"] == "kfp-step"


def test_without_kfp_the_targets_say_how_to_get_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [m for m in sys.modules if m in ("kfp", "vxtrain.kfp") or m.startswith(("kfp.", "vxtrain.kfp."))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "kfp", None)  # what `import kfp` meets where it is not installed
    path = tmp_path / "job.yaml"
    path.write_text(SPEC)
    code, out, err = _convert(capsys, path, "kfp-gcpc")
    assert code == 2 and out == "", err
    assert "--to kfp-gcpc needs kfp" in err and "pip install 'vxtrain[kfp]'" in err


def test_validate_and_plan_never_import_kfp(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(SPEC)
    code = ("import sys; from vxtrain.cli import main; main(['validate', sys.argv[1]]); main(['plan', sys.argv[1]]); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'kfp' or m.startswith('vxtrain.kfp')))")
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]"


def test_the_compiled_op_is_google_cloud_pipeline_components_own() -> None:
    """vxtrain/kfp/custom_training_job.yaml is CustomTrainingJobOp as the installed
    google-cloud-pipeline-components compiles it (scripts/gen_gcpc_component.py)."""
    op = pytest.importorskip("google_cloud_pipeline_components.v1.custom_job",
                             reason="google-cloud-pipeline-components requires google-cloud-aiplatform<2, "
                                    "which the lock does not hold (docs/decisions.md)").CustomTrainingJobOp
    ours = yaml.safe_load((ROOT / "vxtrain" / "kfp" / "custom_training_job.yaml").read_text())
    theirs = yaml.safe_load(_compiled(op))
    for document in (ours, theirs):
        document.pop("sdkVersion")
    assert ours == theirs


def test_the_pipeline_in_the_docs_compiles_with_a_retried_keyed_submit(tmp_path: Path) -> None:
    """docs/pipelines.md's example, run as a user runs it (its own process, VXTRAIN_KFP_IMAGE set)."""
    text = (ROOT / "docs" / "pipelines.md").read_text()
    (block,) = re.findall(r"<!-- tests/test_kfp.py compiles this block -->\n```python\n(.*?)```", text, re.S)
    (tmp_path / "example.py").write_text(block)
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "VXTRAIN_KFP_IMAGE": IMAGE})
    assert done.returncode == 0, done.stderr
    spec = yaml.safe_load((tmp_path / "train_and_report.yaml").read_text())
    submit = spec["root"]["dag"]["tasks"]["submit-op"]
    assert submit["inputs"]["parameters"]["key"]["runtimeValue"]["constant"] == \
        "{{$.pipeline_job_uuid}}-{{$.pipeline_task_name}}"
    assert submit["retryPolicy"]["maxRetryCount"] == 2
    assert spec["deploymentSpec"]["executors"]["exec-submit-op"]["container"]["image"] == IMAGE


def test_the_readmes_pipeline_compiles_with_the_component(tmp_path: Path) -> None:
    """The README's example (not run by tests/test_readme.py: it is Python)."""
    text = (ROOT / "README.md").read_text()
    (block,) = re.findall(r"<!-- not run: tests/test_kfp.py compiles it -->\n```python\n(.*?)```", text, re.S)
    script = block + "\nfrom kfp import compiler\ncompiler.Compiler().compile(nightly, 'nightly.yaml')\n"
    (tmp_path / "example.py").write_text(script)
    done = subprocess.run([sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "VXTRAIN_KFP_IMAGE": IMAGE})
    assert done.returncode == 0, done.stderr
    (task,) = yaml.safe_load((tmp_path / "nightly.yaml").read_text())["root"]["dag"]["tasks"].values()
    assert task["inputs"]["parameters"]["vars"] == {"runtimeValue": {"constant": {"IMAGE_TAG": "{{$.inputs.parameters['pipelinechannel--image_tag']}}"}}}
