"""Overlays (-f, deep merge) and --set assignments (vxtrain/loading/overlays.py)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.loading.helpers import NO_ENV, write
from vxtrain.loading import load
from vxtrain.loading.document import Position


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
