"""The source folders the tests of vxtrain.sources package (tests/sources/folders.py)."""
from __future__ import annotations

from tests.sources.folders import bare_source, project_source  # noqa: F401 - fixtures
