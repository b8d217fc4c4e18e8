"""``extra:`` checked field by field and value by value (vxtrain/validation/extra.py).

The property test holds the check to the real thing: a value it accepts parses
with ``json_format.ParseDict`` into ``aiplatform_v1.CustomJob`` (what ``submit``
does), and one it refuses does not, except where the check is deliberately
stricter (listed in the module's docstring and recognised by ``_stricter``).
"""
from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pytest
from google.cloud.aiplatform_v1.types import CustomJob
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from vxtrain import api, model, protos
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, NativeSpec, Position
from vxtrain.validation import extra as extra_rules
from vxtrain.validation import rules

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
BASE: dict[str, Any] = {"display_name": "t", "chief": {"machine_type": "n1-standard-8", "image": IMAGE}}


def native_of(data: dict[str, Any], positions: dict[Any, Position] | None = None) -> NativeSpec:
    return NativeSpec(data, "native", Document(data, "j.yaml", positions or {}))


def check(extra: Any, **spec: Any) -> list[Diagnostic]:
    data = {**BASE, **spec, "extra": extra}
    return extra_rules.check(model.build(data), native_of(data))


def errors(extra: Any, **spec: Any) -> list[tuple[str, str]]:
    return [(d.code, d.path) for d in check(extra, **spec) if d.severity == "error"]


def parses(extra: Any) -> bool:
    try:
        json_format.ParseDict(copy.deepcopy(extra), CustomJob.pb(CustomJob()))
    except Exception:  # noqa: BLE001 - anything ParseDict raises means "refused"
        return False
    return True


# --- field names (what check_extra checked before) ---------------------------------------

@pytest.mark.parametrize(("extra", "path", "hint"), [
    ({"jobSpc": {}}, "extra.jobSpc", "did you mean `jobSpec`?"),
    ({"job_spec": {}}, "extra.job_spec", "did you mean `jobSpec`?"),
    ({"jobSpec": {"enableWebAcess": True}}, "extra.jobSpec.enableWebAcess", "`enableWebAccess`"),
    ({"jobSpec": {"workerPoolSpecs": [{}, {"diskSpec": {"bootDiskSzeGb": 5}}]}},
     "extra.jobSpec.workerPoolSpecs[1].diskSpec.bootDiskSzeGb", "`bootDiskSizeGb`"),
    ({"jobSpec": {"scheduling": {"zzz": 1}}}, "extra.jobSpec.scheduling.zzz", "fields: disableRetries"),
])
def test_unknown_fields(extra: dict[str, Any], path: str, hint: str) -> None:
    positions = {("extra",): Position("j.yaml", 30, 1), ("extra", "jobSpec"): Position("j.yaml", 31, 3)}
    data = {**BASE, "extra": extra}
    [diag] = extra_rules.check(model.build(data), native_of(data, positions))
    assert (diag.severity, diag.code, diag.path) == ("error", "extra-unknown-field", path)
    assert hint in diag.message and "google.cloud.aiplatform.v1." in diag.message
    assert diag.file == "j.yaml" and diag.line is not None


def test_wrong_shapes() -> None:
    assert errors({"jobSpec": {"workerPoolSpecs": {"a": 1}, "scheduling": "soon"}}) == [
        ("extra-type", "extra.jobSpec.workerPoolSpecs"), ("extra-type", "extra.jobSpec.scheduling")]


def test_accepts_real_fields() -> None:
    extra = {"jobSpec": {"reservedIpRanges": ["r"], "persistentResourceId": "pr",
                         "workerPoolSpecs": [{"machineSpec": {"reservationAffinity": {
                             "reservationAffinityType": "ANY_RESERVATION"}}}]},
             "labels": {"anything": "goes"}, "error": {"code": 3}}
    assert check(extra) == []
    assert parses(extra)
    assert check({}) == []


# --- values --------------------------------------------------------------------------------

JS = "extra.jobSpec"
WP = "extra.jobSpec.workerPoolSpecs[0]"


