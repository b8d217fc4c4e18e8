"""Hyperparameter studies: validation rules, sampling, metrics, scheduling, and
real trials of configs/examples/study.yaml run locally and through the emulator."""
from __future__ import annotations

import copy
import io
import json
import math
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import HyperparameterTuningJob
from google.protobuf import json_format
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.polling import wait_for
from vxtrain import api
from vxtrain.runtime import study
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain.commands import jobs as jobs_cmd
from vxtrain.commands.local_run import local_run
from vxtrain.diagnostics import Diagnostic
from vxtrain import model
from vxtrain.validation import rules
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.vocab import studies

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "configs" / "examples" / "study.yaml"
IMAGE = "us-docker.pkg.dev/p/train/t:1"
STUDY: dict[str, Any] = {
    "metric": {"id": "accuracy", "goal": "maximize"},
    "parameters": {"lr": {"type": "double", "min": 0.0001, "max": 0.1, "scale": "log"},
                   "batch": {"type": "discrete", "values": [32, 64]},
                   "opt": {"type": "categorical", "values": ["adam", "sgd"]},
                   "layers": {"type": "integer", "min": 1, "max": 4}},
    "max_trials": 8, "parallel_trials": 2, "max_failed_trials": 2, "algorithm": "random",
}


# --- validation ----------------------------------------------------------------------

def spec_with(**study_changes: Any) -> dict[str, Any]:
    """A valid job whose study gets ``study_changes`` (None deletes; "parameters.X" replaces X)."""
    s = copy.deepcopy(STUDY)
    for key, value in study_changes.items():
        target, _, name = key.partition("__")
        holder = s["parameters"] if target == "p" else s
        key = name if target == "p" else key
        if value is None:
            holder.pop(key, None)
        else:
            holder[key] = value
    return {"display_name": "t", "chief": {"machine_type": "n1-standard-4", "image": IMAGE}, "study": s}


def run_rules(data: dict[str, Any]) -> list[Diagnostic]:
    return rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((d.severity, d.code, d.path) for d in run_rules(data))


