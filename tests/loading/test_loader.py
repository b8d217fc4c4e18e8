"""Unit tests of the spec loader, one table per rule (see vxtrain/loading/)."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from vxtrain.diagnostics import Diagnostic
from vxtrain.loading import loader
from vxtrain.loading.document import Document, Position
from vxtrain.loading.loader import load, load_text

NO_ENV: dict[str, str] = {}


def ok(text: str | bytes, **kwargs: Any) -> Document:
    """Load text that must load without errors."""
    kwargs.setdefault("environ", NO_ENV)
    doc, diags = load_text(text, "spec.yaml", **kwargs)
    assert doc is not None, diags
    assert not [d for d in diags if d.severity == "error"]
    return doc


def errors(text: str | bytes, **kwargs: Any) -> list[Diagnostic]:
    """Load text that must fail; its error diagnostics."""
    kwargs.setdefault("environ", NO_ENV)
    doc, diags = load_text(text, "spec.yaml", **kwargs)
    assert doc is None
    found = [d for d in diags if d.severity == "error"]
    assert found
    return found


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------ scalars

@pytest.mark.parametrize(("text", "expected"), [
    ("1", 1), ("-7", -7), ("+3", 3), ("1_000", 1000), ("0x1F", 31), ("0b101", 5), ("017", 15),
    ("1:30", 90), ("0", 0),
    ("1.5", 1.5), ("1e3", "1e3"), ("1.0e+3", 1000.0), (".inf", float("inf")), ("-.Inf", float("-inf")),
    ("true", True), ("False", False), ("yes", True), ("off", False), ("On", True),
    ("null", None), ("~", None), ("", None), ("NULL", None),
    ("2001-12-14", "2001-12-14"), ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("hello", "hello"), ("'1'", "1"), ('"true"', "true"), ("'null'", "null"), ("=", "="),
    ("2d", "2d"), ("n1-highmem-96", "n1-highmem-96"), ("0o17", "0o17"),
    ("!!str 1", "1"), ("!!int '12'", 12), ("!!float 1", 1.0), ("!!bool 'yes'", True),
    ("!!null ''", None), ("! 123", "123"),
    ("[1, a, true]", [1, "a", True]), ("{a: 1}", {"a": 1}), ("!!seq [1]", [1]), ("!!map {}", {}),
])
def test_scalars_are_typed_by_safe_loader_rules(text: str, expected: Any) -> None:
    assert ok(f"v: {text}\n").data["v"] == expected


def test_timestamps_stay_text_so_data_is_json_serializable() -> None:
    doc = ok("a: 2001-12-14\nb: 2001-12-14 21:59:43.10 -5\n")
    assert json.loads(json.dumps(doc.data)) == doc.data


@pytest.mark.parametrize(("text", "keys"), [
    ("on: 1\nyes: 2\nno: 3\n", ["on", "yes", "no"]),
    ("1: a\n0x10: b\n1.5: c\n", ["1", "0x10", "1.5"]),
    ("null: a\n~: b\n", ["null", "~"]),
    ("'quoted': 1\n\"dq\": 2\n", ["quoted", "dq"]),
    ("!!int 7: a\n", ["7"]),
    ("&k key: 1\n*k : 2\n", None),  # duplicate through an alias key (below)
])
def test_keys_are_always_their_source_text(text: str, keys: list[str] | None) -> None:
    if keys is None:
        assert errors(text)[0].code == "duplicate-key"
        return
    assert list(ok(text).data) == keys


# ------------------------------------------------------------------ positions

def test_positions_of_keys_and_items() -> None:
    text = "a: 1\nb:\n  c: [x, y]\n  d:\n    - p\n    -   q: 2\n"
    doc = ok(text)
    where = {path: (pos.line, pos.column) for path, pos in doc.positions.items()}
    assert where == {
        (): (1, 1), ("a",): (1, 1), ("b",): (2, 1), ("b", "c"): (3, 3),
        ("b", "c", 0): (3, 7), ("b", "c", 1): (3, 10), ("b", "d"): (4, 3),
        ("b", "d", 0): (5, 7), ("b", "d", 1): (6, 9), ("b", "d", 1, "q"): (6, 9),
    }
    assert all(pos.file == "spec.yaml" for pos in doc.positions.values())


def test_alias_copies_value_and_positions() -> None:
    doc = ok("base: &b\n  image: x\n  args: [1]\npool: *b\nlist: [*b]\n")
    assert doc.data["pool"] == {"image": "x", "args": [1]}
    assert doc.data["pool"] is not doc.data["base"]
    assert doc.positions[("pool",)] == Position("spec.yaml", 4, 1)
    assert doc.positions[("pool", "image")] == Position("spec.yaml", 2, 3)
    assert doc.positions[("list", 0)] == Position("spec.yaml", 5, 8)
    assert doc.positions[("list", 0, "args", 0)] == Position("spec.yaml", 3, 10)


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize(("text", "code", "line", "column", "fragment"), [
    ("", "empty-spec", 1, 1, "empty spec"),
    ("# only a comment\n", "empty-spec", 1, 1, "empty spec"),
    ("---\n", "empty-spec", 1, 1, "empty spec"),
    ("- a\n", "root-not-mapping", 1, 1, "a list"),
    ("just text\n", "root-not-mapping", 1, 1, "'just text'"),
    ("a: 1\n---\nb: 2\n", "multiple-documents", 2, 1, "second"),
    ("a: 1\nb: 2\na: 3\n", "duplicate-key", 3, 1, "'a' (first defined at line 1)"),
    ("x:\n  k: 1\n  k: 2\n", "duplicate-key", 3, 3, "'k'"),
    ("a: !!python/object:os.system x\n", "yaml-tag", 1, 4, "'!!python/object:os.system'"),
    ("a: !Ref x\n", "yaml-tag", 1, 4, "'!Ref'"),
    ("a: !!binary aGk=\n", "yaml-tag", 1, 4, "!!binary"),
    ("a: !!timestamp 2001-01-01\n", "yaml-tag", 1, 4, "!!timestamp"),
    ("a: !!set {x}\n", "yaml-tag", 1, 4, "!!set"),
    ("a: !!int abc\n", "yaml-tag", 1, 4, "'abc' is not a valid !!int"),
    ("!!python/name:os.system k: v\n", "yaml-tag", 1, 1, "!!python/name:os.system"),
    ("[a]: 1\n", "yaml-key", 1, 1, "key must be a plain value"),
    ("? {a: 1}\n: 2\n", "yaml-key", 1, 3, "key must be a plain value"),
    ("a: *nope\n", "yaml-alias", 1, 4, "*nope is not defined"),
    ("a: &x [1, *x]\n", "yaml-alias", 1, 11, "inside its own anchor"),
    ("base: &b {x: 1}\nc:\n  <<: *b\n", "yaml-merge-key", 3, 3, "merge keys"),
])
def test_document_errors(text: str, code: str, line: int, column: int, fragment: str) -> None:
    found = errors(text)
    assert [d.code for d in found] == [code]
    d = found[0]
    assert (d.line, d.column, d.file) == (line, column, "spec.yaml")
    assert fragment in d.message


def test_every_duplicate_and_every_problem_is_reported() -> None:
    found = errors("a: 1\na: 2\nb: ${X}\nb: ${Y}\nc: !bad x\n")
    assert [(d.code, d.line) for d in found] == [
        ("duplicate-key", 2), ("undefined-variable", 3), ("duplicate-key", 4),
        ("undefined-variable", 4), ("yaml-tag", 5)]
    assert found[0].path == "a" and found[2].path == "b"


@pytest.mark.parametrize(("text", "line", "column", "fragment", "hint"), [
    ("a:\n\tb: 1\n", 2, 1, "cannot start any token", "tabs"),
    ("a: 'open\nb: 1\n", 3, 1, "end of stream", "quoted string is not closed"),
    ('a: "open\n', 2, 1, "end of stream", "quoted string is not closed"),
    ("a: [1, 2\nb: 3\n", 2, 2, "expected ','", "'[' is not closed"),
    ("a: {x: 1\n", 2, 1, "expected ','", "'{' is not closed"),
    ("a: b: c\n", 1, 5, "mapping values are not allowed", "quote the value"),
    ("a:\n  - x\n  y: 1\n", 3, 3, "expected", "indentation"),
    ("a: \x07\n", 1, 4, "control characters", "remove the control character"),
])
def test_yaml_syntax_errors(text: str, line: int | None, column: int | None, fragment: str,
                            hint: str) -> None:
    found = errors(text)
    assert [d.code for d in found] == ["yaml-syntax"]
    d = found[0]
    if line is not None:
        assert (d.line, d.column) == (line, column)
    assert fragment in d.message
    assert hint in d.message


# ------------------------------------------------------------------ ${VARS}

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


def test_errors_stop_at_the_limit() -> None:
    found = errors("".join(f"k{i}: ${{V{i}}}\n" for i in range(loader.MAX_ERRORS + 50)))
    assert len(found) == loader.MAX_ERRORS + 1 and found[-1].code == "too-many-errors"


def test_lone_surrogates_are_an_encoding_error() -> None:
    assert [d.code for d in errors("a: \ud800\n")] == ["encoding"]


@pytest.mark.parametrize("value", ["${", "x${", "${1X}", "${}", "${A-b}", "${A:b}", "${A B}",
                                   "'${A:-${B}}'", "${A"])
def test_malformed_references(value: str) -> None:
    found = errors(f"v: {value}\n", variables={"A": "a", "B": "b"})
    assert [d.code for d in found] == ["bad-variable"]
    assert "${NAME}" in found[0].message and found[0].path == "v"


# ------------------------------------------------------------------ files

def test_load_file_positions_name_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "job.yaml", "a: 1\n")
    doc, diags = load(path, environ=NO_ENV)
    assert doc is not None and diags == []
    assert doc.file == str(path)
    assert doc.positions[("a",)] == Position(str(path), 1, 1)


@pytest.mark.parametrize(("make", "code", "fragment"), [
    (lambda p: p / "missing.yaml", "file-not-found", "no such file"),
    (lambda p: p, "file-unreadable", "is a directory"),
    (lambda p: _bytes(p, b"a: 1\n") / "x.yaml", "file-unreadable", "cannot read"),
    (lambda p: _bytes(p, b"a: \xff\xfe\n"), "encoding", "not UTF-8"),
    (lambda p: _bytes(p, b"\x00\x00\xfe\xff"), "encoding", "not UTF-8"),
    (lambda p: _bytes(p, b""), "empty-spec", "empty spec"),
])
def test_file_problems(tmp_path: Path, make: Any, code: str, fragment: str) -> None:
    path = make(tmp_path)
    doc, diags = load(path, environ=NO_ENV)
    assert doc is None
    assert [d.code for d in diags] == [code]
    assert fragment in diags[0].message and diags[0].file == str(path)


def _bytes(tmp_path: Path, raw: bytes) -> Path:
    path = tmp_path / "raw.yaml"
    path.write_bytes(raw)
    return path


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads files whatever their mode")
def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, "secret.yaml", "a: 1\n")
    path.chmod(0)
    doc, diags = load(path, environ=NO_ENV)
    assert doc is None and [d.code for d in diags] == ["file-unreadable"]


def test_utf8_bom_and_bytes_are_accepted() -> None:
    assert ok("\ufeffa: 1\n".encode()).data == {"a": 1}
    assert ok("name: caf\u00e9\n".encode()).data == {"name": "caf\u00e9"}


# ------------------------------------------------------------------ overlays

BASE = """\
display_name: base
labels: {team: nlp, env: dev}
workers:
  replicas: 2
  args: [--a, --b]
