"""``vxtrain diff``: changes in the compiled job and the bandwidth plan, JSON and text."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from vxtrain.cli import main
from vxtrain.commands.diff import changes

ROOT = Path(__file__).resolve().parent.parent
RS = ROOT / "configs" / "examples" / "reduction-server.yaml"
PS = ROOT / "configs" / "examples" / "parameter-server.yaml"


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any]:
    code = main(["diff", *argv, "--output", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_same_spec_has_no_changes_and_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, str(RS), str(RS))
    assert code == 0
    assert doc["same"] is True and doc["custom_job"] == [] and doc["bandwidth"] == []
    assert doc["diagnostics"] == {"before": [], "after": []}


def test_more_workers_resize_the_reduction_server(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, str(RS), "--after-set", "workers.replicas=9")
    assert code == 0 and doc["same"] is False
    assert doc["custom_job"] == [
        {"path": "jobSpec.workerPoolSpecs[1].replicaCount", "op": "changed", "before": 4, "after": 9},
        {"path": "jobSpec.workerPoolSpecs[2].replicaCount", "op": "changed", "before": 16, "after": 32},
    ]
    bandwidth = {c["path"]: (c["before"], c["after"]) for c in doc["bandwidth"]}
    assert bandwidth["training_gbps"] == (500, 1000)
    assert bandwidth["reduction_server.replicas"] == (16, 32)
    assert bandwidth["pools[1].replicas"] == (4, 9)


def test_two_files_and_shared_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    after = tmp_path / "after.yaml"
    after.write_text(RS.read_text().replace("NCCL_DEBUG: INFO", "NCCL_DEBUG: WARN, FOO: bar"))
    code, doc = run_json(capsys, str(RS), str(after), "--var", "IMAGE_TAG=v2")
    assert code == 0
    paths = [(c["path"], c["op"]) for c in doc["custom_job"]]
    assert paths == [
        ("jobSpec.workerPoolSpecs[0].containerSpec.env[name=NCCL_DEBUG].value", "changed"),
        ("jobSpec.workerPoolSpecs[0].containerSpec.env[name=FOO]", "added"),
        ("jobSpec.workerPoolSpecs[1].containerSpec.env[name=NCCL_DEBUG].value", "changed"),
        ("jobSpec.workerPoolSpecs[1].containerSpec.env[name=FOO]", "added"),
    ]  # the image tag comes from the shared --var: the same on both sides
    assert doc["bandwidth"] == []


def test_pools_added_and_removed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = yaml.safe_load(PS.read_text())
    del data["evaluators"]
    (tmp_path / "no-eval.yaml").write_text(yaml.safe_dump(data))
    code, doc = run_json(capsys, str(PS), str(tmp_path / "no-eval.yaml"))
    assert code == 0
    (removed,) = doc["custom_job"]
    assert removed["path"] == "jobSpec.workerPoolSpecs[3]" and removed["op"] == "removed"
    assert "after" not in removed and removed["before"]["machineSpec"]["machineType"] == "n1-standard-8"
    assert [(c["path"], c["op"]) for c in doc["bandwidth"]] == [("pools[3]", "removed")]


def test_invalid_side_exits_1_with_its_diagnostics(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = run_json(capsys, str(RS), "--after-set", "chief.replicas=2")
    assert code == 1
    assert doc["same"] is None and doc["custom_job"] is None and doc["bandwidth"] is None
    assert doc["diagnostics"]["before"] == []
    assert any(d["code"] == "chief-replicas" for d in doc["diagnostics"]["after"])


def test_text_is_minus_plus_lines(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(RS), "--after-set", "workers.replicas=9"]) == 0
    out = capsys.readouterr().out
    assert "- jobSpec.workerPoolSpecs[1].replicaCount: 4\n+ jobSpec.workerPoolSpecs[1].replicaCount: 9" in out
    assert "CustomJob: 2 changes" in out and "\x1b[" not in out  # piped: no colour
    assert main(["diff", str(RS), str(RS)]) == 0
    assert "CustomJob: no changes" in capsys.readouterr().out


def test_text_of_invalid_spec_prints_diagnostics(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(RS), "--after-set", "workers.machine_type=n1-standrad-8"]) == 1
    out, err = capsys.readouterr()
    assert "did you mean" in err and "CustomJob" not in out


def test_study_changes_are_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--shape", "study", "--output-file", str(tmp_path / "s.yaml")]) == 0
    capsys.readouterr()
    code, doc = run_json(capsys, str(tmp_path / "s.yaml"), "--after-set", "study.max_trials=40")
    assert code == 0 and doc["custom_job"] == []
    assert doc["hyperparameter_tuning_job"] == [
        {"path": "maxTrialCount", "op": "changed", "before": 20, "after": 40}]


def test_changes_lists_and_types() -> None:
    assert changes({"args": ["a", "b"]}, {"args": ["a", "c"]}) == [
        {"path": "args", "op": "changed", "before": ["a", "b"], "after": ["a", "c"]}]
    assert changes({"x": 1}, {"x": True}) == [{"path": "x", "op": "changed", "before": 1, "after": True}]
    assert changes({"args": [False, 1]}, {"args": [0, 1.0]}) == [  # equal in Python, not in JSON
        {"path": "args", "op": "changed", "before": [False, 1], "after": [0, 1.0]}]
    assert changes([{"a": 1}], [{"a": 1}, {"a": 2}]) == [{"path": "[1]", "op": "added", "after": {"a": 2}}]


def _nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=3), _nest, max_leaves=12)


@pytest.mark.slow
@given(_json, _json)
@example([False, False, False], [False, False, 0])  # found by hypothesis: False == 0 inside a list
def test_no_changes_exactly_when_equal(a: Any, b: Any) -> None:
    assert (changes(a, b) == []) == (json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True))


def test_text_says_what_the_after_side_is(capsys: pytest.CaptureFixture[str]) -> None:
    """Without AFTER the +++ line says what BEFORE was compared with: itself (and so no
    changes), or itself under the after-only flags; with AFTER, that file."""
    assert main(["diff", str(RS)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:3] == [
        f"--- {RS}", f"+++ {RS} again (no AFTER, --after-overlay or --after-set: the spec is compared with itself)",
        "CustomJob: no changes"]
    assert main(["diff", str(RS), "--after-set", "workers.replicas=9", "--after-set", "region=europe-west4"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == \
        f"+++ {RS} with --after-set workers.replicas=9 --after-set region=europe-west4"
    assert main(["diff", str(RS), str(PS)]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"+++ {PS}"
