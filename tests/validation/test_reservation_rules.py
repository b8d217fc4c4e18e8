"""Placement rules: reservations (native key and extra's reservationAffinity), GB200's reservation,
the persistent resource ID written through extra; one table row per rule and variant."""
from __future__ import annotations

import copy
import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from vxtrain import api, catalog, model
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.validation import reservation_rules, rules
from vxtrain.vocab import resources
from tests.validation.specs import E, W, changed

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
NAME = "projects/p/zones/us-central1-a/reservations/r"
A100 = {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}}
GB200 = {"machine_type": "a4x-highgpu-4g", "accelerator": {"type": "NVIDIA_GB200", "count": 4}}
BASE: dict[str, Any] = {"display_name": "t", "region": "us-central1", "defaults": {"image": IMAGE}, "chief": A100}
EXTRA_RA = "extra.jobSpec.workerPoolSpecs[0].machineSpec.reservationAffinity"


def spec(**changes: Any) -> dict[str, Any]:
    """BASE with top-level keys replaced (None deletes); dict values merge one level deep."""
    return changed(BASE, **changes)


def res(affinity: str, name: str | None = None) -> dict[str, Any]:
    return {"affinity": affinity} | ({"name": name} if name is not None else {})


def chief(**more: Any) -> dict[str, Any]:
    return {**copy.deepcopy(A100), **more}


def extra_affinity(affinity: dict[str, Any], pool: int = 0) -> dict[str, Any]:
    """extra setting pool ``pool``'s machineSpec.reservationAffinity."""
    pools: list[dict[str, Any]] = [{} for _ in range(pool)] + [{"machineSpec": {"reservationAffinity": affinity}}]
    return {"jobSpec": {"workerPoolSpecs": pools}}


def run(data: dict[str, Any]) -> list[Diagnostic]:
    return rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((d.severity, d.code, d.path) for d in run(data) if d.code.startswith(CODES))


CODES = ("reservation", "persistent-resource", "extra-")


SPECIFIC_EXTRA = {"reservationAffinityType": "SPECIFIC_RESERVATION",
                  "key": "compute.googleapis.com/reservation-name", "values": [NAME]}

CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    # the native key
    ("specific", spec(chief=chief(reservation=res("specific", NAME))), []),
    ("any", spec(chief=chief(reservation=res("any"))), []),
    ("none", spec(chief=chief(reservation=res("none"))), []),
    ("in-defaults", spec(defaults={"image": IMAGE, "reservation": res("specific", NAME)},
                         workers={**A100, "replicas": 2}), []),
    ("specific-without-name", spec(chief=chief(reservation=res("specific"))),
     [E("reservation-name-missing", "chief.reservation.name")]),  # the line: reservation's
    ("specific-bare-name", spec(chief=chief(reservation=res("specific", "r"))),
     [E("reservation-name", "chief.reservation.name")]),
    ("specific-region-name", spec(chief=chief(reservation=res("specific", "projects/p/regions/us-central1/"
                                                                         "reservations/r"))),
     [E("reservation-name", "chief.reservation.name")]),
    ("specific-trailing-slash", spec(chief=chief(reservation=res("specific", NAME + "/"))),
     [E("reservation-name", "chief.reservation.name")]),
    ("specific-project-number", spec(chief=chief(reservation=res("specific", "projects/123456/zones/us-central1-f/"
                                                                            "reservations/gpu-pool"))), []),
    ("any-with-name", spec(chief=chief(reservation=res("any", NAME))),
     [E("reservation-name-unused", "chief.reservation.name")]),
    ("none-with-name", spec(chief=chief(reservation=res("none", NAME))),
     [E("reservation-name-unused", "chief.reservation.name")]),
    ("zone-outside-region", spec(chief=chief(reservation=res("specific", "projects/p/zones/europe-west4-a/"
                                                                        "reservations/r"))),
     [W("reservation-zone", "chief.reservation.name")]),
    ("zone-no-region", spec(region=None, chief=chief(reservation=res("specific", "projects/p/zones/europe-west4-a/"
                                                                                 "reservations/r"))), []),
    ("bad-name-in-defaults-once", spec(defaults={"image": IMAGE, "reservation": res("specific", "r")},
                                       workers={**A100, "replicas": 2}),
     [E("reservation-name", "defaults.reservation.name")]),
    # GB200 needs a specific reservation (the false accept)
    ("gb200-without", spec(chief=GB200), [E("reservation-required", "chief.machine_type")]),
    ("gb200-any", spec(chief={**GB200, "reservation": res("any")}),
     [E("reservation-required", "chief.reservation.affinity")]),
    ("gb200-none", spec(chief={**GB200, "reservation": res("none")}),
     [E("reservation-required", "chief.reservation.affinity")]),
    ("gb200-specific", spec(chief={**GB200, "reservation": res("specific", NAME)}), []),
    ("gb200-in-defaults", spec(chief=None, defaults={"image": IMAGE, **GB200, "reservation": res("specific", NAME)})
     | {"chief": {}, "workers": {"replicas": 3}}, []),
    ("gb200-workers-without", spec(chief={**GB200, "reservation": res("specific", NAME)},
                                   workers={**GB200, "replicas": 2}),
     [E("reservation-required", "workers.machine_type")]),
    ("gb200-extra-specific", spec(chief=GB200, extra=extra_affinity(SPECIFIC_EXTRA)), []),
    ("b200-recommended-only", spec(chief={"machine_type": "a4-highgpu-8g",
                                          "accelerator": {"type": "NVIDIA_B200", "count": 8}}), []),
    # with FLEX_START or a persistent resource: warnings, once for the job
    ("with-flex-start", spec(chief={"machine_type": "a2-highgpu-1g", "reservation": res("specific", NAME),
                                    "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}},
                             workers={**A100, "replicas": 2, "reservation": res("any")},
                             scheduling={"strategy": "FLEX_START"}),
     [W("reservation-with-flex-start", "chief.reservation.affinity")]),
    ("none-with-flex-start", spec(chief=chief(reservation=res("none")), scheduling={"strategy": "FLEX_START"}), []),
    ("with-persistent-resource", spec(chief=chief(reservation=res("any")), persistent_resource="pool-1"),
     [W("reservation-with-persistent-resource", "chief.reservation.affinity")]),
    # SPOT cannot consume a reservation (Compute Engine's limitation; "All Spot VMs limitations apply")
    ("spot-with-specific", spec(chief=chief(reservation=res("specific", NAME)), scheduling={"strategy": "SPOT"}),
     [E("reservation-with-spot", "chief.reservation.affinity")]),
    ("spot-with-specific-in-defaults-once", spec(defaults={"image": IMAGE, "reservation": res("specific", NAME)},
                                                 workers={**A100, "replicas": 2}, scheduling={"strategy": "SPOT"}),
     [E("reservation-with-spot", "defaults.reservation.affinity")]),
    ("spot-with-any", spec(chief=chief(reservation=res("any")), scheduling={"strategy": "SPOT"}), []),
    ("spot-with-none", spec(chief=chief(reservation=res("none")), scheduling={"strategy": "SPOT"}), []),
    ("spot-in-extra-with-specific", spec(chief=chief(reservation=res("specific", NAME)),
                                         extra={"jobSpec": {"scheduling": {"strategy": "SPOT"}}}),
     [E("reservation-with-spot", "chief.reservation.affinity")]),
    ("spot-with-specific-in-extra", spec(scheduling={"strategy": "SPOT"}, extra=extra_affinity(SPECIFIC_EXTRA)),
     [E("reservation-with-spot", f"{EXTRA_RA}.reservationAffinityType")]),
    ("standard-with-specific", spec(chief=chief(reservation=res("specific", NAME)),
                                    scheduling={"strategy": "STANDARD"}), []),
    # extra: machineSpec.reservationAffinity, at its own lines
    ("extra-specific", spec(extra=extra_affinity(SPECIFIC_EXTRA)), []),
    ("extra-specific-unnamed", spec(extra=extra_affinity({"reservationAffinityType": "SPECIFIC_RESERVATION"})),
     [E("reservation-name-missing", f"{EXTRA_RA}.values[0]")]),
    ("extra-specific-no-key", spec(extra=extra_affinity({"reservationAffinityType": "SPECIFIC_RESERVATION",
                                                         "values": [NAME]})),
     [E("reservation-key", f"{EXTRA_RA}.key")]),
    ("extra-specific-wrong-key", spec(extra=extra_affinity({**SPECIFIC_EXTRA, "key": "reservation-name"})),
     [E("reservation-key", f"{EXTRA_RA}.key")]),
    ("extra-specific-bare-value", spec(extra=extra_affinity({**SPECIFIC_EXTRA, "values": ["r"]})),
     [E("reservation-name", f"{EXTRA_RA}.values[0]")]),
    ("extra-any-with-values", spec(extra=extra_affinity({"reservationAffinityType": "ANY_RESERVATION",
                                                         "values": [NAME]})),
     [E("reservation-name-unused", f"{EXTRA_RA}.values[0]")]),
    ("extra-no-type", spec(extra=extra_affinity({"key": "compute.googleapis.com/reservation-name",
                                                 "values": [NAME]})),
     [E("reservation-affinity", EXTRA_RA)]),
    ("extra-unspecified", spec(extra=extra_affinity({"reservationAffinityType": "TYPE_UNSPECIFIED"})),
     [E("reservation-affinity", f"{EXTRA_RA}.reservationAffinityType")]),
    ("extra-typo-is-extras", spec(extra=extra_affinity({"reservationAffinityType": "SPECIFIC"})),
     [E("extra-enum", f"{EXTRA_RA}.reservationAffinityType")]),
    ("extra-overrides-native", spec(chief=chief(reservation=res("specific", NAME)),
                                    extra=extra_affinity({"reservationAffinityType": "SPECIFIC_RESERVATION"})),
     [E("reservation-name-missing", f"{EXTRA_RA}.values[0]")]),
    ("extra-workers", spec(workers={**A100, "replicas": 2},
                           extra=extra_affinity({"reservationAffinityType": "SPECIFIC_RESERVATION"}, pool=1)),
     [E("reservation-name-missing",
        "extra.jobSpec.workerPoolSpecs[1].machineSpec.reservationAffinity.values[0]")]),
    # persistent_resource: the native key is the schema's; extra's is checked here
    ("persistent-resource", spec(persistent_resource="pool-1"), []),
    ("extra-persistent-resource", spec(extra={"jobSpec": {"persistentResourceId": "pool-1"}}), []),
    ("extra-persistent-resource-path", spec(extra={"jobSpec": {
        "persistentResourceId": "projects/p/locations/us-central1/persistentResources/pool-1"}}),
     [E("persistent-resource-id", "extra.jobSpec.persistentResourceId")]),
    ("extra-persistent-resource-upper", spec(extra={"jobSpec": {"persistentResourceId": "Pool_1"}}),
     [E("persistent-resource-id", "extra.jobSpec.persistentResourceId")]),
    ("extra-persistent-resource-long", spec(extra={"jobSpec": {"persistentResourceId": "p" * 64}}),
     [E("persistent-resource-id", "extra.jobSpec.persistentResourceId")]),
    ("extra-persistent-resource-63", spec(extra={"jobSpec": {"persistentResourceId": "p" * 63}}), []),
    ("extra-persistent-resource-hyphen-end", spec(extra={"jobSpec": {"persistentResourceId": "pool-"}}),
     [E("persistent-resource-id", "extra.jobSpec.persistentResourceId")]),
    ("extra-persistent-resource-number", spec(extra={"jobSpec": {"persistentResourceId": 12}}),
     [E("extra-type", "extra.jobSpec.persistentResourceId")]),
]


