"""YAML syntax errors are located and carry a hint (vxtrain/loading/hints.py)."""
from __future__ import annotations

import pytest

from tests.loading.helpers import errors


@pytest.mark.parametrize(("text", "line", "column", "fragment", "hint"), [
    ("a:\n\tb: 1\n", 2, 1, "cannot start any token", "tabs"),
    ("a: 'open\nb: 1\n", 3, 1, "end of stream", "quoted string is not closed"),
    ('a: "open\n', 2, 1, "end of stream", "quoted string is not closed"),
    ("a: [1, 2\nb: 3\n", 2, 2, "expected ','", "'[' is not closed"),
    ("a: {x: 1\n", 2, 1, "expected ','", "'{' is not closed"),
    ("a: b: c\n", 1, 5, "mapping values are not allowed", "quote the value"),
    ("a:\n  - x\n  y: 1\n", 3, 3, "expected", "indentation"),
    ("a: \x07\n", 1, 4, "control characters", "remove the control character"),
    ("w: {replicas: ${N}, m: x}\n", 1, 16, "expected ','", "${VAR} inside [ ] or { } must be quoted"),
    ("args: [--n=${N:-2}]\n", 1, 13, "expected ','", "${VAR} inside [ ] or { } must be quoted"),
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