@pytest.mark.parametrize(("extra", "code", "path", "words"), [
    ({"jobSpec": {"enableWebAccess": "yes"}}, "extra-type", f"{JS}.enableWebAccess", "true or false"),
    ({"jobSpec": {"network": 5}}, "extra-type", f"{JS}.network", "a string"),
    ({"jobSpec": {"scheduling": {"timeout": "7d"}}}, "extra-type", f"{JS}.scheduling.timeout", '"604800s"'),
    ({"jobSpec": {"scheduling": {"timeout": 3600}}}, "extra-type", f"{JS}.scheduling.timeout", "Duration"),
    ({"jobSpec": {"scheduling": {"timeout": "-5s"}}}, "extra-type", f"{JS}.scheduling.timeout", "Duration"),
    ({"jobSpec": {"scheduling": {"strategy": "SPOTT"}}}, "extra-enum", f"{JS}.scheduling.strategy",
     'did you mean "SPOT"? accepted: ON_DEMAND, LOW_COST, STANDARD, SPOT, FLEX_START'),
    ({"jobSpec": {"scheduling": {"strategy": 3}}}, "extra-enum", f"{JS}.scheduling.strategy", "by name"),
    ({"jobSpec": {"workerPoolSpecs": [{"replicaCount": 1.0}]}}, "extra-type", f"{WP}.replicaCount", "int64"),
    ({"jobSpec": {"workerPoolSpecs": [{"replicaCount": "+2"}]}}, "extra-type", f"{WP}.replicaCount",
     "decimal digits"),
    ({"jobSpec": {"workerPoolSpecs": [{"replicaCount": True}]}}, "extra-type", f"{WP}.replicaCount", "int64"),
    ({"jobSpec": {"workerPoolSpecs": [{"machineSpec": {"acceleratorCount": 2**31}}]}}, "extra-type",
     f"{WP}.machineSpec.acceleratorCount", "from -2147483648 to 2147483647"),
    ({"jobSpec": {"workerPoolSpecs": [{"containerSpec": {"args": "--x"}}]}}, "extra-type",
     f"{WP}.containerSpec.args", "a list"),
    ({"jobSpec": {"workerPoolSpecs": [{"containerSpec": {"args": ["--x", 3]}}]}}, "extra-type",
     f"{WP}.containerSpec.args[1]", "a string"),
    ({"jobSpec": {"workerPoolSpecs": [{"containerSpec": {"env": [None]}}]}}, "extra-type",
     f"{WP}.containerSpec.env[0]", "null"),
    ({"labels": {"team": 1}}, "extra-type", "extra.labels.team", "a string"),
    ({"labels": ["a"]}, "extra-type", "extra.labels", "a mapping"),
    ({"jobSpec": {"network": None}}, "extra-null", f"{JS}.network", "leave the key out"),
    ({"jobSpec": ""}, "extra-type", JS, "a mapping"),
    ({"createTime": "2025-01-31 12:00:00"}, "extra-type", "extra.createTime", "RFC 3339"),
    ({"createTime": "2025-02-30T12:00:00Z"}, "extra-type", "extra.createTime", "RFC 3339"),
    ({"error": {"details": [{"@type": "x"}]}}, "extra-type", "extra.error.details[0]", "Any"),
    ({"jobSpec": {"workerPoolSpecs": [{}, {"containerSpec": {"imageUri": "i"}, "pythonPackageSpec": {}}]}},
     "extra-oneof", "extra.jobSpec.workerPoolSpecs[1].pythonPackageSpec", "alternatives"),
])
def test_values(extra: dict[str, Any], code: str, path: str, words: str) -> None:
    [diag] = [d for d in check(extra) if d.severity == "error"]
    assert (diag.code, diag.path) == (code, path)
    assert words in diag.message
    assert not parses(extra) or _stricter(extra, diag)


@pytest.mark.parametrize("extra", [
    {"jobSpec": {"enableWebAccess": True, "scheduling": {"timeout": "3600s", "maxWaitDuration": "1.5s",
                                                         "strategy": "FLEX_START", "disableRetries": False}}},
    {"jobSpec": {"workerPoolSpecs": [{"replicaCount": "2", "machineSpec": {"acceleratorCount": 4}},
                                     {"diskSpec": {"bootDiskSizeGb": 200}}]}},
    {"jobSpec": {"workerPoolSpecs": [{}, {}, {"containerSpec": {"imageUri": "i", "env": [{"name": "A", "value": ""}]}}]}},
    {"createTime": "2025-01-31T12:00:00.123456789+05:30", "state": "JOB_STATE_UNSPECIFIED"},
])
def test_accepted_values_parse(extra: dict[str, Any]) -> None:
    assert check(extra) == []
    assert parses(extra)


