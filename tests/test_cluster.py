"""vxtrain.runtime.cluster_env and vxtrain.cluster against the formats the Vertex AI docs show.

https://cloud.google.com/vertex-ai/docs/training/distributed-training#cluster-variables
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vxtrain import cluster
from vxtrain.runtime import cluster_env
from vxtrain.commands import env as env_cmd
from vxtrain.errors import UsageError, VxtrainError
from vxtrain.model import Job, build

ROOT = Path(__file__).resolve().parent.parent
QUICKSTART = ROOT / "configs" / "examples" / "quickstart.yaml"
SPEC = {"workerPoolSpecs": [{"replicaCount": 1}]}  # what TF_CONFIG's "job" carries, abridged
#: CLUSTER_SPEC's "job" in values copied from running Vertex AI jobs (custom containers).
CAPTURED_JOB = '{"python_module":"","package_uris":[],"job_args":[]}'
#: A whole CLUSTER_SPEC copied from a running Vertex AI job (a public training entrypoint's comment).
CAPTURED = ('{"cluster":{"workerpool0":["cmle-training-workerpool0-b644f12a34-0:2222"],"workerpool1":'
            '["cmle-training-workerpool1-b644f12a34-0:2222","cmle-training-workerpool1-b644f12a34-1:2222"]},'
            '"environment":"cloud","task":{"type":"workerpool0","index":0},'
            '"job":"{\\"python_module\\":\\"\\",\\"package_uris\\":[],\\"job_args\\":[]}"}')
POOL = {"machine_type": "n1-standard-4", "image": "gcr.io/p/train:1"}


def make_job(workers: int = 0, ps: int = 0, evaluators: int = 0, **top: Any) -> Job:
    data: dict[str, Any] = {"display_name": "t", "chief": dict(POOL), **top}
    if workers:
        data["workers"] = {**POOL, "replicas": workers}
    if ps:
        data["parameter_servers"] = {**POOL, "replicas": ps}
    if evaluators:
        data["evaluators"] = {**POOL, "replicas": evaluators}
    return build(data)


def env_of(job: Job, pool: int, index: int, **kw: Any) -> dict[str, Any]:
    raw = cluster_env.replica_env(job, SPEC, pool, index, **kw)
    return {k: json.loads(v) if k in ("CLUSTER_SPEC", "TF_CONFIG") else v for k, v in raw.items()}


# --- CLUSTER_SPEC --------------------------------------------------------------

def test_cluster_spec_matches_the_docs_example() -> None:
    job = make_job(workers=2, ps=2, evaluators=3)
    spec = env_of(job, 0, 0, job_id="ab", trial="TRIAL_ID")["CLUSTER_SPEC"]
    assert spec == {
        "cluster": {
            "workerpool0": ["cmle-training-workerpool0-ab-0:2222"],
            "workerpool1": ["cmle-training-workerpool1-ab-0:2222", "cmle-training-workerpool1-ab-1:2222"],
            "workerpool2": ["cmle-training-workerpool2-ab-0:2222", "cmle-training-workerpool2-ab-1:2222"],
            "workerpool3": ["cmle-training-workerpool3-ab-0:2222", "cmle-training-workerpool3-ab-1:2222",
                            "cmle-training-workerpool3-ab-2:2222"],
        },
        "environment": "cloud",
        "task": {"type": "workerpool0", "index": 0, "trial": "TRIAL_ID"},
        "job": CAPTURED_JOB,
    }


def test_cluster_spec_lists_only_the_pools_given_and_no_trial_outside_tuning() -> None:
    job = make_job(evaluators=1)
    spec = env_of(job, 3, 0)["CLUSTER_SPEC"]
    assert list(spec["cluster"]) == ["workerpool0", "workerpool3"]
    assert spec["task"] == {"type": "workerpool3", "index": 0}


def test_cluster_spec_job_is_a_json_string_as_in_running_jobs() -> None:
    """CLUSTER_SPEC's job: the captured string form, not the CustomJobSpec dict the docs describe."""
    from vxtrain.compiler import compile_custom_job_spec

    job = make_job(workers=1)
    job_spec = compile_custom_job_spec(job)
    raw = cluster_env.replica_env(job, job_spec, 1, 0)["CLUSTER_SPEC"]
    assert json.loads(raw)["job"] == CAPTURED_JOB
    assert '"job": "{\\"python_module\\":\\"\\",\\"package_uris\\":[],\\"job_args\\":[]}"' in raw


