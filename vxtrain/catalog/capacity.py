"""How a job gets its machines: which accelerators Dynamic Workload Scheduler
(``FLEX_START``) runs, and which ones Vertex AI training only offers through a
reservation.

Data: ``flex_start_accelerators.csv`` (the schedule-jobs-dws page's GPU list,
one row per training accelerator) and ``reservation_requirements.csv`` (the
configure-compute page's reservation marks). A machine type's built-in GPUs
come from ``gpu_machines.csv`` (:func:`vxtrain.catalog.machines.builtin_accelerator`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from vxtrain.catalog.tables import rows

#: The longest ``scheduling.timeout`` of a FLEX_START job: "Your serverless training job has
#: a maximum `timeout` of 7 days or less." (schedule-jobs-dws, flex_start_accelerators.csv's header).
FLEX_START_MAX_TIMEOUT_S = 7 * 86400


@dataclass(frozen=True)
class FlexStart:
    """One accelerator's row of flex_start_accelerators.csv."""

    accelerator: str
    allowed: bool
    note: str
    confidence: str
    source: str


@dataclass(frozen=True)
class ReservationRequirement:
    """One accelerator's row of reservation_requirements.csv (``required`` or ``recommended``)."""

    accelerator: str
    requirement: str
    quote: str
    source: str

    @property
    def required(self) -> bool:
        """True when the page makes a reservation a requirement (not a recommendation)."""
        return self.requirement == "required"


@functools.cache
def _flex_start() -> dict[str, FlexStart]:
    return {r["accelerator"]: FlexStart(r["accelerator"], r["flex_start"] == "yes", r["note"], r["confidence"],
                                        r["source"])
            for r in rows("flex_start_accelerators.csv")}


@functools.cache
def _reservations() -> dict[str, ReservationRequirement]:
    return {r["accelerator"]: ReservationRequirement(r["accelerator"], r["requirement"], r["quote"], r["source"])
            for r in rows("reservation_requirements.csv")}


def flex_start(accelerator_type: str) -> FlexStart | None:
    """Whether FLEX_START runs ``accelerator_type`` (None: not in the table, e.g. a typo)."""
    return _flex_start().get(accelerator_type)


def flex_start_accelerators() -> tuple[str, ...]:
    """The accelerators FLEX_START runs, in the table's order."""
    return tuple(name for name, row in _flex_start().items() if row.allowed)


def reservation_requirement(accelerator_type: str) -> ReservationRequirement | None:
    """What the configure-compute page says about reserving ``accelerator_type`` (None: nothing)."""
    return _reservations().get(accelerator_type)