def test_extra_code_against_the_pool_code() -> None:
    """extra giving pool 0 a pythonPackageSpec while the chief runs an image: both would reach the API."""
    extra = {"jobSpec": {"workerPoolSpecs": [{"pythonPackageSpec": {"pythonModule": "m"}}]}}
    assert errors(extra) == [("extra-oneof", "extra.jobSpec.workerPoolSpecs[0].pythonPackageSpec")]
    assert errors({"jobSpec": {"workerPoolSpecs": [{"containerSpec": {"args": ["--x"]}}]}}) == []
    # a gap (no pool 1) is the extra's to fill
    assert errors({"jobSpec": {"workerPoolSpecs": [{}, {"pythonPackageSpec": {"pythonModule": "m"}}]}}) == []


def test_not_installed_is_a_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protos, "installed", lambda: False)
    [diag] = check({"jobSpec": {"enableWebAccess": "yes"}})
    assert (diag.severity, diag.code) == ("warning", "extra-unchecked")


# --- in the same pass as every other rule ----------------------------------------------------

def test_registered_with_the_other_rules() -> None:
    assert extra_rules.check in rules.RULES


def test_reported_with_other_errors(tmp_path: Path) -> None:
    """A machine-type typo and a wrongly typed ``extra`` value in one spec: both errors are
    reported, each at its own line and column (the typo does not hide the extra error)."""
    path = tmp_path / "job.yaml"
    path.write_text("display_name: x\nchief:\n  machine_type: n1-standrd-8\n  image: i\n"
                    "extra:\n  jobSpec:\n    enableWebAccess: \"yes\"\n")
    [result] = api.validate([path])
    found = {(d.code, d.line, d.column) for d in result.diagnostics if d.severity == "error"}
    assert found == {("unknown-machine-type", 3, 3), ("extra-type", 7, 5)}


def test_plan_refuses_a_bad_extra_value(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text("display_name: x\nchief:\n  machine_type: n1-standard-8\n  image: i\n"
                    "extra:\n  jobSpec:\n    enableWebAccess: \"yes\"\n")
    result = api.check_file(path)
    assert not result.valid and result.custom_job is None


# --- property: accepted ⇒ ParseDict parses; refused ⇒ it does not (or documented stricter) ---

_SCALARS = [None, True, False, 0, 1, -1, 7, 2**31, 2**32, 2**63, 2**64, -(2**63) - 1, 1.0, 1.5, -2.5,
            float("inf"), float("nan"), "", "x", "5", "-5", "+5", " 5", "5.0", "1e3", "5_0", "3600s", "1.5s",
            "-5s", "+5s", "5.s", "5.1234567891s", "7d", "NaN", "Infinity", "2025-01-31T12:00:00Z",
            "2025-02-30T00:00:00Z", "2025-01-31T12:00:00+01:00", "2025-01-31T12:00:00.5-03:00",
            "0001-01-01T00:00:00+01:00", "2025-01-31 12:00:00Z", "ANY_RESERVATION", "SPOT", "spot",
            "NVIDIA_TESLA_T4", "JOB_STATE_RUNNING"]
_SHAPES = [[], {}, ["a"], [1], [None], {"a": "b"}, {"a": 1}, {"a": None}, {1: "a"}]


def _values(field: protos.ProtoField, depth: int) -> st.SearchStrategy[Any]:
    anything = st.sampled_from(_SCALARS + _SHAPES)
    single = _single(field, depth)
    if field.kind == "repeated":
        return st.one_of(st.lists(single, max_size=3), anything)
    if field.kind == "map":
        return st.one_of(st.dictionaries(st.sampled_from(["a", "b-c", "x_1"]), single, max_size=2), anything)
    return st.one_of(single, single, anything)


def _single(field: protos.ProtoField, depth: int) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = [st.sampled_from(_SCALARS)]
    if field.enum is not None:
        names = list(protos.enum_values(*field.enum) or {})
        options.append(st.sampled_from(names + [n.lower() for n in names[:2]] + [names[-1] + "X"]))
    if field.message is not None and depth < 4:
        options += [_message(field.message, depth + 1)] * 3
    return st.one_of(options)


def _message(ref: protos.MessageRef, depth: int = 0) -> st.SearchStrategy[dict[str, Any]]:
    fields = protos.message_fields(*ref) or {}
    names = sorted(fields)
    keys = names + [fields[n].name for n in names if fields[n].name != n][:2] + ["zzz", names[0] + "s"]

    def value_for(key: str) -> st.SearchStrategy[Any]:
        field = fields.get(key) or next((f for f in fields.values() if f.name == key), None)
        return _values(field, depth) if field is not None else st.sampled_from(_SCALARS)

    return st.lists(st.sampled_from(keys), max_size=4, unique=True).flatmap(
        lambda chosen: st.fixed_dictionaries({k: value_for(k) for k in chosen}))


def _value_at(extra: Any, path: str) -> Any:
    """The value at a diagnostic's path (``extra.jobSpec.workerPoolSpecs[0].x``)."""
    value = {"extra": extra}
    for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path):
        value = value[int(index)] if index else (value.get(name) if name in value else value.get(int(name)))
    return value