evaluators: {replicas: 1}
"""


def test_overlays_merge_in_order(tmp_path: Path) -> None:
    base = write(tmp_path, "base.yaml", BASE)
    first = write(tmp_path, "prod.yaml", "labels: {env: prod}\nworkers:\n  args: [--c]\n"
                                         "evaluators: null\n")
    second = write(tmp_path, "big.yaml", "workers: {replicas: 8}\nlabels: {owner: me}\n")
    doc, diags = load(base, overlays=[first, second], environ=NO_ENV)
    assert diags == [] and doc is not None
    assert doc.data == {"display_name": "base", "labels": {"team": "nlp", "env": "prod", "owner": "me"},
                        "workers": {"replicas": 8, "args": ["--c"]}}
    pos = doc.positions
    assert pos[("display_name",)].file == str(base)
    assert pos[("labels",)] == Position(str(base), 2, 1)
    assert pos[("labels", "env")] == Position(str(first), 1, 10)
    assert pos[("labels", "owner")] == Position(str(second), 2, 10)
    assert pos[("workers", "args")] == Position(str(first), 3, 3)
    assert pos[("workers", "args", 0)] == Position(str(first), 3, 10)
    assert ("workers", "args", 1) not in pos
    assert not [p for p in pos if p[:1] == ("evaluators",)]
    assert set(pos) == set(_all_paths(doc.data))


def _all_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [path]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _all_paths(child, path + (key,))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _all_paths(child, path + (index,))
    return out


@pytest.mark.parametrize(("over", "expected"), [
    ("workers: 3\n", {"workers": 3}),
    ("workers: {args: null}\n", {"workers": {"replicas": 2}}),
    ("workers: [1]\n", {"workers": [1]}),
    ("new: {a: 1}\n", {"workers": {"replicas": 2, "args": ["--a", "--b"]}, "new": {"a": 1}}),
    ("absent: null\n", {"workers": {"replicas": 2, "args": ["--a", "--b"]}}),
])
def test_overlay_rules(tmp_path: Path, over: str, expected: dict[str, Any]) -> None:
    base = write(tmp_path, "base.yaml", "workers:\n  replicas: 2\n  args: [--a, --b]\n")
    doc, _ = load(base, overlays=[write(tmp_path, "o.yaml", over)], environ=NO_ENV)
    assert doc is not None and doc.data == expected
    assert set(doc.positions) == set(_all_paths(doc.data))


def test_overlay_problems_name_the_overlay(tmp_path: Path) -> None:
    base = write(tmp_path, "base.yaml", "a: 1\n")
    bad = write(tmp_path, "bad.yaml", "a: 1\na: 2\n")
    doc, diags = load(base, overlays=[bad, tmp_path / "gone.yaml"], environ=NO_ENV)
    assert doc is None
    assert [(d.code, d.file) for d in diags] == [
        ("duplicate-key", str(bad)), ("file-not-found", str(tmp_path / "gone.yaml"))]


def test_overlay_variables_are_substituted(tmp_path: Path) -> None:
    base = write(tmp_path, "base.yaml", "a: 1\n")
    over = write(tmp_path, "o.yaml", "a: ${N}\n")
    doc, _ = load(base, overlays=[over], variables={"N": "5"}, environ=NO_ENV)
    assert doc is not None and doc.data == {"a": 5}


# ------------------------------------------------------------------ --set

@pytest.mark.parametrize(("sets", "expected"), [
    (["workers.replicas=8"], {"workers": {"replicas": 8, "args": ["--a"]}, "name": "x"}),
    (["workers.env.NCCL_DEBUG=INFO"],
     {"workers": {"replicas": 2, "args": ["--a"], "env": {"NCCL_DEBUG": "INFO"}}, "name": "x"}),
    (["workers.args[0]=--epochs=5"], {"workers": {"replicas": 2, "args": ["--epochs=5"]}, "name": "x"}),
    (["workers.args[1]=--b"], {"workers": {"replicas": 2, "args": ["--a", "--b"]}, "name": "x"}),
    (["workers.args=[a, b]"], {"workers": {"replicas": 2, "args": ["a", "b"]}, "name": "x"}),
    (["name="], {"workers": {"replicas": 2, "args": ["--a"]}, "name": ""}),
    (["name=null"], {"workers": {"replicas": 2, "args": ["--a"]}, "name": None}),
    (["name='8'"], {"workers": {"replicas": 2, "args": ["--a"]}, "name": "8"}),
    (["name=#ff0000"], {"workers": {"replicas": 2, "args": ["--a"]}, "name": "#ff0000"}),
    (["name=${X}"], {"workers": {"replicas": 2, "args": ["--a"]}, "name": "${X}"}),
    (["a.b.c={d: 1}"], {"workers": {"replicas": 2, "args": ["--a"]}, "name": "x",
                        "a": {"b": {"c": {"d": 1}}}}),
    (["name=y", "name=z"], {"workers": {"replicas": 2, "args": ["--a"]}, "name": "z"}),
])
def test_sets(tmp_path: Path, sets: list[str], expected: dict[str, Any]) -> None:
    base = write(tmp_path, "base.yaml", "workers:\n  replicas: 2\n  args: [--a]\nname: x\n")
    doc, diags = load(base, sets=sets, environ=NO_ENV)
    assert diags == [] and doc is not None
    assert doc.data == expected
    assert set(doc.positions) == set(_all_paths(doc.data))


def test_set_positions(tmp_path: Path) -> None:
    base = write(tmp_path, "base.yaml", "workers:\n  replicas: 2\n")
    doc, _ = load(base, sets=["a=1", "workers.env.X=[1, 2]"], environ=NO_ENV)
    assert doc is not None
    assert doc.positions[("a",)] == Position("--set", 1, 1)
    assert doc.positions[("workers", "env")] == Position("--set", 1, 2)
    assert doc.positions[("workers", "env", "X", 1)] == Position("--set", 1, 2)
    assert doc.positions[("workers", "replicas")] == Position(str(base), 2, 3)


@pytest.mark.parametrize(("arg", "fragment"), [
    ("workers.replicas", "no '='"),
    ("workers..replicas=1", "bad key segment ''"),
    (".a=1", "bad key segment ''"),
    ("=1", "bad key segment ''"),
    ("a[x]=1", "bad key segment 'a[x]'"),
    ("a[-1]=1", "bad key segment 'a[-1]'"),
    ("name[0]=1", "name is a str, not a list"),
    ("workers[0]=1", "workers is a dict, not a list"),
    ("missing[0]=1", "missing is missing, not a list"),
    ("args[5]=1", "index [5] is past the end of args (1 items)"),
    ("args[1].x=1", "index [1] is past the end"),
    ("name.first=1", "name is a str, not a mapping"),
    ("a=[1, 2", "not valid YAML"),
    ("a=1\n---\n2", "not valid YAML"),
])
def test_set_errors(tmp_path: Path, arg: str, fragment: str) -> None:
    base = write(tmp_path, "base.yaml", "workers: {replicas: 2}\nargs: [--a]\nname: x\n")
    doc, diags = load(base, sets=["ok=1", arg], environ=NO_ENV)
    assert doc is None
    assert [d.code for d in diags] == ["set-syntax"]
    assert (diags[0].file, diags[0].line, diags[0].column) == ("--set", 1, 2)
    assert repr(arg) in diags[0].message and fragment in diags[0].message


def test_set_syntax_is_reported_even_when_the_file_fails(tmp_path: Path) -> None:
    doc, diags = load(tmp_path / "nope.yaml", sets=["bad"], environ=NO_ENV)
    assert doc is None and [d.code for d in diags] == ["file-not-found", "set-syntax"]


# --- every loader diagnostic is located (line and column), also encoding problems -----------

def test_encoding_errors_have_a_line_and_column() -> None:
    _, diags = load_text(b"a: 1\nb: x\xff\n", "e.yaml", environ={})
    assert [(d.code, d.line, d.column) for d in diags] == [("encoding", 2, 5)]
    _, diags = load_text("a: 1\nb: \ud800x\n", "s.yaml", environ={})
    assert [(d.code, d.line, d.column) for d in diags] == [("encoding", 2, 4)]
    assert "'\\ud800'" in diags[0].message


def test_too_many_errors_is_located_where_reading_stopped() -> None:
    text = "".join(f"k{i}: ${{U{i}}}\n" for i in range(200))
    _, diags = load_text(text, "m.yaml", environ={})
    last = diags[-1]
    assert last.code == "too-many-errors" and (last.line, last.column, last.path) == (100, 6, "k99")
