"""Vertex AI locations: which offer custom training, and which accelerators each offers.

Data: ``regions.csv``, ``region_accelerators.csv``.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from vxtrain.catalog.machines import builtin_accelerator
from vxtrain.catalog.spelling import distance, normalize, within
from vxtrain.catalog.tables import rows
from vxtrain.catalog.tpus import is_tpu, tpu_region_key


@dataclass(frozen=True)
class Region:
    """A Vertex AI location: ``training`` is "yes" or "not listed" (regions.csv)."""

    name: str
    training: str
    confidence: str
    source: str


@dataclass(frozen=True)
class RegionAccelerator:
    """Whether a region offers an accelerator for training, per the locations page.

    ``conflict``: the quotas page disagrees (a quota where the locations page
    lists none, or "Not available" where it lists one).
    """

    offered: bool
    conflict: bool
    locations_page: str
    quota_page: str
    source: str


@functools.cache
def _regions() -> dict[str, Region]:
    return {r["region"]: Region(r["region"], r["custom_training"], r["confidence"], r["source"])
            for r in rows("regions.csv")}


@functools.cache
def _region_accelerators() -> dict[tuple[str, str], RegionAccelerator]:
    # Loaded apart from the regions: only specs with a region and an accelerator need it.
    return {(r["region"], r["accelerator"]): RegionAccelerator(
        r["offered_for_training"] == "yes", r["conflict"] == "yes", r["locations_page"],
        r["quota_page_default"], r["source"]) for r in rows("region_accelerators.csv")}


def region(name: str) -> Region | None:
    """The Vertex AI location ``name`` (None when the locations page does not list it)."""
    return _regions().get(name)


def training_regions() -> list[str]:
    """Regions whose Vertex AI feature table lists custom training, sorted."""
    return sorted(r.name for r in _regions().values() if r.training == "yes")


def near_region(name: str) -> list[str]:
    """Training regions ``name`` is probably a typo of (``us-centrl1`` → ``us-central1``)."""
    norm = normalize(name)
    names = sorted(_regions())
    if norm in names:
        return [norm] if norm != name else []
    scored = sorted((distance(norm, r), r) for r in names if within(norm, r, 2))
    return [r for d, r in scored][:3]


def region_accelerator_key(machine_type: str | None, accelerator_type: str | None,
                           count: int | None) -> str | None:
    """The region_accelerators.csv key of a pool's accelerators (None: no accelerator).

    A TPU machine's key comes from tpu_machines.csv whether or not the pool
    names an accelerator type: TPU v2/v3 pods (32 cores or more) are listed
    apart from single TPUs; ct5lp is TPU_V5_LITEPOD; TPU v6e and TPU7x are
    named by their machine types (no AcceleratorType value).
    """
    if is_tpu(machine_type):
        return tpu_region_key(machine_type, accelerator_type, count)
    acc = accelerator_type
    if acc is None:
        builtin = builtin_accelerator(machine_type or "")
        acc = builtin[0] if builtin else None
    return acc


def region_accelerator(region_name: str, key: str) -> RegionAccelerator | None:
    """Whether ``region_name`` offers accelerator ``key`` for training (None: not tabulated)."""
    return _region_accelerators().get((region_name, key))


def regions_offering(key: str) -> list[str]:
    """Training regions the locations page lists ``key`` in, sorted."""
    return sorted(r for (r, k), ra in _region_accelerators().items() if k == key and ra.offered)
