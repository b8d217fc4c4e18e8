"""The machine rules, table-driven over the whole catalog: every type Vertex AI
training offers validates with its default accelerator setup; every Compute Engine
type it does not offer is refused with offered types to use instead."""
from __future__ import annotations

from typing import Any

import pytest

from vxtrain import catalog, model
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.validation import rules

IMAGE = "us-docker.pkg.dev/p/train/img:1"
OFFERED = catalog.training_machine_types()
NOT_OFFERED = [t for t in catalog.machine_types() if not catalog.offered(t)]


def run(chief: dict[str, Any]) -> list[Diagnostic]:
    data: dict[str, Any] = {"display_name": "t", "region": "us-central1", "chief": {"image": IMAGE, **chief}}
    return rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))


def default_setup(machine_type: str) -> dict[str, Any]:
    """The machine with its built-in GPUs stated (A2/A3/A4/G2/G4), with a specific reservation
    where its GPUs need one (GB200: reservation_requirements.csv); a TPU machine with its
    smallest documented slice (tpu_machines.csv); else alone."""
    builtin = catalog.builtin_accelerator(machine_type)
    chief: dict[str, Any] = {"machine_type": machine_type}
    if builtin is not None:
        chief["accelerator"] = {"type": builtin[0], "count": builtin[1]}
        need = catalog.reservation_requirement(builtin[0])
        if need is not None and need.required:
            chief["reservation"] = {"affinity": "specific", "name": "projects/p/zones/us-central1-a/reservations/r"}
    tpu = catalog.tpu_machine(machine_type)
    if tpu is not None and tpu.sizes[0].topology is not None:
        chief["tpu_topology"] = tpu.sizes[0].topology
    elif tpu is not None:
        chief["accelerator"] = {"type": tpu.sizes[0].accelerator_type, "count": tpu.sizes[0].accelerator_count}
    return chief


@pytest.mark.parametrize("machine_type", OFFERED)
def test_every_offered_type_is_valid(machine_type: str) -> None:
    assert [d for d in run(default_setup(machine_type)) if d.severity == "error"] == []


@pytest.mark.parametrize("machine_type", NOT_OFFERED)
def test_every_type_not_offered_is_refused_with_a_suggestion(machine_type: str) -> None:
    (d,) = [d for d in run(default_setup(machine_type)) if d.severity == "error"]
    assert d.code == "machine-not-offered" and d.path == "chief.machine_type"
    assert f'"{machine_type}" is a Compute Engine type, but Vertex AI training does not offer it' in d.message
    assert "did you mean" in d.message
    assert all(catalog.offered(t) for t in catalog.nearest_offered(machine_type))


def test_the_issue_examples_are_not_offered() -> None:
    for name in ("e2-micro", "n1-standard-1", "e2-standard-2", "n1-highcpu-4", "n2-highcpu-2", "n2-highcpu-4",
                 "n2-highcpu-8", "c3-standard-8", "c2d-standard-8", "n2d-standard-8", "a3-edgegpu-8g",
                 "a3-ultragpu-8g-nolssd"):
        assert name in NOT_OFFERED


@pytest.mark.parametrize("machine_type", [t for t in OFFERED if t.startswith("n1-")])
def test_every_allowed_n1_gpu_combination_is_valid(machine_type: str) -> None:
    allowed = catalog.allowed_accelerators(machine_type)
    assert allowed
    for acc, counts in allowed.items():
        for count in counts:
            assert run({"machine_type": machine_type, "accelerator": {"type": acc, "count": count}}) == []


def test_native_accelerator_count_defaults_to_one() -> None:
    # Native specs may leave count out (schema default 1, always compiled): not Vertex's
    # "Both accelerator_type and accelerator_count" case, which is about the wire form.
    assert run({"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4"}}) == []
