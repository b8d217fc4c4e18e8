"""Reading the catalog's CSV files (the data beside this module).

Every file has a ``source``, a ``confidence`` and an ``as_of`` column per row
(README.md beside them); lines starting with ``#`` are comments saying how the rows were
read. The lookup modules load what they need once, lazily, through :func:`rows`.
"""
from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path

#: The folder of the catalog's CSV files (package data).
CATALOG_DIR = Path(__file__).resolve().parent


def rows(name: str) -> Iterator[dict[str, str]]:
    """Rows of the catalog CSV ``name`` as dicts; comment lines (``#``) are skipped."""
    with open(CATALOG_DIR / name, newline="", encoding="utf-8") as f:
        yield from csv.DictReader(line for line in f if not line.startswith("#"))


def number(text: str) -> float | None:
    """A float cell, or None when the cell is empty (not published)."""
    return float(text) if text else None
