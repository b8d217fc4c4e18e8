"""Placement: which reservation a pool consumes, and the persistent resource a job runs on.

Reservations (RESERVATIONS_DOC; google/cloud/aiplatform/v1/reservation_affinity.proto):
``SPECIFIC_RESERVATION`` "When chosen, the reservation must be identified via
the `key` and `values` fields"; the key is `compute.googleapis.com/reservation-name`
and a value "must be the full resource name of the reservation"
(``projects/{project_id_or_number}/zones/{zone}/reservations/{reservation_name}``);
"Use the following key and values only if the reservationAffinityType is
SPECIFIC_RESERVATION." GB200 machines "Require obtaining capacity using shared
reservations" (configure-compute's GPU list: reservation_requirements.csv).

Spot VMs never consume a reservation: Compute Engine's reservations-consume page
(SPOT_RESERVATION_DOC, read 2026-11-29), "Limitations": "You can't consume a reservation
to create the following Compute Engine resources: Spot VMs or preemptible instances", and
Vertex AI's use-spot-vms page: "All Spot VMs limitations apply when using Spot VMs with
Agent Platform". So ``SPOT`` with a ``specific`` reservation (which consumes that
reservation or nothing) is an error (``reservation-with-spot``); ``any`` only falls back to
other capacity, and passes.

A reservation written through ``extra:`` (machineSpec.reservationAffinity) or a
persistent resource written through ``extra:`` (jobSpec.persistentResourceId) is
what the model holds (model.build lifts it), and every diagnostic is located
where it was written (``model.written_at`` / ``model.job_written_at``), in the
words of the form it was written in.
"""
from __future__ import annotations

import re
from collections.abc import Iterator

from vxtrain import catalog
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import KeyPath, NativeSpec, format_path, get_path
from vxtrain.model import RESERVATION_AFFINITY, RESERVATION_NAME_KEY, Job, Pool, job_written_at, written_at
from vxtrain.validation._common import RS, TRAINING_MACHINES_DOC, key_path, pool_accelerator, scheduling_value
# The ID's pattern, as the JSON Schema checks the native key with it (``match``: the schema's
# ``$`` alone also lets a trailing newline through, so the two agree).
from vxtrain.vocab.resources import PERSISTENT_RESOURCE_ID

RESERVATIONS_DOC = ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
                    "use-reservations")
PERSISTENT_DOC = ("https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/"
                  "persistent-resource-train")
#: The resource pattern of a reservation (reservation_affinity.proto's ``values``).
RESERVATION_NAME = re.compile(r"projects/([^/\s]+)/zones/([^/\s]+)/reservations/([^/\s]+)")
RESERVATION_SHAPE = "projects/PROJECT/zones/ZONE/reservations/NAME"
#: use-reservations, "Limitations and requirements", verbatim: whether it forbids a reservation
#: with FLEX_START or a persistent resource, or says they work apart from it, is unclear
#: (hence a warning, docs/decisions.md).
TOGETHER_QUOTE = ("Flex Start for Dynamic Workload Scheduler and running training jobs on a persistent resource "
                  "are both supported except when using Compute Engine reservations with Agent Platform training.")
_UNSPECIFIED = "TYPE_UNSPECIFIED"
#: Compute Engine, "Consume reservations", Limitations: Spot VMs cannot consume a reservation.
SPOT_RESERVATION_DOC = "https://cloud.google.com/compute/docs/instances/reservations-consume#limitations"
SPOT_DOC = "https://docs.cloud.google.com/gemini-enterprise-agent-platform/machine-learning/training/use-spot-vms"


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Each pool's reservation (its form, its name, GB200's requirement, its company) and the
    persistent resource ID written through ``extra``."""
    reserved: list[Pool] = []
    for pool in job.ordered_pools():
        if pool.reservation is not None:
            yield from _reservation(job, pool, native)
            if pool.reservation.affinity in ("specific", "any"):
                reserved.append(pool)
        if pool.role != RS:
            yield from _required(pool, native)
    if reserved:
        yield from _together(job, reserved, native)
        yield from _spot(job, [p for p in reserved if p.reservation is not None
                               and p.reservation.affinity == "specific"], native)
    yield from _persistent_resource_id(native)


# --- one pool's reservation -------------------------------------------------------------------

class _Where:
    """Where a pool's reservation parts were written, and the words of that form (the API's
    in ``extra`` and in a gcloud config, the native key's otherwise)."""

    def __init__(self, native: NativeSpec, role: str) -> None:
        data = native.data
        self.whole: KeyPath = written_at(data, role, "reservation") or (role,)
        self.extra = self.whole[0] == "extra"
        self.api_words = self.extra or native.format == "gcloud"
        self.affinity: KeyPath = written_at(data, role, "reservation", "affinity") or self.whole
        self.name: KeyPath = written_at(data, role, "reservation", "name") or self.whole
        self.key: KeyPath = written_at(data, role, "reservation", "key") or self.whole

    def affinity_word(self, affinity: str) -> str:
        """``specific`` as the native key writes it, ``SPECIFIC_RESERVATION`` in extra."""
        return RESERVATION_AFFINITY.get(affinity, affinity) if self.api_words else affinity

    @property
    def name_word(self) -> str:
        return "values" if self.api_words else "name"


