"""``fallback:`` (vxtrain/loading/fallback.py and pipeline._check_rungs): every rung is the
spec with one entry merged over it, checked as a whole job, its diagnostics at the
entry's own lines; plan shows each rung."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.incli import run
from tests.loading.helpers import SETTINGS
from vxtrain import api, pipeline
from vxtrain.api import Options, Result
from vxtrain.loading import load_text
from vxtrain.loading.document import NativeSpec
from vxtrain.loading.fallback import rungs
from vxtrain.loading.limits import MAX_RUNGS
from vxtrain.validation import container_rules

BASE = """\
display_name: ladder
project: p
region: us-central1
workers:
  replicas: 2
  machine_type: n1-standard-8
  image: us-docker.pkg.dev/p/r/train:1
chief:
  machine_type: n1-standard-8
  image: us-docker.pkg.dev/p/r/train:1
"""


def check(text: str) -> Result:
    doc, diags = load_text(text, "spec.yaml", environ={})
    assert doc is not None, diags
    return pipeline.check_document(doc, Options(environ={}, cost=True))


def native(text: str) -> NativeSpec:
    result = check(text)
    assert result.native is not None
    return result.native


def lines(result: Result) -> list[tuple[str, str, int | None, int | None]]:
    return [(d.code, d.path, d.line, d.column) for d in result.diagnostics if d.severity == "error"]


def test_each_rung_is_the_spec_with_its_own_entry_merged_over_it() -> None:
    spec = native(BASE + "fallback:\n  - region: us-east1\n  - workers: {replicas: 4}\n")
    first, second = rungs(spec)
    assert (first.number, first.spec.data["region"], first.spec.data["workers"]["replicas"]) == (1, "us-east1", 2)
    # Rung 2 is an overlay on the spec, not on rung 1: the spec's region.
    assert (second.spec.data["region"], second.spec.data["workers"]["replicas"]) == ("us-central1", 4)
    assert second.spec.data["workers"]["machine_type"] == "n1-standard-8"  # merged, not replaced
    assert "fallback" not in first.spec.data and "fallback" in spec.data


def test_a_null_in_an_entry_deletes_the_key_for_that_rung_only() -> None:
    spec = native(BASE + "fallback:\n  - workers: null\n")
    (rung,) = rungs(spec)
    assert "workers" not in rung.spec.data and "workers" in spec.data


def test_a_valid_ladder_validates_and_plans_each_rung() -> None:
    result = check(BASE + "fallback:\n  - region: us-east1\n  - {region: europe-west4, workers: {replicas: 1}}\n")
    assert result.valid, result.diagnostics
    assert [r.job.region for r in result.fallback] == ["us-east1", "europe-west4"]
    assert [int(r.custom_job["jobSpec"]["workerPoolSpecs"][1]["replicaCount"]) for r in result.fallback] == [2, 1]
    assert all(r.cost is not None and r.cost.region == r.job.region for r in result.fallback)


def test_a_rung_error_points_at_the_entry_own_line() -> None:
    result = check(BASE + "fallback:\n  - region: us-east1\n  - workers:\n      machine_type: n1-standard-9\n")
    (error,) = [d for d in result.diagnostics if d.severity == "error"]
    assert (error.path, error.line, error.column) == ("fallback[1].workers.machine_type", 14, 7)
    assert "n1-standard-9" in error.message
    assert not error.message.startswith("in fallback rung")  # its path already says where


def test_a_required_key_an_entry_deletes_is_located_at_the_null_not_at_1_1() -> None:
    result = check(BASE + "fallback:\n  - region: us-east1\n  - display_name: null\n")
    assert lines(result) == [("missing-key", "fallback[1].display_name", 13, 5)]


def test_a_mistake_of_the_spec_is_reported_once_not_once_per_rung() -> None:
    bad = BASE.replace("replicas: 2", "replicas: 0")
    result = check(bad + "fallback:\n  - region: us-east1\n  - region: europe-west4\n")
    errors = lines(result)
    assert [e for e in errors if e[1] == "workers.replicas"] == [("schema-minimum", "workers.replicas", 5, 3)]
    assert len(errors) == 1


def test_an_inherited_key_a_rung_makes_wrong_is_reported_naming_the_rung() -> None:
    gpu = BASE.replace("  machine_type: n1-standard-8\n  image", "  machine_type: n1-standard-8\n"
                       "  accelerator: {type: NVIDIA_TESLA_T4, count: 1}\n  image", 1)
    result = check(gpu + "fallback:\n  - workers: {machine_type: n2-standard-8}\n")
    (error,) = [d for d in result.diagnostics if d.severity == "error"]
    assert error.path.startswith("workers.accelerator") and error.line == 7
    assert error.message.startswith("in fallback rung 1 (fallback[0] merged over the spec): ")


def test_an_unknown_key_in_an_entry_is_reported_once_at_it() -> None:
    result = check(BASE + "fallback:\n  - regoin: us-east1\n")
    assert lines(result) == [("unknown-key", "fallback[0].regoin", 12, 5)]
    assert "did you mean 'region'" in result.diagnostics[0].message


def test_an_entry_that_is_not_a_mapping_is_a_schema_error() -> None:
    result = check(BASE + "fallback:\n  - us-east1\n")
    assert lines(result) == [("wrong-type", "fallback[0]", 12, 5)]
    assert result.fallback == []


def test_fallback_may_not_nest() -> None:
    result = check(BASE + "fallback:\n  - fallback: [{region: us-east1}]\n")
    assert [e[:2] for e in lines(result)] == [("unknown-key", "fallback[0].fallback")]


def labels(count: int, indent: str = "") -> str:
    return f"{indent}labels:\n" + "".join(f"{indent}  k{i}: v\n" for i in range(count))


def test_a_ladder_leaves_room_for_the_rung_label_beside_the_key() -> None:
    """Vertex takes 64 labels; submit adds the idempotency key and, in a ladder, the rung."""
    assert lines(check(BASE + labels(63))) == []
    result = check(BASE + labels(63) + "fallback:\n  - region: us-east1\n")
    assert [e[:2] for e in lines(result)] == [("too-many-labels", "labels")]
    assert "at most 62" in result.diagnostics[0].message
    assert lines(check(BASE + labels(62) + "fallback:\n  - region: us-east1\n")) == []


def test_labels_a_rung_adds_count_against_the_ladder_limit() -> None:
    entry = "fallback:\n  - region: us-east1\n" + labels(1, "    ").replace("k0", "extra")
    result = check(BASE + labels(62) + entry)
    # The labels mapping the entry merged into is the spec's: the message names the rung.
    assert [e[:2] for e in lines(result)] == [("too-many-labels", "labels")]
    assert result.diagnostics[0].message.startswith("in fallback rung 1 (fallback[0] merged over the spec): 63 labels")


# --- plan and schema ----------------------------------------------------------------------------

def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "ladder.yaml"
    path.write_text(text)
    return path


def test_plan_json_has_a_rung_per_entry(tmp_path: Path, capsys: Any) -> None:
    path = write(tmp_path, BASE + "fallback:\n  - region: us-east1\n  - scheduling: {strategy: SPOT}\n")
    code, doc, _ = run(capsys, "plan", str(path), "-o", "json")
    assert code == 0
    assert [(r["rung"], r["region"]) for r in doc["fallback"]] == [(1, "us-east1"), (2, "us-central1")]
    assert doc["fallback"][1]["custom_job"]["jobSpec"]["scheduling"]["strategy"] == "SPOT"
    assert doc["fallback"][0]["cost"]["region"] == "us-east1"
    assert "fallback" not in json.dumps(doc["custom_job"])  # rung 0's job carries no ladder


def test_plan_text_shows_every_rung(tmp_path: Path, capsys: Any) -> None:
    path = write(tmp_path, BASE + "fallback:\n  - region: us-east1\n")
    code, out, _ = run(capsys, "plan", str(path))
    assert code == 0
    assert "rung 0 (the spec): us-central1 · chief 1 x n1-standard-8, workers 2 x n1-standard-8 · $" in out
    assert "rung 1: us-east1 · " in out


def test_plan_of_a_bad_rung_is_invalid(tmp_path: Path, capsys: Any) -> None:
    path = write(tmp_path, BASE + "fallback:\n  - workers: {machine_type: nope-1}\n")
    code, doc, _ = run(capsys, "plan", str(path), "-o", "json")
    assert code == 1 and doc["custom_job"] is None and doc["fallback"][0]["custom_job"] is None
    assert doc["diagnostics"][0]["path"] == "fallback[0].workers.machine_type"


def test_the_schema_knows_fallback(capsys: Any) -> None:
    code, schema, _ = run(capsys, "schema")
    assert code == 0
    entry = schema["properties"]["fallback"]["items"]
    assert "region" in entry["properties"] and "fallback" not in entry["properties"]


# --- a property: every key an entry writes is located in the entry ------------------------------

REGIONS = ["us-central1", "us-east1", "europe-west4", "us-west1"]
ENTRY = st.fixed_dictionaries({}, optional={
    "region": st.sampled_from(REGIONS),
    "workers": st.fixed_dictionaries({}, optional={"replicas": st.integers(1, 8),
                                                   "machine_type": st.sampled_from(["n1-standard-4", "nope-2"])}),
    "labels": st.dictionaries(st.sampled_from(["team", "run"]), st.sampled_from(["a", "b"]), max_size=2),
})


@SETTINGS
@given(st.lists(ENTRY, min_size=1, max_size=3))
def test_every_key_an_entry_writes_is_located_in_that_entry(entries: list[dict[str, Any]]) -> None:
    text = BASE + "fallback: " + json.dumps(entries) + "\n"
    spec = native(text)
    for rung in rungs(spec):
        entry = entries[rung.number - 1]
        for key, value in entry.items():
            paths = [(key, sub) for sub in value] if isinstance(value, dict) else [(key,)]
            for path in paths:
                where = rung.spec.where(path)
                assert where["path"] == f"fallback[{rung.number - 1}]." + ".".join(path)
                assert where["line"] == 11  # the flow mapping on the fallback: line
        # What the entry does not write keeps the spec's own place.
        assert rung.spec.where(("chief", "machine_type"))["path"] == "chief.machine_type"
    errors = [d for d in check(text).diagnostics if d.severity == "error" and "nope-2" in d.message]
    bad = [i for i, e in enumerate(entries) if e.get("workers", {}).get("machine_type") == "nope-2"]
    assert [d.path for d in errors] == [f"fallback[{i}].workers.machine_type" for i in bad]


# --- long ladders: bounded, and each rung checked for what it changes ---------------------------

def ladder(count: int, entry: str = "region: us-east1") -> str:
    return BASE + "fallback:\n" + "".join(f"  - {{{entry}}}\n" for _ in range(count))


def test_a_ladder_past_the_bound_is_an_error_at_fallback_and_its_first_rungs_are_checked() -> None:
    """300 entries took 58 s and 1.2 GB: Vertex AI has no such list, vxtrain keeps 50."""
    assert MAX_RUNGS == 50
    assert lines(check(ladder(MAX_RUNGS))) == []
    result = check(ladder(MAX_RUNGS + 1, "workers: {replicas: 3}"))
    assert lines(result) == [("fallback-too-long", "fallback", 11, 1)]
    assert "fallback has 51 entries; at most 50 are accepted" in result.diagnostics[0].message
    assert len(result.fallback) == MAX_RUNGS and result.custom_job is None


def test_a_rung_that_writes_no_env_runs_no_env_check_again(monkeypatch: Any) -> None:
    """Every rung was checked as a whole spec: 2,000 variables were checked again on every rung
    that only moved the job to another region. The findings are the same either way."""
    calls: list[str] = []
    real = container_rules._env_name

    def counted(name: str, *args: Any) -> Any:
        calls.append(name)
        return real(name, *args)

    monkeypatch.setattr(container_rules, "_env_name", counted)
    env = BASE + "defaults:\n  env: {A: '1', DB_PASSWORD: x, 1BAD: y}\n"
    regions = "fallback:\n  - region: us-east1\n  - {region: europe-west4, workers: {replicas: 1}}\n"
    result = check(env + regions)
    assert sorted(calls) == ["1BAD", "A", "DB_PASSWORD"]  # rung 0 alone
    assert sorted((d.code, d.path) for d in result.diagnostics) == [("bad-env-name", "defaults.env.1BAD"),
                                                              ("secret-env", "defaults.env.DB_PASSWORD")]
    calls.clear()
    result = check(env + "fallback:\n  - region: us-east1\n  - workers: {env: {2BAD: z}}\n")
    assert sorted(calls) == ["1BAD", "1BAD", "2BAD", "A", "A", "DB_PASSWORD", "DB_PASSWORD"]  # rung 0 and 2
    assert ("bad-env-name", "fallback[1].workers.env.2BAD") in [(d.code, d.path) for d in result.diagnostics]


def test_a_rung_that_repeats_an_earlier_entry_is_the_same_job_its_findings_at_its_own_lines() -> None:
    entry = "workers: {machine_type: nope-2}"
    result = check(ladder(3, entry))
    first, second, third = result.fallback
    assert second.job is first.job and third.job is first.job  # checked once
    assert lines(result) == [("machine-not-offered", f"fallback[{i}].workers.machine_type", 12 + i, 16)
                             for i in range(3)]