def test_cluster_spec_job_of_a_python_package_pool() -> None:
    from vxtrain.compiler import compile_custom_job_spec

    package = {"executor_image": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-12:latest",
               "package_uris": ["gs://b/trainer-0.1.tar.gz"], "module": "trainer.task"}
    job = build({"display_name": "p", "chief": {"machine_type": "n1-standard-4", "python_package": package,
                                               "args": ["--epochs=3"]}})
    spec = json.loads(cluster_env.replica_env(job, compile_custom_job_spec(job), 0, 0)["CLUSTER_SPEC"])
    assert json.loads(spec["job"]) == {"python_module": "trainer.task", "package_uris": ["gs://b/trainer-0.1.tar.gz"],
                                       "job_args": ["--epochs=3"]}


def test_runtime_reads_both_forms_of_job() -> None:
    """A captured CLUSTER_SPEC (job as a JSON string), and the dict form Google's page describes."""
    info = cluster.current({"CLUSTER_SPEC": CAPTURED})
    assert info.job == {"python_module": "", "package_uris": [], "job_args": []}
    assert (info.role, info.index, info.num_workers, info.world_size) == ("chief", 0, 2, 3)
    as_dict = json.loads(CAPTURED)
    as_dict["job"] = SPEC
    assert cluster.current({"CLUSTER_SPEC": json.dumps(as_dict)}).job == SPEC
    for odd in ("not json", 5, ["x"], "[1]"):
        as_dict["job"] = odd
        assert cluster.current({"CLUSTER_SPEC": json.dumps(as_dict)}).job == {}


# --- TF_CONFIG -----------------------------------------------------------------

def test_tf_config_of_a_worker_in_a_trial_matches_the_docs_example() -> None:
    job = make_job(workers=2, ps=1)
    tf = env_of(job, 1, 0, job_id="ID", trial="1")["TF_CONFIG"]
    assert tf["cluster"] == {
        "chief": ["cmle-training-workerpool0-ID-0:2222"],
        "worker": ["cmle-training-workerpool1-ID-0:2222", "cmle-training-workerpool1-ID-1:2222"],
        "ps": ["cmle-training-workerpool2-ID-0:2222"],
    }
    assert tf["environment"] == "cloud"
    assert tf["task"] == {"type": "worker", "index": 0, "trial": "1"}
    assert tf["job"] == SPEC


@pytest.mark.parametrize(("pool", "index", "task_type"), [
    (0, 0, "chief"), (1, 1, "worker"), (2, 0, "ps"), (3, 1, "evaluator")])
def test_tf_task_types_by_pool(pool: int, index: int, task_type: str) -> None:
    job = make_job(workers=2, ps=1, evaluators=2)
    tf = env_of(job, pool, index)["TF_CONFIG"]
    assert tf["task"] == {"type": task_type, "index": index}


def test_evaluators_are_never_in_the_tf_cluster() -> None:
    job = make_job(workers=1, evaluators=2)
    for pool, index in [(0, 0), (1, 0), (3, 0), (3, 1)]:
        tf = env_of(job, pool, index)["TF_CONFIG"]
        assert set(tf["cluster"]) == {"chief", "worker"}


def test_single_replica_job_has_no_tf_config() -> None:
    env = env_of(make_job(), 0, 0)
    assert "TF_CONFIG" not in env
    assert env["CLUSTER_SPEC"]["cluster"] == {"workerpool0": ["cmle-training-workerpool0-"
                                                              f"{cluster_env.PREVIEW_JOB_ID}-0:2222"]}