def _int_like(value: Any) -> bool:
    try:
        int(value)
        return not isinstance(value, float) or value.is_integer()
    except (TypeError, ValueError, OverflowError):
        try:
            return float(value).is_integer()
        except (TypeError, ValueError, OverflowError):
            return False


def _stricter(extra: Any, diag: Diagnostic) -> bool:
    """A refusal the module docstring lists as deliberately stricter than ParseDict."""
    value = _value_at(extra, diag.path)
    key = diag.path.rpartition(".")[2]
    if diag.code == "extra-null":
        return value is None
    if diag.code == "extra-unknown-field":  # a snake_case proto name, refused with its camelCase one
        return "_" in key and f"did you mean `{protos.snake_to_camel(key)}`" in diag.message
    if diag.code == "extra-enum":  # names only: ParseDict also takes 3, "3", 1.5 and true as numbers
        return not isinstance(value, str) or _int_like(value.strip())
    if "an integer" in diag.message:  # 2.0, "+5", "5_0", "1e3": decimal digits only
        return _int_like(value)
    if "a Duration" in diag.message:  # "-5s", "+5s", "5.s": canonical non-negative form only
        return isinstance(value, str) and value.endswith("s")
    if "must be a mapping" in diag.message:  # ParseDict reads "" and [] as an empty message
        return value in ("", [])
    return "google.protobuf.Any" in diag.message


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_message(extra_rules.CUSTOM_JOB))
def test_accepted_iff_parsedict_parses(extra: dict[str, Any]) -> None:
    found = [d for d in check(extra) if d.severity == "error"]
    if not found:
        assert parses(extra), extra
    elif parses(extra):
        assert all(_stricter(extra, d) for d in found), [(d.path, d.message) for d in found]


def test_every_reachable_message_is_known() -> None:
    """Drift guard: every message CustomJob reaches in the installed protos is one the check reads
    (aiplatform_v1 messages through vxtrain.protos, others by their JSON form)."""
    seen: set[Any] = set()
    outside: set[str] = set()

    def walk(ref: protos.MessageRef) -> None:
        if ref in seen:
            return
        seen.add(ref)
        fields = protos.message_fields(*ref)
        assert fields is not None, ref
        for field in fields.values():
            if field.message is not None:
                walk(field.message)
            elif field.type == "MESSAGE":
                outside.add((field.ref or "").rpartition(".")[2])

    walk(extra_rules.CUSTOM_JOB)
    assert outside <= {"Duration", "Timestamp", "Status"}, outside
    real = {f.full_name for f in CustomJob.pb().DESCRIPTOR.fields}
    assert {f"google.cloud.aiplatform.v1.CustomJob.{f.name}" for f in
            (protos.message_fields(*extra_rules.CUSTOM_JOB) or {}).values()} == real

