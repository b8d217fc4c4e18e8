"""AI Platform Training's legacy machine names and predefined scale tiers, and the Vertex AI
machines vxtrain converts them to.

Data: ``legacy_machines.csv``, ``legacy_scale_tiers.csv`` (each row with its
source and confidence; the scale tiers are ``unverified``). Used by
:mod:`vxtrain.formats.legacy`.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from vxtrain.catalog.tables import rows


@dataclass(frozen=True)
class LegacyMachine:
    """The Vertex AI machine a legacy name converts to, with the accelerators it carries.

    ``replaces``: the GPUs the legacy name meant (``"1 × NVIDIA_TESLA_K80"``),
    when vxtrain maps it to others; None when the GPUs are the same.
    """

    name: str
    machine_type: str
    accelerator_type: str | None
    accelerator_count: int
    replaces: str | None
    confidence: str
    source: str


@dataclass(frozen=True)
class TierPool:
    """One pool of a predefined scale tier: role, replicas, legacy machine name."""

    role: str
    replicas: int
    legacy_machine: str


def _legacy_machine(row: dict[str, str]) -> LegacyMachine:
    meant, count = row["ai_platform_accelerator"] or None, int(row["ai_platform_accelerator_count"])
    accelerator = row["accelerator"] or None
    replaces = f"{count} × {meant}" if meant is not None and meant != accelerator else None
    return LegacyMachine(row["name"], row["machine_type"], accelerator, int(row["accelerator_count"]),
                         replaces, row["confidence"], row["source"])


@functools.cache
def _legacy_machines() -> dict[str, LegacyMachine]:
    return {r["name"]: _legacy_machine(r) for r in rows("legacy_machines.csv")}


@functools.cache
def _scale_tiers() -> dict[str, tuple[TierPool, ...]]:
    out: dict[str, tuple[TierPool, ...]] = {}
    for r in rows("legacy_scale_tiers.csv"):
        out[r["tier"]] = (*out.get(r["tier"], ()), TierPool(r["role"], int(r["replicas"]), r["legacy_machine"]))
    return out


def legacy_machine(name: str) -> LegacyMachine | None:
    """What legacy machine name ``name`` (``standard``, ``complex_model_m_gpu``…) converts to; None if not one."""
    return _legacy_machines().get(name)


def legacy_machine_names() -> list[str]:
    """Every legacy machine name, in file order."""
    return list(_legacy_machines())


def scale_tier(tier: str) -> tuple[TierPool, ...] | None:
    """The pools of predefined scale tier ``tier`` (``BASIC``, ``STANDARD_1``…); None if not one."""
    return _scale_tiers().get(tier)


def scale_tiers() -> list[str]:
    """The predefined scale tiers, in file order (CUSTOM is not one)."""
    return list(_scale_tiers())