def test_reduction_server_is_in_cluster_spec_but_not_a_tf_task() -> None:
    job = build({"display_name": "rs", "chief": dict(POOL), "workers": {**POOL, "replicas": 2},
                 "reduction_server": {"replicas": 3}})
    chief = env_of(job, 0, 0)
    assert len(chief["CLUSTER_SPEC"]["cluster"]["workerpool2"]) == 3
    assert set(chief["TF_CONFIG"]["cluster"]) == {"chief", "worker"}
    assert "TF_CONFIG" not in env_of(job, 2, 1)


MIRROR_RS = "us-docker.pkg.dev/me/mirror/reductionserver:1"


def test_a_reduction_server_with_its_own_image_is_one_everywhere(tmp_path: Path) -> None:
    """Regression: the gcloud format read a mirrored Reduction Server image as a parameter server."""
    from vxtrain import formats
    from vxtrain.compiler import compile_custom_job_spec
    from vxtrain.loading.loader import load_text
    from vxtrain.runtime import runner

    run = {"command": ["python", "-c", "pass"]}
    job = build({"display_name": "rs", "chief": {**POOL, **run}, "workers": {**POOL, **run, "replicas": 1},
                 "reduction_server": {"replicas": 2, "machine_type": "n1-highcpu-16", "image": MIRROR_RS}})
    job_spec = compile_custom_job_spec(job)
    document, _ = load_text(yaml.safe_dump(job_spec, sort_keys=False), "rt.yaml", environ={})
    assert document is not None
    native, _ = formats.to_native(document, display_name="rt")
    assert native is not None
    back = build(native.data)  # the gcloud round trip
    rs = back.pool("reduction_server")
    assert rs is not None and rs.image == MIRROR_RS and back.pool("parameter_servers") is None
    for each in (job, back):
        env = cluster_env.replica_env(each, job_spec, 0, 0)
        assert set(json.loads(env.pop("TF_CONFIG"))["cluster"]) == {"chief", "worker"}
        # CLUSTER_SPEC alone tells the Reduction Server pool apart only when its job is the
        # CustomJobSpec dict (Google's page); the string form running jobs carry cannot.
        spec = json.loads(env["CLUSTER_SPEC"])
        assert set(cluster.current(env).cluster) == {"chief", "worker", "ps"}
        env["CLUSTER_SPEC"] = json.dumps({**spec, "job": job_spec})
        assert set(cluster.current(env).cluster) == {"chief", "worker"}
        plans = runner.plan_replicas(each, job_spec, base_dir=tmp_path)
        assert [p.replica.name for p in plans] == ["workerpool0-0", "workerpool1-0"]  # no RS started


def test_hosts_given_by_the_caller_are_used_everywhere() -> None:
    job = make_job(workers=1)
    hosts = {0: ["127.0.0.1:1000"], 1: ["127.0.0.1:1001"]}
    env = env_of(job, 1, 0, hosts=hosts)
    assert env["CLUSTER_SPEC"]["cluster"] == {"workerpool0": hosts[0], "workerpool1": hosts[1]}
    assert env["TF_CONFIG"]["cluster"] == {"chief": hosts[0], "worker": hosts[1]}


# --- other variables -----------------------------------------------------------

@pytest.mark.parametrize("base", ["gs://b/runs/x", "gs://b/runs/x/"])
def test_output_dirs_from_base_output_dir(base: str) -> None:
    env = env_of(make_job(base_output_dir=base), 0, 0)
    assert env["AIP_MODEL_DIR"] == "gs://b/runs/x/model/"
    assert env["AIP_CHECKPOINT_DIR"] == "gs://b/runs/x/checkpoints/"
    assert env["AIP_TENSORBOARD_LOG_DIR"] == "gs://b/runs/x/logs/"


