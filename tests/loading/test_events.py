"""The event builder: keys, positions, aliases, document errors (vxtrain/loading/events.py)."""
from __future__ import annotations

import pytest
import yaml

from tests.loading.helpers import errors, ok
from vxtrain.loading import limits, load_text
from vxtrain.loading.document import Position


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


def test_errors_stop_at_the_limit() -> None:
    found = errors("".join(f"k{i}: ${{V{i}}}\n" for i in range(limits.MAX_ERRORS + 50)))
    assert len(found) == limits.MAX_ERRORS + 1 and found[-1].code == "too-many-errors"


def test_too_many_errors_is_located_where_reading_stopped() -> None:
    text = "".join(f"k{i}: ${{U{i}}}\n" for i in range(200))
    _, diags = load_text(text, "m.yaml", environ={})
    last = diags[-1]
    assert last.code == "too-many-errors" and (last.line, last.column, last.path) == (100, 6, "k99")


def test_lone_surrogates_are_an_encoding_error() -> None:
    assert [d.code for d in errors("a: \ud800\n")] == ["encoding"]


def test_a_lone_surrogate_is_located() -> None:
    _, diags = load_text("a: 1\nb: \ud800x\n", "s.yaml", environ={})
    assert [(d.code, d.line, d.column) for d in diags] == [("encoding", 2, 4)]
    assert "'\\ud800'" in diags[0].message


@pytest.mark.parametrize("key", ["'<<'", '"<<"', "!!str <<"])
def test_a_quoted_or_tagged_merge_key_is_a_plain_string_key(key: str) -> None:
    # YAML 1.1 resolves only a plain `<<` to the merge tag (PyYAML agrees).
    text = f"a:\n  {key}: 1\n"
    document, diags = load_text(text, "q.yaml", environ={})
    assert diags == [] and document is not None
    assert document.data == yaml.safe_load(text) == {"a": {"<<": 1}}
