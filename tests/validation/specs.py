"""Spec builders the rule tests share."""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any


def changed(base: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``base`` with top-level keys replaced (None deletes); dict values merge one level deep."""
    data = copy.deepcopy(dict(base))
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(data.get(key), dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    return data


def E(code: str, path: str) -> tuple[str, str, str]:  # noqa: N802 - table shorthand
    """An expected error: (severity, code, path)."""
    return ("error", code, path)


def W(code: str, path: str) -> tuple[str, str, str]:  # noqa: N802 - table shorthand
    """An expected warning: (severity, code, path)."""
    return ("warning", code, path)
