"""YAML syntax errors are located and carry a hint (vxtrain/loading/hints.py)."""
from __future__ import annotations

import pytest

from tests.loading.helpers import errors
from vxtrain.loading import load_text


@pytest.mark.parametrize(("text", "line", "column", "fragment", "hint"), [
    ("a:\n\tb: 1\n", 2, 1, "cannot start any token", "tabs"),
    # an unclosed quote is named where it opens, not past the end of the file
    ("a: 'open\nb: 1\n", 1, 4, "the string this ' opens is never closed", "add the closing '"),
    ('a: "open\n', 1, 4, 'the string this " opens is never closed', 'add the closing "'),
    ('a: 1\nargs: [x, "y, z]\nb: 2\n', 2, 11, 'the string this " opens is never closed', 'add the closing "'),
    # a key glued to its value is named at its own line, not the next one's
    ("w:\n  replicas: 2\n  machine_type:n1-standard-8\n  image: i\n", 3, 15,
     "no space after the ':' in `machine_type:n1-standard-8`", "add a space after ':'"),
    ("w:\n  replicas: 2\n  machine_type:n1-standard-8\n", 3, 15, "no space after the ':'", "add a space after ':'"),
    ("display_name:t\nworkers:\n  replicas: 2\n", 1, 13, "no space after the ':' in `display_name:t`",
     "add a space after ':'"),
    ("w:\n  machine_type:n1-standard-8\n  replicas: 2\n", 2, 15, "no space after the ':'", "add a space after ':'"),
    ("args:\n  - x\n  - url:http://e\n  - y: 1\n", None, None, "", ""),
    # a key indented deeper than the one above it (which has a value) is named at its own line
    ("w:\n  replicas: 2\n    machine_type: n1-standard-8\n  image: i\n", 3, 5,
     "this key (`machine_type`) is indented more than the keys above it (line 2", "line it up with the keys above it"),
    ("display_name: t\n  region: us-central1\n", 2, 3, "this key (`region`) is indented more", "line it up"),
    ("w:\n  acc:\n    type: X\n    # note\n\n      count: 1\n", 6, 7, "(line 3 has a value", "line it up"),
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
    if line is None:  # valid YAML: nothing to hint at
        assert not [d for d in load_text(text, "spec.yaml", environ={})[1] if d.code == "yaml-syntax"]
        return
    found = errors(text)
    assert [d.code for d in found] == ["yaml-syntax"]
    d = found[0]
    if line is not None:
        assert (d.line, d.column) == (line, column)
    assert fragment in d.message
    assert hint in d.message