def test_trial_output_dirs_sit_under_the_trial_id() -> None:
    env = env_of(make_job(base_output_dir="gs://b/hp"), 0, 0, trial="3")
    assert env["AIP_MODEL_DIR"] == "gs://b/hp/3/model/"


def test_no_output_dirs_without_base_output_dir() -> None:
    env = env_of(make_job(), 0, 0)
    assert not any(k.endswith("_DIR") for k in env)


def test_job_id_tensorboard_and_pool_env() -> None:
    job = make_job(workers=1, tensorboard="projects/p/locations/r/tensorboards/1",
                   defaults={"env": {"NCCL_DEBUG": "INFO", "CLUSTER_SPEC": "user value loses"}})
    env = env_of(job, 1, 0, job_id="42")
    assert env["CLOUD_ML_JOB_ID"] == "42"
    assert env["AIP_TENSORBOARD_RESOURCE_NAME"] == "projects/p/locations/r/tensorboards/1"
    assert env["NCCL_DEBUG"] == "INFO"
    assert env["CLUSTER_SPEC"]["task"]["type"] == "workerpool1"


@pytest.mark.parametrize(("pool", "index"), [(1, 0), (0, 1), (1, 2), (4, 0), (-1, 0)])
def test_missing_replica_is_an_error(pool: int, index: int) -> None:
    job = make_job(workers=2) if pool != 1 else make_job()
    assert not cluster_env.has_replica(job, pool, index)
    with pytest.raises(KeyError):
        cluster_env.replica_env(job, SPEC, pool, index)


# --- the runtime helper --------------------------------------------------------

def test_runtime_reads_tf_config_and_normalizes_master() -> None:
    tf = {"cluster": {"master": ["m:1"], "worker": ["w0:1", "w1:1"], "ps": ["p:1"]},
          "task": {"type": "master", "index": 0, "trial": "7"}, "environment": "cloud"}
    info = cluster.current({"TF_CONFIG": json.dumps(tf)})
    assert (info.role, info.index, info.trial, info.is_chief) == ("chief", 0, "7", True)
    assert info.cluster == {"chief": ["m:1"], "worker": ["w0:1", "w1:1"], "ps": ["p:1"]}
    assert info.num_workers == 2 and info.world_size == 3


def test_runtime_reads_cluster_spec_alone() -> None:
    job = make_job(workers=2, ps=1, evaluators=1)
    env = cluster_env.replica_env(job, SPEC, 3, 0, trial="2")
    del env["TF_CONFIG"]
    info = cluster.current(env)
    assert (info.role, info.index, info.trial, info.is_chief) == ("evaluator", 0, "2", False)
    assert set(info.cluster) == {"chief", "worker", "ps"}


def test_runtime_outside_any_cluster_is_a_lone_chief() -> None:
    info = cluster.current({})
    assert (info.role, info.index, info.trial, info.num_workers, info.world_size) == ("chief", 0, None, 0, 1)
    assert cluster.torch_env({}) == {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500",
                                     "WORLD_SIZE": "1", "RANK": "0"}


def test_runtime_module_functions_read_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    job = make_job(workers=3)
    for name, value in cluster_env.replica_env(job, SPEC, 1, 2, trial="5").items():
        monkeypatch.setenv(name, value)
    assert (cluster.role(), cluster.index(), cluster.is_chief(), cluster.trial(),
            cluster.num_workers()) == ("worker", 2, False, "5", 3)


def test_runtime_rejects_malformed_json() -> None:
    with pytest.raises(ValueError, match="TF_CONFIG is not valid JSON"):
        cluster.current({"TF_CONFIG": "{nope"})


def test_torch_env_keeps_values_already_set() -> None:
    env = cluster_env.replica_env(make_job(workers=1), SPEC, 1, 0)
    env.update({"MASTER_PORT": "1234", "RANK": "9"})
    derived = cluster.torch_env(env)
    assert derived["MASTER_PORT"] == "1234" and derived["RANK"] == "9"
    assert derived["MASTER_ADDR"] == f"cmle-training-workerpool0-{cluster_env.PREVIEW_JOB_ID}-0"