P = "study.parameters"
RULE_CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    ("valid", spec_with(), []),
    ("min-ge-max", spec_with(p__lr={"type": "double", "min": 0.1, "max": 0.1}),
     [("error", "study-min-max", f"{P}.lr.min")]),
    ("log-min-zero", spec_with(p__lr={"type": "double", "min": 0, "max": 1, "scale": "log"}),
     [("error", "study-log-scale", f"{P}.lr.scale")]),
    ("reverse-log-discrete-negative", spec_with(p__batch={"type": "discrete", "values": [-1, 2], "scale": "reverse_log"}),
     [("error", "study-log-scale", f"{P}.batch.scale")]),
    ("empty-values", spec_with(p__opt={"type": "categorical", "values": []}),
     [("error", "study-values-empty", f"{P}.opt.values")]),
    ("no-values", spec_with(p__batch={"type": "discrete"}), [("error", "study-values-empty", f"{P}.batch")]),
    ("grid-double", spec_with(algorithm="grid"), [("error", "study-grid-double", f"{P}.lr.type")]),
    ("integer-fraction", spec_with(p__layers={"type": "integer", "min": 1.5, "max": 4}),
     [("error", "study-integer-bounds", f"{P}.layers.min")]),
    ("integer-infinite", spec_with(p__layers={"type": "integer", "min": 1, "max": float("inf")}),
     [("error", "study-not-finite", f"{P}.layers.max")]),
    ("double-nan", spec_with(p__lr={"type": "double", "min": float("nan"), "max": 0.1}),
     [("error", "study-not-finite", f"{P}.lr.min")]),
    ("discrete-inf", spec_with(p__layers={"type": "discrete", "values": [1, float("inf")]}),
     [("error", "study-not-finite", f"{P}.layers.values")]),
    ("parallel-gt-max", spec_with(parallel_trials=9), [("error", "study-parallel-exceeds", "study.parallel_trials")]),
    ("max-failed-gt-max", spec_with(max_failed_trials=9),
     [("warning", "study-max-failed-unreachable", "study.max_failed_trials")]),
    ("scale-categorical", spec_with(p__opt={"type": "categorical", "values": ["a"], "scale": "log"}),
     [("error", "study-scale-categorical", f"{P}.opt.scale")]),
    ("bounds-missing", spec_with(p__lr={"type": "double", "min": 0.1}), [("error", "study-bounds-missing", f"{P}.lr")]),
    ("values-on-double", spec_with(p__lr={"type": "double", "min": 0.1, "max": 1, "values": [1]}),
     [("error", "study-values-ignored", f"{P}.lr.values")]),
    ("bounds-on-categorical", spec_with(p__opt={"type": "categorical", "values": ["a"], "max": 3}),
     [("error", "study-bounds-ignored", f"{P}.opt.max")]),
    ("discrete-strings", spec_with(p__batch={"type": "discrete", "values": [32, "big"]}),
     [("error", "study-discrete-values", f"{P}.batch.values")]),
    ("duplicates", spec_with(p__opt={"type": "categorical", "values": ["a", "b", "a"]}),
     [("error", "study-values-duplicate", f"{P}.opt.values")]),
    ("discrete-unsorted", spec_with(p__batch={"type": "discrete", "values": [64, 32]}),
     [("warning", "study-discrete-order", f"{P}.batch.values")]),
    ("bad-name", spec_with(**{"p__learning rate": {"type": "integer", "min": 1, "max": 2}}),
     [("error", "study-parameter-name", f"{P}.learning rate")]),
    ("no-metric", spec_with(metric=None), [("error", "study-metric-missing", "study")]),
    ("metric-and-metrics", spec_with(metrics=[{"id": "a", "goal": "maximize"}]),
     [("error", "study-metric-twice", "study.metrics")]),
    ("duplicate-metric", spec_with(metric=None, metrics=[{"id": "a", "goal": "maximize"}, {"id": "a", "goal": "minimize"}]),
     [("error", "study-metric-duplicate", "study.metrics[1].id")]),
    ("no-max-trials", spec_with(max_trials=None, parallel_trials=None, max_failed_trials=None),
     [("error", "study-max-trials-missing", "study"), ("error", "study-parallel-trials-missing", "study")]),
    ("no-parameters", spec_with(parameters=None), [("error", "study-parameters-missing", "study")]),
]


