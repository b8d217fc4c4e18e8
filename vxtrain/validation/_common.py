"""What the rule groups share: where a pool's key was written, list wording, shared sources.

The bottom of ``vxtrain.validation``: it imports no rule group.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import NO_DEFAULTS_ROLE, written_at

RS = NO_DEFAULTS_ROLE
DISTRIBUTED_DOC = "https://cloud.google.com/vertex-ai/docs/training/distributed-training"
#: Vertex AI training's machine types, GPUs and N1 GPU limits (the catalog's
#: training_*.csv and n1_gpu_limits.csv were read from it, 2026-11-23).
TRAINING_MACHINES_DOC = "https://cloud.google.com/vertex-ai/docs/training/configure-compute"


def raw_pool(native: NativeSpec, role: str) -> Mapping[str, Any]:
    """The pool ``role`` as written (without ``defaults``); empty when absent or not a mapping."""
    raw = native.data.get(role)
    return raw if isinstance(raw, Mapping) else {}


def key_path(native: NativeSpec, role: str, key: str) -> KeyPath:
    """Where a pool's ``key`` was written: in the pool, else in ``defaults``, else the pool."""
    return written_at(native.data, role, key) or (role,)


def quote_list(values: Iterable[object]) -> str:
    """``"a", "b"``."""
    return ", ".join(f'"{v}"' for v in values)


def or_list(values: Iterable[object]) -> str:
    """``"a" or "b"``."""
    return " or ".join(f'"{v}"' for v in values)


def plural(n: int, word: str) -> str:
    """``1 GPU``, ``2 GPUs``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