def test_torch_env_gives_no_rank_to_parameter_servers() -> None:
    env = cluster_env.replica_env(make_job(workers=1, ps=1), SPEC, 2, 0)
    assert "RANK" not in cluster.torch_env(env)


@settings(max_examples=40, deadline=None)
@given(workers=st.integers(0, 6), ps=st.integers(0, 3), evaluators=st.integers(0, 2),
       trial=st.one_of(st.none(), st.integers(1, 50).map(str)))
def test_every_replica_reads_back_its_own_place(workers: int, ps: int, evaluators: int,
                                                 trial: str | None) -> None:
    job = make_job(workers=workers, ps=ps, evaluators=evaluators)
    roles = {0: "chief", 1: "worker", 2: "ps", 3: "evaluator"}
    ranks, masters = [], set()
    for pool, count in cluster_env.pool_replicas(job).items():
        for i in range(count):
            env = cluster_env.replica_env(job, SPEC, pool, i, trial=trial)
            info = cluster.current(env)
            assert (info.role, info.index, info.trial) == (roles[pool], i, trial)
            assert info.num_workers == workers
            torch = cluster.torch_env(env)
            masters.add((torch["MASTER_ADDR"], torch["WORLD_SIZE"]))
            ranks += [int(torch["RANK"])] if "RANK" in torch else []
    assert sorted(ranks) == list(range(1 + workers))
    assert len(masters) == 1


def test_runtime_helper_imports_only_the_standard_library() -> None:
    code = ("import sys; before = set(sys.modules); import vxtrain.cluster; "
            "new = {m.split('.')[0].lstrip('_') for m in set(sys.modules) - before}; "
            "std = {m.lstrip('_') for m in sys.stdlib_module_names}; "
            "print(sorted(new - std - {'vxtrain'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, check=True)
    assert out.stdout.strip() == "[]"


def test_cluster_module_works_vendored_with_slots_alone(tmp_path: Path) -> None:
    """cluster.py and slots.py copied into a bare ``vxtrain`` folder still work (same import path)."""
    vendored = tmp_path / "vxtrain"
    vendored.mkdir()
    for name in ("cluster.py", "slots.py"):
        shutil.copy(ROOT / "vxtrain" / name, vendored / name)
    tf = {"cluster": {"chief": ["c:1"], "worker": ["w:1"]}, "task": {"type": "worker", "index": 0}}
    code = ("import json, os; from vxtrain import cluster; "
            f"assert os.path.dirname(cluster.__file__) == {str(vendored)!r}, cluster.__file__; "
            f"print(cluster.current({{'TF_CONFIG': {json.dumps(tf)!r}}}).rank)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path,
                         env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(tmp_path)},
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"


# --- vxtrain env -----------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("workerpool1:0", (1, 0)), ("workerpool3-2", (3, 2)), ("workers:1", (1, 1)),
    ("chief:0", (0, 0)), ("evaluators/0", (3, 0))])
def test_parse_replica(text: str, expected: tuple[int, int]) -> None:
    assert env_cmd.parse_replica(text) == expected


@pytest.mark.parametrize("text", ["workerpool1", "pool1:0", "workerpool:0", "1:0", ""])
def test_parse_replica_rejects_other_shapes(text: str) -> None:
    with pytest.raises(UsageError, match="workerpoolK:I"):
        env_cmd.parse_replica(text)


@pytest.mark.parametrize("text", ["0", "-1", "x", "1.5", "\u00b2", "\u0661", "1\u00b2"])
def test_parse_trial_rejects_non_trials(text: str) -> None:
    # "²" and "١" pass str.isdigit() but int() refuses the first: a usage error, not a crash.
    with pytest.raises(UsageError, match="trial number from 1"):
        env_cmd.parse_trial(text)


