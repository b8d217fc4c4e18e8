"""Helpers shared by the loader's tests: load text that must load, or must fail."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings

from vxtrain.diagnostics import Diagnostic
from vxtrain.loading import load_text
from vxtrain.loading.document import Document

NO_ENV: dict[str, str] = {}
#: Hypothesis settings for the loader's property tests.
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


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
    """Write ``text`` to ``tmp_path/name`` (UTF-8); its path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
