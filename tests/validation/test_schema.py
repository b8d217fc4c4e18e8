"""The native JSON Schema: messages people can act on, and the fast path agrees
with jsonschema (the validator of record)."""
from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from vxtrain.validation import schema
from vxtrain.loading.document import Document, NativeSpec, Position

GOOD: dict[str, Any] = {
    "display_name": "bert",
    "defaults": {"image": "img", "command": ["python", "-m", "t"], "env": {"A": "1"}},
    "chief": {"machine_type": "n1-highmem-96", "accelerator": {"type": "NVIDIA_TESLA_V100", "count": 8}},
    "workers": {"replicas": 4, "machine_type": "n1-highmem-96"},
    "reduction_server": {"replicas": "auto"},
    "scheduling": {"timeout": "2d", "strategy": "SPOT"},
}


def _native(data: dict[str, Any], positions: dict[Any, Position] | None = None) -> NativeSpec:
    return NativeSpec(data, "native", Document(data, "job.yaml", positions or {}))


def _check(data: dict[str, Any]) -> list[Any]:
    return schema.check(_native(data))


def test_schema_is_draft_2020_12_and_self_valid() -> None:
    Draft202012Validator.check_schema(schema.schema())
    assert schema.schema()["$schema"].endswith("2020-12/schema")


def test_good_spec_has_no_diagnostics() -> None:
    assert _check(GOOD) == []


@pytest.mark.parametrize(("data", "code", "path", "fragment"), [
    ({**GOOD, "worker": {}}, "unknown-key", "worker", "did you mean 'workers'"),
    ({**GOOD, "chief": {**GOOD["chief"], "machine": "x"}}, "unknown-key", "chief.machine", "machine_type"),
    ({**GOOD, "workers": {"replicas": "four"}}, "wrong-type", "workers.replicas", "expected an integer, got \"four\""),
    ({**GOOD, "scheduling": {"strategy": "SPOTT"}}, "bad-value", "scheduling.strategy", "did you mean 'SPOT'"),
    ({**GOOD, "scheduling": {"strategy": "spot"}}, "bad-value", "scheduling.strategy", "did you mean 'SPOT'"),
    ({**GOOD, "study": {"metric": {"id": "a", "goal": "MAXIMIZE"}, "parameters": {"x": {"type": "integer", "min": 1,
      "max": 2}}, "max_trials": 1}}, "bad-value", "study.metric.goal", "did you mean 'maximize'"),
    ({**GOOD, "scheduling": {"timeout": "2 days"}}, "wrong-type", "scheduling.timeout", "a duration such as 90s"),
    ({**GOOD, "reduction_server": {"replicas": "many"}}, "wrong-type", "reduction_server.replicas", "auto"),
    ({k: v for k, v in GOOD.items() if k != "display_name"}, "missing-key", "", "'display_name'"),
    ({**GOOD, "defaults": {"command": {"a": 1}}}, "wrong-type", "defaults.command", "a string or a list of strings"),
    ({**GOOD, "workers": {"replicas": 0}}, "schema-minimum", "workers.replicas", "minimum"),
])
def test_errors_name_path_and_fix(data: dict[str, Any], code: str, path: str, fragment: str) -> None:
    diags = _check(data)
    match = [d for d in diags if d.code == code and d.path == path]
    assert match, diags
    assert fragment in match[0].message


def test_every_mistake_reported_at_once() -> None:
    data = {**GOOD, "worker": {}, "evaluator": {}, "scheduling": {"strategy": "X", "timeout": []}}
    codes = sorted(d.path for d in _check(data))
    assert codes == ["evaluator", "scheduling.strategy", "scheduling.timeout", "worker"]


def test_diagnostics_carry_the_key_position() -> None:
    data = {**GOOD, "workers": {"replicas": "x"}}
    native = _native(data, {("workers",): Position("job.yaml", 9, 1),
                            ("workers", "replicas"): Position("job.yaml", 10, 3)})
    (diag,) = schema.check(native)
    assert (diag.file, diag.line, diag.column) == ("job.yaml", 10, 3)


_scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 300), st.text(max_size=6),
                     st.sampled_from(["auto", "2d", "SPOT", "n1-standard-4", "NVIDIA_L4"]))
_keys = st.sampled_from(["display_name", "chief", "workers", "replicas", "machine_type", "accelerator",
                         "type", "count", "image", "command", "args", "env", "scheduling", "timeout",
                         "strategy", "reduction_server", "labels", "study", "metric", "goal", "x"])
def _nest(kids: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.lists(kids, max_size=3), st.dictionaries(_keys, kids, max_size=4))


_values = st.recursive(_scalars, _nest, max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_keys, _values, max_size=6))
def test_fast_path_agrees_with_jsonschema(data: dict[str, Any]) -> None:
    reference = Draft202012Validator(schema.schema()).is_valid(data)
    assert schema.is_valid(data) == reference
    assert (schema.check(_native(data)) == []) == reference


def test_shipped_schema_matches_its_generator() -> None:
    import importlib.util
    from pathlib import Path

    gen = Path(__file__).resolve().parents[2] / "scripts" / "gen_schema.py"
    spec = importlib.util.spec_from_file_location("gen_schema", gen)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.build() == schema.schema(), "run: python scripts/gen_schema.py"


# --- messages name the bad value and what is accepted --------------------------------------

@pytest.mark.parametrize(("data", "code", "path", "fragments"), [
    ({**GOOD, "display_name": "a" * 300}, "schema-maxlength", "display_name", ["300 characters", "at most 128"]),
    ({**GOOD, "display_name": ""}, "schema-minlength", "display_name", ['""', "at least 1 character"]),
    ({**GOOD, "workers": {"replicas": 0}}, "schema-minimum", "workers.replicas", ["0 is below the minimum of 1"]),
    ({**GOOD, "chief": {**GOOD["chief"], "disk": {"size_gb": 99999}}}, "schema-maximum", "chief.disk.size_gb",
     ["99999", "at most 64000"]),
    ({**GOOD, "study": {"parameters": {}}}, "schema-minproperties", "study.parameters", ["{}", "at least 1 key"]),
])
def test_limit_messages_name_the_value_and_the_limit(data: dict[str, Any], code: str, path: str,
                                                     fragments: list[str]) -> None:
    (diag,) = [d for d in _check(data) if d.code == code]
    assert diag.path == path
    assert all(f in diag.message for f in fragments), diag.message
    assert len(diag.message) < 200  # jsonschema's own message repeated the whole value


def test_null_where_an_enum_is_expected_is_reported_once() -> None:
    diags = _check({**GOOD, "scheduling": {"strategy": None}})
    assert [(d.code, d.path) for d in diags] == [("bad-value", "scheduling.strategy")]
    assert "STANDARD, SPOT, FLEX_START" in diags[0].message


def test_missing_keys_are_named_as_the_user_writes_them() -> None:
    data = {**GOOD, "chief": {"machine_type": "n1-standard-8", "image": "i", "accelerator": {"count": 2}}}
    native = NativeSpec(data, "gcloud", Document(data, "job.yaml", {}))
    (diag,) = schema.check(native)
    assert diag.code == "missing-key" and "'acceleratorType'" in diag.message
    (diag,) = schema.check(_native(data))
    assert "'type'" in diag.message