@pytest.mark.parametrize("data, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


@pytest.mark.parametrize("data, code, words", [
    (spec(chief=chief(reservation=res("specific"))), "reservation-name-missing",
     ["affinity specific", "name: projects/PROJECT/zones/ZONE/reservations/NAME", "affinity any"]),
    (spec(project="proj", chief=chief(reservation=res("specific", "r"))), "reservation-name",
     ['"r"', "projects/proj/zones/ZONE/reservations/r", "full resource name"]),
    (spec(chief=chief(reservation=res("any", NAME))), "reservation-name-unused",
     ["affinity any", "only specific names one", "remove name"]),
    (spec(extra=extra_affinity({"reservationAffinityType": "SPECIFIC_RESERVATION"})), "reservation-name-missing",
     ["SPECIFIC_RESERVATION", "key: compute.googleapis.com/reservation-name",
      "values: [projects/PROJECT/zones/ZONE/reservations/NAME]", "ANY_RESERVATION"]),
    (spec(extra=extra_affinity({**SPECIFIC_EXTRA, "key": "name"})), "reservation-key",
     ['got "name"', "compute.googleapis.com/reservation-name"]),
    (spec(extra=extra_affinity({"reservationAffinityType": "NO_RESERVATION", "values": [NAME]})),
     "reservation-name-unused", ["affinity NO_RESERVATION", "only SPECIFIC_RESERVATION", "remove key and values"]),
    (spec(chief=GB200), "reservation-required",
     ["a4x-highgpu-4g (NVIDIA_GB200)", '"Requires obtaining capacity using shared reservations."',
      "no reservation", "affinity: specific"]),
    (spec(chief=chief(reservation=res("specific", "projects/p/zones/europe-west4-a/reservations/r"))),
     "reservation-zone", ["europe-west4-a", "us-central1"]),
    (spec(chief=chief(reservation=res("specific", NAME)), workers={**A100, "replicas": 2, "reservation": res("any")},
          scheduling={"strategy": "FLEX_START"}), "reservation-with-flex-start",
     ["the reservations of chief, workers", reservation_rules.TOGETHER_QUOTE, "use-reservations"]),
    (spec(extra={"jobSpec": {"persistentResourceId": "projects/p/locations/l/persistentResources/pool-1"}}),
     "persistent-resource-id", ['give the ID "pool-1", not the resource name']),
    (spec(extra={"jobSpec": {"persistentResourceId": "Pool_1"}}), "persistent-resource-id",
     ["lowercase letters, digits and hyphens"]),
])
def test_message_names_the_value_and_what_is_accepted(data: dict[str, Any], code: str, words: list[str]) -> None:
    (diag,) = [d for d in run(data) if d.code == code]
    for word in words:
        assert word in diag.message, (word, diag.message)


def test_the_id_pattern_is_the_schemas() -> None:
    schema = json.loads((Path(rules.__file__).parent / "schema.json").read_text())
    assert schema["properties"]["persistent_resource"]["pattern"] == resources.PERSISTENT_RESOURCE_ID.pattern


def test_reservation_requirements_are_sourced_and_known() -> None:
    """GB200 is the one required; every row is an accelerator the training list offers."""
    from vxtrain.catalog.tables import rows  # the raw rows, not the lookup

    table = list(rows("reservation_requirements.csv"))
    assert [r["accelerator"] for r in table if r["requirement"] == "required"] == ["NVIDIA_GB200"]
    assert {r["requirement"] for r in table} == {"required", "recommended"}
    assert all(catalog.training_accelerator(r["accelerator"]) for r in table)
    need = catalog.reservation_requirement("NVIDIA_GB200")
    assert need is not None and need.required and need.quote == "Requires obtaining capacity using shared reservations."
    assert catalog.reservation_requirement("NVIDIA_H100_80GB") is None


def test_gb200_machines_come_from_the_catalog() -> None:
    """The rule finds GB200 machines through gpu_machines.csv, not their name."""
    required = [m for m in catalog.training_machine_types()
                if (b := catalog.builtin_accelerator(m)) and (n := catalog.reservation_requirement(b[0])) and n.required]
    assert required == ["a4x-highgpu-4g"]


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_extra_specific_without_a_name_is_refused_at_its_extra_line(tmp_path: Path) -> None:
    """The issue: `{reservationAffinityType: SPECIFIC_RESERVATION}` with no reservation named validated clean."""
    path = _write(tmp_path, """
        display_name: t
        region: us-central1
        chief: {machine_type: n1-standard-8, image: us-docker.pkg.dev/p/t/i:1}
        extra:
          jobSpec:
            workerPoolSpecs:
              - machineSpec:
                  reservationAffinity: {reservationAffinityType: SPECIFIC_RESERVATION}
        """)
    result = api.check_file(path)
    assert not result.valid
    (diag,) = [d for d in result.diagnostics if d.severity == "error"]
    assert (diag.code, diag.line) == ("reservation-name-missing", 8)


def test_native_key_located_at_its_line(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        display_name: t
        region: us-central1
        chief:
          machine_type: a4x-highgpu-4g
          accelerator: {type: NVIDIA_GB200, count: 4}
          image: us-docker.pkg.dev/p/t/i:1
        workers:
          replicas: 2
          machine_type: a2-highgpu-1g
          accelerator: {type: NVIDIA_TESLA_A100, count: 1}
          image: us-docker.pkg.dev/p/t/i:1
          reservation:
            affinity: any
            name: projects/p/zones/us-central1-a/reservations/r
        """)
    result = api.check_file(path)
    at = {d.code: (d.line, d.path) for d in result.diagnostics if d.severity == "error"}
    assert at == {"reservation-required": (4, "chief.machine_type"),
                  "reservation-name-unused": (14, "workers.reservation.name")}


def test_gcloud_reservation_is_located_at_its_own_keys(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        workerPoolSpecs:
          - machineSpec:
              machineType: a2-highgpu-1g
              acceleratorType: NVIDIA_TESLA_A100
              acceleratorCount: 1
              reservationAffinity:
                reservationAffinityType: SPECIFIC_RESERVATION
                key: compute.googleapis.com/reservation-name
                values: [my-reservation]
            replicaCount: 1
            containerSpec: {imageUri: us-docker.pkg.dev/p/t/i:1}
        """)
    result = api.check_file(path)
    (diag,) = [d for d in result.diagnostics if d.severity == "error"]
    assert diag.code == "reservation-name" and diag.line == 9


def test_a_valid_reservation_compiles(tmp_path: Path) -> None:
    path = _write(tmp_path, f"""
        display_name: t
        region: us-central1
        chief:
          machine_type: a4x-highgpu-4g
          accelerator: {{type: NVIDIA_GB200, count: 4}}
          image: us-docker.pkg.dev/p/t/i:1
          reservation: {{affinity: specific, name: "{NAME}"}}
        """)
    result = api.check_file(path)
    assert result.valid, [d.render() for d in result.diagnostics]
    assert result.custom_job is not None
    spec_ = result.custom_job["jobSpec"]["workerPoolSpecs"][0]["machineSpec"]
    assert spec_["reservationAffinity"] == {"reservationAffinityType": "SPECIFIC_RESERVATION",
                                            "key": "compute.googleapis.com/reservation-name", "values": [NAME]}


def test_gcloud_config_is_told_in_its_own_words(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        workerPoolSpecs:
          - machineSpec:
              machineType: a4x-highgpu-4g
              acceleratorType: NVIDIA_GB200
              acceleratorCount: 4
              reservationAffinity: {reservationAffinityType: ANY_RESERVATION}
            replicaCount: 1
            containerSpec: {imageUri: us-docker.pkg.dev/p/t/i:1}
          - machineSpec:
              machineType: a4x-highgpu-4g
              acceleratorType: NVIDIA_GB200
              acceleratorCount: 4
              reservationAffinity: {reservationAffinityType: SPECIFIC_RESERVATION}
            replicaCount: 1
            containerSpec: {imageUri: us-docker.pkg.dev/p/t/i:1}
        """)
    result = api.check_file(path)
    first, second = sorted((d for d in result.diagnostics if d.severity == "error"), key=lambda d: d.line or 0)
    assert (first.code, first.line, first.path) == (
        "reservation-required", 6, "workerPoolSpecs[0].machineSpec.reservationAffinity.reservationAffinityType")
    assert "affinity ANY_RESERVATION" in first.message and "reservationAffinityType: SPECIFIC_RESERVATION" in first.message
    assert (second.code, second.line) == ("reservation-name-missing", 13)
    assert "values: [projects/PROJECT/zones/ZONE/reservations/NAME]" in second.message