def _reservation(job: Job, pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    res = pool.reservation
    assert res is not None
    at = _Where(native, pool.role)
    if res.affinity is None:
        if at.extra:  # the native key's affinity is required by the JSON Schema
            yield error("reservation-affinity", f"{format_path(at.whole)} needs reservationAffinityType (required): "
                        "SPECIFIC_RESERVATION, ANY_RESERVATION or NO_RESERVATION "
                        f"({RESERVATIONS_DOC})", **native.where(at.whole))
        return
    if res.affinity == _UNSPECIFIED:
        yield error("reservation-affinity", f"reservationAffinityType {_UNSPECIFIED} \"should not be used\": give "
                    f"SPECIFIC_RESERVATION, ANY_RESERVATION or NO_RESERVATION ({RESERVATIONS_DOC})",
                    **native.where(at.affinity))
        return
    if res.affinity not in RESERVATION_AFFINITY:
        return  # an unknown enum name: the schema (native) or extra.py reports it
    if res.affinity == "specific":
        yield from _specific(job, res.name, res.key, at, native)
    elif res.name is not None or (at.extra and res.key is not None):
        where = at.name if res.name is not None else at.key
        given = f"{at.name_word} \"{res.name}\"" if res.name is not None else f"key \"{res.key}\""
        yield error("reservation-name-unused", f"affinity {at.affinity_word(res.affinity)} takes no reservation "
                    f"name ({given}): only {at.affinity_word('specific')} names one (\"Use the following key and "
                    f"values only if the reservationAffinityType is SPECIFIC_RESERVATION\"); remove "
                    f"{'key and values' if at.api_words else 'name'} or set affinity "
                    f"{at.affinity_word('specific')} ({RESERVATIONS_DOC})", **native.where(where))


def _specific(job: Job, name: str | None, key: str | None, at: _Where, native: NativeSpec) -> Iterator[Diagnostic]:
    """SPECIFIC_RESERVATION: the key, and one full resource name."""
    if at.extra and key != RESERVATION_NAME_KEY and (key is not None or name is not None):
        got = f"got \"{key}\"" if key is not None else "no key is given"
        yield error("reservation-key", f"SPECIFIC_RESERVATION names its reservation with key "
                    f"\"{RESERVATION_NAME_KEY}\" ({got}): set key: {RESERVATION_NAME_KEY} "
                    f"({RESERVATIONS_DOC})", **native.where(at.key))
    if name is None:
        give = (f"key: {RESERVATION_NAME_KEY} and values: [{RESERVATION_SHAPE}] (or ANY_RESERVATION"
                if at.api_words else f"name: {RESERVATION_SHAPE} (or affinity any")
        yield error("reservation-name-missing", f"affinity {at.affinity_word('specific')} consumes only the "
                    f"reservation it names, and none is named: give {give}: any matching reservation, else on "
                    f"demand) ({RESERVATIONS_DOC})", **native.where(at.name))
        return
    match = RESERVATION_NAME.fullmatch(name)
    if match is None:
        yield error("reservation-name", f"reservation {at.name_word} \"{name}\" is not a reservation's full resource "
                    f"name: give {_suggest(job, name)} (a value \"must be the full resource name of the "
                    f"reservation\") ({RESERVATIONS_DOC})", **native.where(at.name))
        return
    zone = match.group(2)
    zone_region = zone.rpartition("-")[0]
    if job.region and zone_region and zone_region != job.region:
        yield warning("reservation-zone", f"reservation zone {zone} is outside the job's region {job.region}: "
                      f"a job's machines run in its region, so it probably cannot consume this reservation; "
                      f"use a reservation in a {job.region} zone ({RESERVATIONS_DOC})", **native.where(at.name))


def _suggest(job: Job, name: str) -> str:
    """The full name to give: ``name`` as its last part when it looks like a bare reservation name."""
    if "/" in name or not name.strip():
        return RESERVATION_SHAPE
    return f"projects/{job.project or 'PROJECT'}/zones/ZONE/reservations/{name.strip()}"


def _together(job: Job, pools: list[Pool], native: NativeSpec) -> Iterator[Diagnostic]:
    """Reservations with FLEX_START or on a persistent resource: the page's wording is unclear, so a
    warning, once for the job, at the first pool's affinity."""
    at = _Where(native, pools[0].role)
    roles = ", ".join(p.role for p in pools)
    what = f"the reservation{'s' if len(pools) > 1 else ''} of {roles}"
    strategy, _ = scheduling_value(job, "strategy")
    if strategy == "FLEX_START":
        yield warning("reservation-with-flex-start", f"{what} with strategy FLEX_START: Google's page says "
                      f"\"{TOGETHER_QUOTE}\" (the two may not combine): use the reservation without FLEX_START, or "
                      f"FLEX_START without the reservation ({RESERVATIONS_DOC})", **native.where(at.affinity))
    if job.persistent_resource is not None:
        yield warning("reservation-with-persistent-resource", f"{what} on persistent resource "
                      f"\"{job.persistent_resource}\": Google's page says \"{TOGETHER_QUOTE}\" (the two may not "
                      f"combine), and the job runs on the resource's machines: reserve capacity for the persistent "
                      f"resource itself, or remove the reservation ({RESERVATIONS_DOC})",
                      **native.where(at.affinity))


def _spot(job: Job, pools: list[Pool], native: NativeSpec) -> Iterator[Diagnostic]:
    """SPOT with a specific reservation: Spot VMs cannot consume one, so the pool gets no machine.
    One error per place the reservation is written (``defaults``: once, naming its pools)."""
    strategy, strategy_at = scheduling_value(job, "strategy")
    if strategy != "SPOT":
        return
    strategy_path = native.where(strategy_at)["path"]
    by_place: dict[KeyPath, list[Pool]] = {}
    for pool in pools:
        by_place.setdefault(_Where(native, pool.role).affinity, []).append(pool)
    for place, reserved in by_place.items():
        at = _Where(native, reserved[0].role)
        roles = " and ".join(p.role for p in reserved)
        yield error("reservation-with-spot", f"{roles} {'consumes' if len(reserved) == 1 else 'consume'} a "
                    f"reservation (affinity {at.affinity_word('specific')}) while the job runs on Spot VMs "
                    f"(strategy SPOT at {strategy_path}), and Spot VMs cannot consume a reservation "
                    f"(Compute Engine: \"You can't consume a reservation to create ... Spot VMs or preemptible "
                    f"instances\", {SPOT_RESERVATION_DOC}; Vertex AI: \"All Spot VMs limitations apply\", "
                    f"{SPOT_DOC}): use strategy STANDARD to run on the reservation, or remove the reservation to "
                    "run on Spot VMs", **native.where(place))


# --- GB200: capacity through a reservation only ---------------------------------------------

def _required(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    acc, _ = pool_accelerator(pool)
    need = catalog.reservation_requirement(acc) if acc is not None else None
    if need is None or not need.required:
        return
    res = pool.reservation
    if res is not None and res.affinity == "specific":
        return
    at = _Where(native, pool.role)
    if res is None:
        where = key_path(native, pool.role, "machine_type")
        got = "no reservation"
    else:
        where = at.affinity
        got = f"reservation affinity {at.affinity_word(res.affinity or '')}"
    add = (f"reservationAffinity {{reservationAffinityType: SPECIFIC_RESERVATION, key: {RESERVATION_NAME_KEY}, "
           f"values: [{RESERVATION_SHAPE}]}} to its machineSpec" if at.api_words else
           f"reservation: {{affinity: specific, name: {RESERVATION_SHAPE}}} to the pool or defaults")
    yield error("reservation-required", f"{pool.machine_type} ({acc}) \"{need.quote}\" (Vertex AI training's GPU "
                f"list), and this pool has {got}: add {add} (a reservation shared with Vertex AI) "
                f"({TRAINING_MACHINES_DOC}#gpus, {RESERVATIONS_DOC})", **native.where(where))


# --- jobSpec.persistentResourceId through extra ----------------------------------------------

def _persistent_resource_id(native: NativeSpec) -> Iterator[Diagnostic]:
    """The JSON Schema checks the native key's ID; ``extra``'s gets the same check here."""
    at = job_written_at(native.data, "persistent_resource")
    if at is None or at[0] != "extra":
        return
    value = get_path(native.data, at)
    if not isinstance(value, str) or PERSISTENT_RESOURCE_ID.match(value):
        return  # a value of the wrong type is extra.py's to report
    tail = value.rstrip("/").rpartition("/persistentResources/")[2] if "/persistentResources/" in value else None
    hint = (f"give the ID \"{tail}\", not the resource name" if tail and PERSISTENT_RESOURCE_ID.match(tail)
            else "give the resource's ID: lowercase letters, digits and hyphens, starting with a letter, at most "
                 "63 characters")
    yield error("persistent-resource-id", f"{format_path(at)} \"{value}\" is not a persistent resource ID: {hint} "
                f"(the resource runs in the job's project and region) ({PERSISTENT_DOC})", **native.where(at))
