"""``recovery:`` and ``notify:``: the schema's bounds, the cross-key rules, the model and
what ``plan`` shows; one table row per rule and variant, exact codes, severities and paths."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from vxtrain import api, model
from vxtrain.commands.plan import plan_json
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.render.recovery import plan_line
from vxtrain.validation import rules, schema
from tests.validation.specs import E, W, changed

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
BASE: dict[str, Any] = {"display_name": "t", "region": "us-central1", "base_output_dir": "gs://b/run",
                        "chief": {"machine_type": "n1-standard-4", "image": IMAGE},
                        "scheduling": {"strategy": "SPOT"}, "recovery": {"max_recoveries": 3}}


def spec(**changes: Any) -> dict[str, Any]:
    return changed(BASE, **changes)


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every diagnostic of the schema and the rules, as (severity, code, path)."""
    native = NativeSpec(data, "native", Document(data, "t.yaml", {}))
    out: list[Diagnostic] = [*schema.check(native), *rules.check(model.build(data), native)]
    return sorted((d.severity, d.code, d.path) for d in out)


@pytest.mark.parametrize(("data", "expected"), [
    (BASE, []),
    (spec(recovery={"spot_to_standard_after": 2, "on_exit_codes": [33, 137], "strategy": "same"}), []),
    (spec(scheduling={"strategy": "STANDARD"}, recovery={"spot_to_standard_after": 2}),
     [W("spot-to-standard-not-spot", "recovery.spot_to_standard_after")]),
    (spec(scheduling=None, recovery={"spot_to_standard_after": 1}),
     [W("spot-to-standard-not-spot", "recovery.spot_to_standard_after")]),
    (spec(recovery={"spot_to_standard_after": 4}), [W("spot-to-standard-unreached", "recovery.spot_to_standard_after")]),
    (spec(recovery={"strategy": "next"}), [W("recovery-next-without-fallback", "recovery.strategy")]),
    (spec(recovery={"strategy": "next"}, fallback=[{"region": "us-east1"}]), []),
    (spec(base_output_dir=None), [W("recovery-without-output-dir", "recovery")]),
    (spec(notify=["https://hooks.slack.com/services/T/B/x", "http://127.0.0.1:8080/hook"]), []),
    (spec(notify=["https://:443/hook"]), [E("notify-url", "notify[0]")]),
    (spec(notify=["ftp://example.com/x"]), [E("wrong-type", "notify[0]")]),
    (spec(notify=[]), [E("schema-minitems", "notify")]),
    (spec(recovery={"max_recoveries": 0}), [E("schema-minimum", "recovery.max_recoveries")]),
    (spec(recovery={"max_recoveries": 101}), [E("schema-maximum", "recovery.max_recoveries")]),
    (spec(recovery={"strategy": "later"}), [E("bad-value", "recovery.strategy")]),
    (spec(recovery={"on_exit_codes": [0]}), [E("schema-minimum", "recovery.on_exit_codes[0]")]),
    (spec(labels={"vxtrain_attempt": "1"}), [E("reserved-label", "labels.vxtrain_attempt")]),
])
def test_recovery_and_notify(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


def test_max_recoveries_is_required() -> None:
    codes = {code for _, code, path in found(spec(recovery=None) | {"recovery": {"strategy": "same"}})
             if path.startswith("recovery")}
    assert codes and all(c.startswith(("schema", "missing")) for c in codes), codes


def test_a_fallback_entry_cannot_carry_recovery(tmp_path: Path) -> None:
    """recovery: is the whole submit's, not one rung's."""
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(spec(fallback=[{"region": "us-east1", "recovery": {"max_recoveries": 1}}])))
    result = api.check_file(path)
    assert [d.path for d in result.diagnostics if d.severity == "error"] == ["fallback[0].recovery"]


def test_plan_shows_the_block(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(json.dumps(spec(recovery={"on_exit_codes": [33], "spot_to_standard_after": 2})))
    result = api.plan(path)
    assert plan_json(result)["recovery"] == {"max_recoveries": 3, "on_exit_codes": [33], "strategy": "same",
                                             "spot_to_standard_after": 2}
    assert result.job is not None and result.job.recovery is not None
    line = plan_line(result.job.recovery)
    assert "up to 3 new job(s)" in line and "exiting 33" in line and "STANDARD VMs after 2" in line
    assert line.endswith("the cost above is per job, and up to 4 jobs may run in turn")
    path.write_text(json.dumps(spec(recovery=None)))
    assert "recovery" not in plan_json(api.plan(path))


_blocks = st.fixed_dictionaries({}, optional={
    "max_recoveries": st.one_of(st.integers(-2, 102), st.floats(allow_nan=False), st.text(max_size=2)),
    "on_exit_codes": st.one_of(st.lists(st.one_of(st.integers(-1, 300), st.booleans()), max_size=3),
                               st.integers()),
    "strategy": st.sampled_from(["same", "next", "SAME", ""]),
    "spot_to_standard_after": st.one_of(st.none(), st.integers(-1, 5)),
    "other": st.integers(),
})


@given(_blocks, st.one_of(st.none(), st.lists(st.text(max_size=12), max_size=2)))
def test_the_schema_fast_path_and_the_model_take_any_block(block: dict[str, Any], notify: list[str] | None) -> None:
    data = spec(recovery=None) | {"recovery": block} | ({"notify": notify} if notify is not None else {})
    assert schema.is_valid(data) == Draft202012Validator(schema.schema()).is_valid(data)
    built = model.build(data).recovery
    if built is None:  # max_recoveries missing or not an integer: the schema's error, and no policy
        assert not schema.is_valid(data)
        return
    assert all(type(c) is int for c in built.on_exit_codes)  # noqa: E721 - bool is not an exit code
    if schema.is_valid(data):  # a valid block reads back as written
        assert built.max_recoveries == block["max_recoveries"]
        assert built.strategy == block.get("strategy", "same")
        assert built.on_exit_codes == block.get("on_exit_codes", [])
