"""Moved to :mod:`vxtrain.vocab.kinds` (the floor every layer may import). These
re-exports remain only for ``vxtrain.submission``'s ``__init__``, ``jobs``, ``ladder``
and ``create``, which still import from here; remove this module once they import
from ``vxtrain.vocab.kinds``."""
from __future__ import annotations

from vxtrain.vocab.kinds import CUSTOM as CUSTOM
from vxtrain.vocab.kinds import FAILED_STATES as FAILED_STATES
from vxtrain.vocab.kinds import KINDS as KINDS
from vxtrain.vocab.kinds import RESOURCE_EXHAUSTED as RESOURCE_EXHAUSTED
from vxtrain.vocab.kinds import TERMINAL_STATES as TERMINAL_STATES
from vxtrain.vocab.kinds import TUNING as TUNING
from vxtrain.vocab.kinds import JobKind as JobKind
from vxtrain.vocab.kinds import kind_of_job as kind_of_job
from vxtrain.vocab.kinds import kind_of_name as kind_of_name
from vxtrain.vocab.kinds import other as other

__all__ = ["CUSTOM", "FAILED_STATES", "JobKind", "KINDS", "RESOURCE_EXHAUSTED", "TERMINAL_STATES", "TUNING",
           "kind_of_job", "kind_of_name", "other"]
