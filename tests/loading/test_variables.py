"""${NAME} / ${NAME:-default} substitution (vxtrain/loading/variables.py)."""
from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.loading.helpers import SETTINGS, errors, ok
from vxtrain.loading import load_text


@pytest.mark.parametrize(("value", "variables", "environ", "expected"), [
    ("${A}", {"A": "x"}, {}, "x"),
    ("${A}", {}, {"A": "env"}, "env"),
    ("${A}", {"A": "var"}, {"A": "env"}, "var"),
    ("pre-${A}-post", {"A": "x"}, {}, "pre-x-post"),
    ("${A}${B}", {"A": "1", "B": "2"}, {}, "12"),
    ("${A:-dflt}", {}, {}, "dflt"),
    ("${A:-dflt}", {"A": ""}, {}, "dflt"),
    ("${A:-dflt}", {"A": "set"}, {}, "set"),
    ("${A:-}", {}, {}, None),
    ("'${A:-}'", {}, {}, ""),
    ("${A:-a b:c}", {}, {}, "a b:c"),
    ("$${A}", {}, {}, "${A}"),
    ("'cost: $5 and $x'", {}, {}, "cost: $5 and $x"),
    ("${N}", {"N": "4"}, {}, 4),
    ("${N}", {"N": "true"}, {}, True),
    ("${N}", {"N": "1.5"}, {}, 1.5),
    ("${N}", {"N": "null"}, {}, None),
    ("'${N}'", {"N": "4"}, {}, "4"),
    ('"${N}"', {"N": "4"}, {}, "4"),
    ("${N}x", {"N": "4"}, {}, "4x"),
    ("!!str ${N}", {"N": "4"}, {}, "4"),
    ("${N}", {"N": "[1, 2]"}, {}, "[1, 2]"),
    ("${N}", {"N": "${M}"}, {}, "${M}"),
    ("us-docker.pkg.dev/p/bert:${TAG:-latest}", {}, {}, "us-docker.pkg.dev/p/bert:latest"),
])
def test_substitution(value: str, variables: dict[str, str], environ: dict[str, str],
                      expected: Any) -> None:
    doc = ok(f"v: {value}\n", variables=variables, environ=environ)
    assert doc.data["v"] == expected
    assert type(doc.data["v"]) is type(expected)


def test_substitution_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VXTRAIN_TEST_TAG", "v9")
    doc, diags = load_text("image: img:${VXTRAIN_TEST_TAG}\n", "s.yaml")
    assert doc is not None and doc.data["image"] == "img:v9"


def test_keys_and_nested_values_are_handled() -> None:
    doc = ok("${K}: 1\nl:\n  - ${A}\n  - {b: '${A}'}\n", variables={"A": "x", "K": "no"})
    assert doc.data == {"${K}": 1, "l": ["x", {"b": "x"}]}


def test_every_undefined_variable_is_reported_at_its_scalar() -> None:
    found = errors("a: 1\nimage: ${REG}/img:${TAG}\nlist:\n  - ${OTHER}\n")
    assert [(d.code, d.line, d.column, d.path) for d in found] == [
        ("undefined-variable", 2, 8, "image"), ("undefined-variable", 2, 8, "image"),
        ("undefined-variable", 4, 5, "list[0]")]
    assert "${REG}" in found[0].message and "--var REG=VALUE" in found[0].message
    assert "${TAG}" in found[1].message and "--var TAG=VALUE" in found[1].message
    assert "--var OTHER=VALUE" in found[2].message


def test_a_name_is_reported_once_per_scalar() -> None:
    found = errors("a: ${X}-${X}-${Y}-${X}\nb: ${X}\n")
    assert [(d.line, d.message.split(":")[0]) for d in found] == [
        (1, "undefined variable ${X}"), (1, "undefined variable ${Y}"), (2, "undefined variable ${X}")]


@pytest.mark.parametrize("value", ["${", "x${", "${1X}", "${}", "${A-b}", "${A:b}", "${A B}",
                                   "'${A:-${B}}'", "${A"])
def test_malformed_references(value: str) -> None:
    found = errors(f"v: {value}\n", variables={"A": "a", "B": "b"})
    assert [d.code for d in found] == ["bad-variable"]
    assert "${NAME}" in found[0].message and found[0].path == "v"


# ------------------------------------------------------------------ property (hypothesis)

NAMES = ["A", "B", "C_1", "_x"]
values = st.text(max_size=8)
literals = st.text(max_size=6).filter(lambda s: "$" not in s)
defaults = st.none() | st.text(max_size=6).filter(lambda s: "$" not in s and "}" not in s)
pieces = st.lists(literals.map(lambda s: ("lit", s)) | st.just(("esc", ""))
                  | st.tuples(st.just("ref"), st.tuples(st.sampled_from(NAMES), defaults)),
                  max_size=6)


def render(parts: list[tuple[str, Any]], variables: dict[str, str],
           environ: dict[str, str]) -> tuple[str, str, list[str]]:
    """The template, the expected result, and the names expected undefined."""
    template, expected, undefined = [], [], []
    for kind, part in parts:
        if kind == "lit":
            template.append(part)
            expected.append(part)
        elif kind == "esc":
            template.append("$${")
            expected.append("${")
        else:
            name, default = part
            template.append(f"${{{name}}}" if default is None else f"${{{name}:-{default}}}")
            value = variables.get(name, environ.get(name))
            if default is not None and not value:
                expected.append(default)
            elif value is None:
                undefined.append(name)
            else:
                expected.append(value)
    return "".join(template), "".join(expected), undefined


@SETTINGS
@given(pieces, st.dictionaries(st.sampled_from(NAMES), values),
       st.dictionaries(st.sampled_from(NAMES), values))
def test_substitution_matches_the_expected_string(parts: list[tuple[str, Any]],
                                                  variables: dict[str, str],
                                                  environ: dict[str, str]) -> None:
    template, expected, undefined = render(parts, variables, environ)
    text = yaml.safe_dump({"v": template}, default_style='"', allow_unicode=True)
    doc, diags = load_text(text, "v.yaml", variables=variables, environ=environ)
    if undefined:
        names = list(dict.fromkeys(undefined))  # each undefined name once per scalar
        assert doc is None
        assert [d.code for d in diags] == ["undefined-variable"] * len(names)
        assert all(f"--var {n}=VALUE" in d.message for n, d in zip(names, diags))
    else:
        assert doc is not None, diags
        assert doc.data == {"v": expected}