def test_env_command_json_is_what_the_process_sees(capsys: pytest.CaptureFixture[str]) -> None:
    from vxtrain.api import Options
    from vxtrain.commands._common import OutputFormat

    assert env_cmd.env(str(QUICKSTART), "workerpool1:1", Options(), "2", OutputFormat.json) == 0
    values = json.loads(capsys.readouterr().out)
    assert all(isinstance(v, str) for v in values.values())
    tf = json.loads(values["TF_CONFIG"])
    assert tf["task"] == {"type": "worker", "index": 1, "trial": "2"}
    assert json.loads(values["CLUSTER_SPEC"])["job"] == CAPTURED_JOB
    assert tf["job"]["workerPoolSpecs"][1]["replicaCount"] == 2
    assert values["AIP_MODEL_DIR"] == "gs://my-bucket/runs/quickstart/2/model/"


def test_env_command_text_is_sourceable_shell(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from vxtrain.api import Options

    env_cmd.env(str(QUICKSTART), "workerpool0:0", Options())
    script = tmp_path / "env.sh"
    script.write_text(capsys.readouterr().out)
    expected = env_cmd.compute_env(str(QUICKSTART), "workerpool0:0", Options())
    dump = "import json, os, sys; json.dump({k: os.environ[k] for k in sys.argv[1:]}, sys.stdout)"
    out = subprocess.run(["bash", "-c", f". {shlex.quote(str(script))} && "
                          f"{shlex.quote(sys.executable)} -c {shlex.quote(dump)} {' '.join(expected)}"],
                         capture_output=True, text=True, check=True, env={"PATH": os.environ["PATH"]})
    assert json.loads(out.stdout) == expected


def test_env_command_names_the_missing_replica() -> None:
    from vxtrain.api import Options

    with pytest.raises(VxtrainError, match=r"no replica workerpool1:2; its replicas are "
                                           r"workerpool0:0, workerpool1:0\.\.1") as info:
        env_cmd.compute_env(str(QUICKSTART), "workerpool1:2", Options())
    assert info.value.exit_code == 1


@pytest.mark.slow
def test_env_cli_exit_codes() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "vxtrain", "env", str(QUICKSTART), *args],
                              capture_output=True, text=True, cwd=ROOT,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})

    ok = run("--replica", "workerpool1:0", "--output", "json")
    assert ok.returncode == 0 and "TF_CONFIG" in json.loads(ok.stdout)
    missing = run("--replica", "workerpool3:0")
    assert missing.returncode == 1 and "no replica workerpool3:0" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_env_of_a_tpu_slice_is_what_vertex_sets(tmp_path: Path) -> None:
    """A TPU job is one replica (a multi-host slice too): CLUSTER_SPEC as for any job, and no
    TF_CONFIG ("Vertex AI does not set TF_CONFIG for single-replica training jobs",
    DISTRIBUTED_DOC). No TPU_* variable: which ones Vertex sets is not verified."""
    from vxtrain.api import Options

    spec = tmp_path / "tpu.yaml"
    spec.write_text("display_name: v5e\nregion: us-central1\nbase_output_dir: gs://b/out\n"
                    "chief: {machine_type: ct5lp-hightpu-4t, tpu_topology: 4x4, image: us-docker.pkg.dev/p/t/jax:1}\n")
    values = env_cmd.compute_env(str(spec), "workerpool0:0", Options(environ={}))
    assert "TF_CONFIG" not in values and not any(k.startswith("TPU") for k in values)
    cluster_spec = json.loads(values["CLUSTER_SPEC"])
    assert cluster_spec["task"] == {"type": "workerpool0", "index": 0}
    assert list(cluster_spec["cluster"]) == ["workerpool0"] and len(cluster_spec["cluster"]["workerpool0"]) == 1
    assert cluster_spec["job"] == CAPTURED_JOB and values["AIP_MODEL_DIR"] == "gs://b/out/model/"
