"""Shared fixtures. The guard against reaching Google lives here (see below)."""
from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = ROOT / "configs"


@pytest.fixture
def configs_dir() -> Path:
    """The repository's configs/ folder."""
    return CONFIGS
