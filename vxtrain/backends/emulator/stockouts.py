"""Regions without capacity: ``--stockout REGION`` and ``--pending REGION``.

Vertex AI tells of a stockout late: the job is accepted, sits QUEUED/PENDING,
and ends FAILED with "Resources are insufficient in region: REGION" (observed
in user reports; the message and code 8, RESOURCE_EXHAUSTED, are what the
emulator answers, see README "Emulator"). A job can also stay PENDING with no
end in sight (https://cloud.google.com/vertex-ai/docs/training/understanding-training-service:
"might remain in the JOB_STATE_QUEUED state for some time"). This module says
which of the two a region suffers; the store walks the job accordingly.

A job can also lose its machines after it started (``--preempt REGION:AFTER[:COUNT]``):
a preempted Spot VM, or any job whose hosts go away. Vertex AI restarts a preempted
Spot job a few times, then ends it FAILED with a STOCKOUT error
(https://cloud.google.com/vertex-ai/docs/training/use-spot-vms, read 2026-11-27);
the emulator ends it at once, with its replicas stopped as a cancel stops them and
the stockout error above, so the fallback ladder's capacity test knows it.
"""
from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

from vxtrain import catalog
from vxtrain.errors import UsageError
from vxtrain.model import DURATION_MAX_SECONDS

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


@dataclass(frozen=True)
class Preemption:
    """``--preempt REGION:AFTER[:COUNT]``: jobs in ``region`` lose their machines once they
    have been RUNNING ``after`` seconds; the first ``count`` jobs created there (None: every one)."""

    region: str
    after: float
    count: int | None = None


_PREEMPT_FORM = "REGION:AFTER[:COUNT] (e.g. us-central1:30 or us-central1:2.5:1)"


def parse_preempt(text: str) -> Preemption:
    """``us-central1:30:1`` → Preemption; anything else is a UsageError naming the form and the fix."""
    parts = text.strip().split(":")
    if len(parts) not in (2, 3) or not parts[0]:
        raise UsageError(f"--preempt takes {_PREEMPT_FORM}; got {text!r}")
    after = _finite(parts[1])
    if after is None or not 0 <= after <= DURATION_MAX_SECONDS:  # also NaN and inf
        raise UsageError(f"--preempt {text!r}: AFTER is the seconds a job runs before it loses its machines, "
                         f"a number from 0 to {DURATION_MAX_SECONDS:,}; got {parts[1]!r}")
    count = int(parts[2]) if len(parts) == 3 and parts[2].isdecimal() else None
    if len(parts) == 3 and (count is None or count < 1):
        raise UsageError(f"--preempt {text!r}: COUNT is how many of the region's jobs are preempted, a whole "
                         f"number from 1 (leave it out for every job); got {parts[2]!r}")
    return Preemption(parts[0], after, count)


def _finite(text: str) -> float | None:
    """``text`` as a finite number, None when it is none (``nan``, ``inf``, words)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


class Preemptions:
    """The ``--preempt`` rules and how many jobs each has taken (thread-safe).

    A job created in a rule's region takes the first rule there with jobs left (rules of one
    region are used up in the order given), so ``us-east1:5:1`` then ``us-east1:60`` preempts
    the first job there after 5 s and every later one after 60 s."""

    def __init__(self, rules: Iterable[Preemption | str] = ()) -> None:
        self._lock = threading.Lock()
        self._rules = [parse_preempt(r) if isinstance(r, str) else r for r in rules]
        self._taken = [0] * len(self._rules)

    def add(self, rule: Preemption | str) -> None:
        """Add a rule while serving (a Preemption or its ``REGION:AFTER[:COUNT]`` text)."""
        with self._lock:
            self._rules.append(parse_preempt(rule) if isinstance(rule, str) else rule)
            self._taken.append(0)

    def claim(self, name: str) -> float | None:
        """The seconds the new job ``name`` may run before it loses its machines (None: it keeps
        them); a job that gets a number counts against its rule's COUNT."""
        region = _region_of(name)
        with self._lock:
            for index, rule in enumerate(self._rules):
                if rule.region == region and (rule.count is None or self._taken[index] < rule.count):
                    self._taken[index] += 1
                    return rule.after
        return None


def region_warnings(stockout: Iterable[str], pending: Iterable[str],
                    preempt: Iterable[Preemption] = ()) -> Iterator[str]:
    """What is wrong with ``--stockout``/``--pending``/``--preempt`` regions that is worth a
    warning: one the locations page does not list (a typo) would never see a job. A region
    given to both ``--stockout`` and ``--pending`` is a UsageError: the two say opposite things of it."""
    stockout, pending = list(stockout), list(pending)
    both = sorted(set(stockout) & set(pending))
    if both:
        raise UsageError(f"--stockout and --pending both name {', '.join(both)}: give each region one of them")
    preempted = list(dict.fromkeys(rule.region for rule in preempt))
    for flag, regions in (("--stockout", stockout), ("--pending", pending), ("--preempt", preempted)):
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
