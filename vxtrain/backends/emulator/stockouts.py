"""Regions without capacity: ``--stockout REGION`` and ``--pending REGION``.

Vertex AI tells of a stockout late: the job is accepted, sits QUEUED/PENDING,
and ends FAILED with "Resources are insufficient in region: REGION" (observed
in user reports; the message and code 8, RESOURCE_EXHAUSTED, are what the
emulator answers, see README "Emulator"). A job can also stay PENDING with no
end in sight (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service:
"might remain in the JOB_STATE_QUEUED state for some time"). This module says
which of the two a region suffers; the store walks the job accordingly.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from enum import Enum
from typing import Protocol

from vxtrain import catalog
from vxtrain.errors import UsageError

#: How long a job in a stocked-out region waits PENDING before it fails (``--stockout-after``).
DEFAULT_STOCKOUT_AFTER = 1.0


class Shortage(str, Enum):
    """What a region without capacity does to a job created there."""

    stockout = "stockout"  # PENDING, then FAILED (code 8) after ``after`` seconds
    pending = "pending"    # PENDING until cancelled


class Stockouts:
    """The regions without capacity, changeable while the emulator serves (thread-safe)."""

    def __init__(self, stockout: Iterable[str] = (), pending: Iterable[str] = (),
                 after: float = DEFAULT_STOCKOUT_AFTER) -> None:
        self._lock = threading.Lock()
        self._regions: dict[str, Shortage] = {}
        self.after = after
        for region in stockout:
            self.set(region, Shortage.stockout)
        for region in pending:
            self.set(region, Shortage.pending)

    def set(self, region: str, shortage: Shortage | None) -> None:
        """Make ``region`` short of capacity (``None``: give it capacity again)."""
        with self._lock:
            if shortage is None:
                self._regions.pop(region, None)
            else:
                self._regions[region] = shortage

    def of(self, name: str) -> Shortage | None:
        """The shortage of the region of the job ``name`` (``projects/P/locations/R/...``), if any."""
        with self._lock:
            return self._regions.get(_region_of(name) or "")


def region_warnings(stockout: Iterable[str], pending: Iterable[str]) -> Iterator[str]:
    """What is wrong with ``--stockout``/``--pending`` regions that is worth a warning: one the
    locations page does not list (a typo) would never see a job. A region given to both is a
    UsageError: the two say opposite things of it."""
    stockout, pending = list(stockout), list(pending)
    both = sorted(set(stockout) & set(pending))
    if both:
        raise UsageError(f"--stockout and --pending both name {', '.join(both)}: give each region one of them")
    for flag, regions in (("--stockout", stockout), ("--pending", pending)):
        for region in regions:
            if catalog.region(region) is None:
                yield (f"{flag} {region!r}: not a Vertex AI location (the locations page lists none by that "
                       f"name{_did_you_mean(region)}), so no job is likely to be created there")


class _Limit(Protocol):
    """What a quota limit (quotas.QuotaLimit, a module above this one) says of its place."""

    @property
    def metric(self) -> str: ...

    @property
    def region(self) -> str | None: ...


def quota_region_warnings(limits: Iterable[_Limit]) -> Iterator[str]:
    """A ``--quota METRIC:REGION=N`` whose region is not a Vertex AI location (a typo: the
    limit would never apply), worded as ``--stockout``'s and ``--pending``'s are."""
    for limit in limits:
        region = limit.region
        if region is not None and catalog.region(region) is None:
            yield (f"--quota {limit.metric}:{region}: {region!r} is not a Vertex AI location (the locations page "
                   f"lists none by that name{_did_you_mean(region)}), so this limit never applies to a job")


def _did_you_mean(region: str) -> str:
    near = catalog.near_region(region)
    return f"; did you mean {' or '.join(near)}?" if near else ""


def stockout_message(name: str) -> str:
    """The error message of a job that stocked out: the wording users reported from Vertex AI."""
    return f"Resources are insufficient in region: {_region_of(name) or 'unknown'}. Please try a different region."


def _region_of(name: str) -> str | None:
    """The region of a job's name (``projects/P/locations/R/...``), None when it has none."""
    parts = name.split("/")
    return parts[3] if len(parts) > 3 and parts[2] == "locations" else None
