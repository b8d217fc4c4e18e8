"""Scalars are typed as PyYAML's SafeLoader types them (vxtrain/loading/scalars.py)."""
from __future__ import annotations

import json
from typing import Any

import pytest

from tests.loading.helpers import ok


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
