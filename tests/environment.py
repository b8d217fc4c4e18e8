"""Where the tests run: in CI a missing tool is a failure, on a laptop it may be a skip."""
from __future__ import annotations

import os


def under_ci() -> bool:
    """Whether the ``CI`` environment variable says so (``.ci/run`` and CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")