@pytest.mark.parametrize(("data", "expected"), [c[1:] for c in RULE_CASES], ids=[c[0] for c in RULE_CASES])
def test_study_rules(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


def test_collision_with_an_existing_arg() -> None:
    data = spec_with()
    data["defaults"] = {"args": ["--epochs=3", "--lr=0.1"]}
    diags = run_rules(data)
    assert [(d.code, d.path) for d in diags] == [("study-arg-collision", f"{P}.lr")]
    assert '"--lr=0.1"' in diags[0].message and "chief.args" in diags[0].message
    data["defaults"] = {"args": ["--lr", "0.1"]}
    assert [d.code for d in run_rules(data)] == ["study-arg-collision"]
    data["defaults"] = {"args": ["--lrx=1", "--layers_extra=2"]}
    assert run_rules(data) == []


def test_messages_name_the_value_and_the_file_position(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("display_name: t\nchief: {machine_type: n1-standard-4, image: i}\nstudy:\n"
                    "  metric: {id: acc, goal: maximize}\n  parameters:\n"
                    "    lr: {type: double, min: 0.5, max: 0.1}\n  max_trials: 2\n  parallel_trials: 3\n")
    result = api.check_file(path)
    by_code = {d.code: d for d in result.diagnostics}
    assert set(by_code) == {"study-min-max", "study-parallel-exceeds"}
    d = by_code["study-min-max"]
    assert (d.line, d.path, d.file) == (6, "study.parameters.lr.min", str(path))
    assert "0.5" in d.message and "0.1" in d.message and "below" in d.message
    assert by_code["study-parallel-exceeds"].line == 8 and "≤ 2" in by_code["study-parallel-exceeds"].message


# --- compile → the real proto -----------------------------------------------------------

def test_example_compiles_into_the_real_proto() -> None:
    result = api.check_file(EXAMPLE)
    assert result.valid, result.diagnostics
    hpt = result.hyperparameter_tuning_job
    msg = json_format.ParseDict(hpt, HyperparameterTuningJob.pb(HyperparameterTuningJob()))
    assert msg.study_spec.algorithm == msg.study_spec.Algorithm.GRID_SEARCH
    assert [p.parameter_id for p in msg.study_spec.parameters] == ["learning_rate", "layers", "optimizer"]
    assert (msg.max_trial_count, msg.parallel_trial_count, msg.max_failed_trial_count) == (12, 3, 2)
    assert len(msg.trial_job_spec.worker_pool_specs) == 2


# --- sampling ---------------------------------------------------------------------------

SPEC = {"metrics": [{"metricId": "accuracy", "goal": "MAXIMIZE"}], "algorithm": "GRID_SEARCH", "parameters": [
    {"parameterId": "layers", "integerValueSpec": {"minValue": "1", "maxValue": "3"}},
    {"parameterId": "batch", "discreteValueSpec": {"values": [32.0, 64.0]}},
    {"parameterId": "opt", "categoricalValueSpec": {"values": ["adam", "sgd"]}}]}


def test_grid_enumerates_every_point_in_order() -> None:
    points = study.suggest(SPEC, 100).points
    assert len(points) == 12 == len({tuple(p.values()) for p in points})
    assert points[:3] == [{"layers": 1, "batch": 32, "opt": "adam"}, {"layers": 1, "batch": 32, "opt": "sgd"},
                          {"layers": 1, "batch": 64, "opt": "adam"}]
    assert points[-1] == {"layers": 3, "batch": 64, "opt": "sgd"}
    assert study.suggest(SPEC, 5).points == points[:5]
    assert "fewer than max_trials" in study.suggest(SPEC, 100).notes[0]
    assert studies.trial_args(points[0]) == ["--layers=1", "--batch=32", "--opt=adam"]


def test_trial_args_and_the_documented_form_parse_alike_with_argparse() -> None:
    """vxtrain passes --name=value; Google's page shows --name value (docs/decisions.md): argparse reads both."""
    import argparse

    params = {"learning_rate": 0.01, "layers": 3.0, "opt": "adam", "flag": True}
    parser = argparse.ArgumentParser()
    for name in params:
        parser.add_argument(f"--{name}")
    ours = studies.trial_args(params)
    assert ours == ["--learning_rate=0.01", "--layers=3", "--opt=adam", "--flag=true"]
    spaced = [part for arg in ours for part in arg.split("=", 1)]
    assert vars(parser.parse_args(ours)) == vars(parser.parse_args(spaced)) == {
        "learning_rate": "0.01", "layers": "3", "opt": "adam", "flag": "true"}


def test_grid_refuses_a_double() -> None:
    spec = {"algorithm": "GRID_SEARCH", "parameters": [{"parameterId": "lr", "doubleValueSpec": {"minValue": 0.1, "maxValue": 1}}]}
    with pytest.raises(ValueError, match="integer, discrete or categorical"):
        study.suggest(spec, 3)


def space(low: float, high: float, scale: str, kind: str = "double") -> dict[str, Any]:
    key = "doubleValueSpec" if kind == "double" else "integerValueSpec"
    return {"algorithm": "RANDOM_SEARCH", "parameters": [
        {"parameterId": "x", key: {"minValue": low, "maxValue": high}, "scaleType": scale}]}


@settings(max_examples=60, deadline=None)
@given(low=st.floats(1e-6, 100), span=st.floats(1e-3, 1e4), seed=st.integers(0, 2**32),
       scale=st.sampled_from(["UNIT_LINEAR_SCALE", "UNIT_LOG_SCALE", "UNIT_REVERSE_LOG_SCALE"]))
def test_random_draws_stay_within_bounds(low: float, span: float, seed: int, scale: str) -> None:
    high = low + span
    xs = [p["x"] for p in study.suggest(space(low, high, scale), 20, seed=seed).points]
    assert all(low <= x <= high for x in xs)
    ints = [p["x"] for p in study.suggest(space(math.ceil(low), math.ceil(high) + 1, scale, "integer"), 20,
                                          seed=seed).points]
    assert all(isinstance(i, int) and math.ceil(low) <= i <= math.ceil(high) + 1 for i in ints)


def test_log_scale_draws_evenly_in_log_space() -> None:
    xs = [p["x"] for p in study.suggest(space(1e-4, 1.0, "UNIT_LOG_SCALE"), 2000, seed=1).points]
    below = sum(x < 1e-2 for x in xs) / len(xs)  # half of the log range; a linear draw gives ~1 %
    assert 0.45 < below < 0.55
    rev = [p["x"] for p in study.suggest(space(1e-4, 1.0, "UNIT_REVERSE_LOG_SCALE"), 2000, seed=1).points]
    assert sum(x > 1 - 1e-2 for x in rev) / len(rev) > 0.45  # mirrored: dense near the top
    lin = [p["x"] for p in study.suggest(space(1e-4, 1.0, "UNIT_LINEAR_SCALE"), 2000, seed=1).points]
    assert sum(x < 1e-2 for x in lin) / len(lin) < 0.05


def test_random_is_reproducible_with_a_seed_and_default_falls_back_with_a_note() -> None:
    spec = {**SPEC, "algorithm": "RANDOM_SEARCH"}
    assert study.suggest(spec, 10, seed=7).points == study.suggest(spec, 10, seed=7).points
    assert study.suggest(spec, 10, seed=7).points != study.suggest(spec, 10, seed=8).points
    default = study.suggest({**SPEC, "algorithm": "ALGORITHM_UNSPECIFIED"}, 10, seed=7)
    assert default.algorithm == "random" and default.points == study.suggest(spec, 10, seed=7).points
    assert "Bayesian" in default.notes[0]
    assert study.suggest(spec, 3).notes == []


# --- metrics and the best trial ------------------------------------------------------------

def test_read_metrics_takes_the_last_value_of_the_hypertune_format(tmp_path: Path) -> None:
    path = tmp_path / "output.metrics"
    # Lines as cloudml-hypertune writes them (json.dumps(sort_keys=True), values as strings).
    lines = [{"global_step": "1", "accuracy": "0.5", "timestamp": 1.0, "trial": "0"},
             {"global_step": "2", "loss": "0.3", "timestamp": 2.0, "trial": "0"},
             {"global_step": "3", "accuracy": "0.75", "timestamp": 3.0, "trial": "0"}]
    path.write_text("\n".join(json.dumps(x, sort_keys=True) for x in lines) + "\nnot json\n")
    m = study.read_metrics(path, ["accuracy", "loss", "f1"])
    assert m.metrics == {"accuracy": 0.75, "loss": 0.3} and m.step == 3
    assert study.read_metrics(tmp_path / "absent", ["accuracy"]).metrics == {}


def test_best_trial_by_goal_excluding_failed_and_silent_trials() -> None:
    t = studies.TrialResult
    trials = [t("1", {}, "SUCCEEDED", {"loss": 0.5}), t("2", {}, "INFEASIBLE", {"loss": 0.1}),
              t("3", {}, "SUCCEEDED", {"loss": 0.2}), t("4", {}, "SUCCEEDED", {}), t("5", {}, "SUCCEEDED", {"loss": 0.2})]
    assert studies.best_trial(trials, [studies.MetricGoal("loss", maximize=False)]).id == "3"
    assert studies.best_trial(trials, [studies.MetricGoal("loss", maximize=True)]).id == "1"
    assert studies.best_trial(trials, [studies.MetricGoal("acc", maximize=True)]) is None


# --- scheduling (pure: a plain function stands in for a trial) ----------------------------------

def test_schedule_keeps_at_most_parallel_trials_running() -> None:
    lock, running, peak = threading.Lock(), [0], [0]

    def trial(trial_id: str, params: dict[str, Any]) -> studies.TrialResult:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.03)
        with lock:
            running[0] -= 1
        return studies.TrialResult(trial_id, params, "SUCCEEDED")

    done = study.schedule([{"i": i} for i in range(9)], trial, parallel=3, failure_limit=9)
    assert [t.id for t in done] == [str(i) for i in range(1, 10)] and peak[0] == 3


def test_schedule_stops_after_the_failure_limit() -> None:
    started: list[str] = []
    done = study.schedule([{}] * 10, lambda i, p: studies.TrialResult(i, p, "INFEASIBLE", message="boom"),
                          parallel=1, failure_limit=3, on_start=lambda t: started.append(t.id))
    assert started == ["1", "2", "3"] and all(t.failed for t in done)
    config = study.StudyConfig({}, max_trials=10, max_failed_trials=3)
    verdict = study.judge(done, [], config)
    assert not verdict.succeeded and "3 trial(s) failed" in verdict.message
    assert study.StudyConfig({}, max_trials=10).failure_limit == 10  # 0: only when every trial failed


def test_a_study_whose_every_trial_failed_fails_even_below_the_limit() -> None:
    # A grid of 3 points under max_trials 10: the failure limit (10) can never be reached.
    failed = [studies.TrialResult(str(i), {"x": i}, "INFEASIBLE", message="boom") for i in (1, 2, 3)]
    for config in (study.StudyConfig({}, max_trials=10), study.StudyConfig({}, max_trials=10, max_failed_trials=5)):
        verdict = study.judge(failed, [], config)
        assert not verdict.succeeded and "3 trial(s) failed (every trial failed); last: trial 3: boom" in verdict.message
    one_ok = failed[:2] + [studies.TrialResult("3", {"x": 3}, "SUCCEEDED")]
    assert study.judge(one_ok, [], study.StudyConfig({}, max_trials=10)).succeeded


def _grid_spec(tmp_path: Path, code: str, **study_extra: Any) -> Path:
    spec = {"display_name": "grid", "chief": {"machine_type": "n1-standard-4", "image": IMAGE},
            "local": {"command": ["python", "-c", code]},
            "study": {"metric": {"id": "accuracy", "goal": "maximize"}, "algorithm": "grid",
                      "parameters": {"x": {"type": "integer", "min": 1, "max": 3}}, **study_extra}}
    path = tmp_path / "grid.yaml"
    path.write_text(json.dumps(spec))
    return path


def test_a_small_grid_whose_every_trial_fails_fails_the_study(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    path = _grid_spec(tmp_path, "import sys; sys.exit(4)", max_trials=10, parallel_trials=3)
    assert local_run(str(path), Options()) == 3
    assert "study FAILED: 3 trial(s) failed (every trial failed)" in capsys.readouterr().out


def test_one_trial_of_a_study_gets_its_parameters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vxtrain.errors import UsageError

    code = "import json, os, sys; print('argv', sys.argv[1:], json.loads(os.environ['CLUSTER_SPEC'])['task'])"
    path = _grid_spec(tmp_path, code, max_trials=3, parallel_trials=1)
    assert local_run(str(path), Options(), trial="2") == 0
    out = capsys.readouterr().out
    assert "[workerpool0-0] argv ['--x=2'] {'type': 'workerpool0', 'index': 0, 'trial': '2'}" in out
    with pytest.raises(UsageError, match="--trial 4: the study has 3 trial"):
        local_run(str(path), Options(), trial="4")


# --- real trials of the example ----------------------------------------------------------------

@pytest.fixture
def trial_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The example's replicas write what they received here (VXTRAIN_STUDY_LOG)."""
    monkeypatch.setenv("VXTRAIN_STUDY_LOG", str(tmp_path))
    yield tmp_path


def entries(folder: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(folder.glob("trial*.json"))]


@pytest.mark.slow
def test_local_trials_get_ids_args_and_run_parallel_trials_at_once(
        trial_log: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STUDY_SLEEP", "0.4")
    opts = Options(sets=["study.max_trials=4", "study.parallel_trials=2"])
    assert local_run(str(EXAMPLE), opts, output=c.OutputFormat.json) == 0
    report = json.loads(capsys.readouterr().out)
    assert [t["id"] for t in report["trials"]] == ["1", "2", "3", "4"]
    logs = entries(trial_log)
    assert sorted((e["trial"], e["type"]) for e in logs) == sorted(
        (str(i), f"workerpool{k}") for i in range(1, 5) for k in (0, 1))
    assert all(e["tf_trial"] == e["trial"] for e in logs)  # TF_CONFIG too (chief + worker: distributed)
    first = {e["type"]: e["argv"] for e in logs if e["trial"] == "1"}
    assert first["workerpool0"] == ["--epochs=1", "--learning_rate=0.001", "--layers=2", "--optimizer=adam"]
    assert first["workerpool1"] == first["workerpool0"]
    chiefs = [e for e in logs if e["type"] == "workerpool0"]
    overlap = max(sum(o["start"] < e["start"] < o["end"] for o in chiefs) + 1 for e in chiefs)
    assert overlap == 2  # two at once, never three
    assert report["trials"][0]["metrics"] == {"accuracy": pytest.approx(0.8)}


def test_local_study_failures_are_bounded(trial_log: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("STUDY_FAIL_OPTIMIZER", "sgd")  # every even grid point fails
    opts = Options(sets=["study.parallel_trials=1", "study.max_failed_trials=2"])
    assert local_run(str(EXAMPLE), opts) == 3
    out = capsys.readouterr().out
    table = out[out.index("trial  parameters"):]
    assert [line.split()[0] for line in table.splitlines()[1:5]] == ["1", "2", "3", "4"]
    assert "\n5 " not in table and "2 trial(s) failed (the limit is 2)" in out
    assert "INFEASIBLE" in table and "best trial: 3" in out


@pytest.mark.slow
def test_study_through_the_emulator_and_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from vxtrain.backends import vertex
    from vxtrain.backends.emulator import start_emulator
    from vxtrain.vocab.kinds import TUNING
    from vxtrain.submission.names import LABEL_KEY
    from tests.submission.helpers import submit_job

    result = api.load_job(EXAMPLE, Options(sets=["study.max_trials=8"]))
    with start_emulator(workdir=EXAMPLE.parent, out=io.StringIO()) as handle:
        handle.emulator.register_local({LABEL_KEY: "study-e2e"}, result.job.local)
        with vertex.connect(endpoint=handle.address) as backend:
            view = submit_job(backend, result.hyperparameter_tuning_job, key="study-e2e", wait=True, retry=None)
            stored = backend.get(TUNING, view["name"])
        assert view["state"] == "JOB_STATE_SUCCEEDED"
        assert [t["id"] for t in stored["trials"]] == [str(i) for i in range(1, 9)]
        assert {t["state"] for t in stored["trials"]} == {"SUCCEEDED"}
        metric = stored["trials"][4]["finalMeasurement"]["metrics"][0]
        assert metric["metricId"] == "accuracy" and metric["value"] == pytest.approx(0.9)
        assert view["best_trial"]["id"] == "7" and view["best_trial"]["parameters"]["layers"] == 3
        assert jobs_cmd.status(view["name"], endpoint=handle.address) == 0
    out = capsys.readouterr().out
    assert "accuracy" in out and "\n7 *" in out
    assert "best trial: 7 (accuracy=1) --learning_rate=0.01 --layers=3 --optimizer=adam" in out


def test_a_trial_without_a_metric_succeeds_and_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = ("import json, os, sys; x = sys.argv[-1].split('=')[1]; "
            "x == '1' and open(os.environ['CLOUD_ML_HP_METRIC_FILE'], 'w').write("
            "json.dumps({'accuracy': '0.5', 'global_step': '0'}) + '\\n')")
    spec = {"display_name": "silent", "chief": {"machine_type": "n1-standard-4", "image": IMAGE},
            "local": {"command": ["python", "-c", code]},
            "study": {"metric": {"id": "accuracy", "goal": "maximize"}, "algorithm": "grid",
                      "parameters": {"x": {"type": "integer", "min": 1, "max": 2}},
                      "max_trials": 2, "parallel_trials": 2}}
    path = tmp_path / "silent.yaml"
    path.write_text(json.dumps(spec))
    assert local_run(str(path), Options()) == 0
    out = capsys.readouterr().out
    assert "trials that succeeded but reported no accuracy: 2" in out and "best trial: 1 (accuracy=0.5)" in out


def test_plan_shows_the_search_space_and_the_study_size(capsys: pytest.CaptureFixture[str]) -> None:
    from vxtrain.commands.plan import plan

    assert plan(str(EXAMPLE), Options()) == 0
    out = capsys.readouterr().out
    assert "learning_rate  discrete     {0.001, 0.01, 0.1}  log" in out
    assert "n1-standard-4: 24 node-trials (2 node(s) x 12 trials)" in out


def test_cancelling_a_study_stops_its_trials(monkeypatch: pytest.MonkeyPatch) -> None:
    from vxtrain.backends import vertex
    from vxtrain.backends.emulator import start_emulator
    from vxtrain.vocab.kinds import TUNING
    from vxtrain.submission.names import LABEL_KEY
    from tests.submission.helpers import submit_job

    monkeypatch.setenv("STUDY_SLEEP", "30")
    result = api.load_job(EXAMPLE)
    with start_emulator(workdir=EXAMPLE.parent, out=io.StringIO()) as handle:
        handle.emulator.register_local({LABEL_KEY: "cancel-me"}, result.job.local)
        with vertex.connect(endpoint=handle.address) as backend:
            view = submit_job(backend, result.hyperparameter_tuning_job, key="cancel-me", retry=None)
            wait_for(lambda: len(backend.get(TUNING, view["name"]).get("trials", [])) >= 3,
                     10, "the study to start its 3 trials", interval=0.05)
            started = time.monotonic()
            backend.cancel(TUNING, view["name"])
            ended = handle.emulator.wait(view["name"], timeout=15)
    assert ended.state.name == "JOB_STATE_CANCELLED" and time.monotonic() - started < 10
    assert len(ended.trials) == 3 and all(t.state.name == "INFEASIBLE" for t in ended.trials)


def test_a_bug_in_running_a_trial_is_not_a_failed_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug of ours reaches the command line's one error handler (issue 26): only a trial whose
    files cannot be written or read (OSError) is a failed trial."""
    def bug(*args: Any, **kwargs: Any) -> Any:
        raise ZeroDivisionError("a bug of ours")

    monkeypatch.setattr(study, "trial_job", bug)
    with pytest.raises(ZeroDivisionError):
        api.local_run(EXAMPLE, Options(environ={}), out=io.StringIO())


def test_a_trial_whose_folder_cannot_be_written_fails_as_a_trial(monkeypatch: pytest.MonkeyPatch) -> None:
    def full(*args: Any, **kwargs: Any) -> Any:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(study, "trial_job", full)
    run = api.local_run(EXAMPLE, Options(environ={}), out=io.StringIO())
    assert not run.succeeded
    assert all("could not run: [Errno 28] No space left on device" in t.message for t in run.trials)
