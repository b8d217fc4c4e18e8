"""The machine catalog: data integrity and every lookup, table-driven."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from vxtrain import catalog
from vxtrain.catalog import Egress

CATALOG_DIR = Path(catalog.__file__).parent
CSV_FILES = sorted(CATALOG_DIR.glob("*.csv"))
CONFIDENCE = {"documented", "copied", "derived", "unverified"}  # copied: prices.csv only


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))


# --- the data itself ----------------------------------------------------------

@pytest.mark.parametrize("path", CSV_FILES, ids=lambda p: p.name)
def test_every_row_has_a_source_and_confidence(path: Path) -> None:
    rows = _rows(path)
    assert rows
    for row in rows:
        assert row["source"].startswith("https://"), row
        assert row["confidence"] in CONFIDENCE, row
        assert row["as_of"], row


def test_csv_files_are_the_package_data() -> None:
    assert {p.name for p in CSV_FILES} == {
        "accelerators.csv", "gpu_machines.csv", "machines.csv", "n1_gpu_egress.csv", "n1_gpu_limits.csv",
        "prices.csv"}


def test_every_gpu_machine_is_a_catalog_machine() -> None:
    for row in _rows(CATALOG_DIR / "gpu_machines.csv"):
        assert catalog.machine(row["machine_type"]) is not None, row


def test_n1_egress_rows_are_exactly_the_allowed_n1_combinations() -> None:
    combos = {(r["machine_type"], r["accelerator"], int(r["count"]))
              for r in _rows(CATALOG_DIR / "n1_gpu_egress.csv")}
    allowed = {(m, acc, n) for m in catalog.machine_types() if m.startswith("n1-")
               for acc, counts in (catalog.allowed_accelerators(m) or {}).items() for n in counts}
    assert combos == allowed


def test_only_the_documented_v100_t4_example_is_documented() -> None:
    documented = [(r["machine_type"], r["accelerator"], r["count"])
                  for r in _rows(CATALOG_DIR / "n1_gpu_egress.csv")
                  if r["accelerator"] in ("NVIDIA_TESLA_V100", "NVIDIA_TESLA_T4")
                  and r["confidence"] == "documented"]
    assert documented == [("n1-highmem-96", "NVIDIA_TESLA_V100", "8")]


# --- machine / machine_types ----------------------------------------------------

@pytest.mark.parametrize("name, vcpu, memory, egress", [
    ("n1-highcpu-16", 16, 14.4, 32.0),
    ("n1-standard-1", 1, 3.75, 2.0),
    ("n1-highmem-96", 96, 624.0, 32.0),
    ("e2-standard-8", 8, 32.0, 16.0),
    ("c3-standard-88", 88, 352.0, 62.0),
    ("a2-highgpu-8g", 96, 680.0, 100.0),
    ("g2-standard-4", 4, 16.0, 10.0),
    ("a3-highgpu-1g", 26, 234.0, None),
])
def test_machine(name: str, vcpu: int, memory: float, egress: float | None) -> None:
    m = catalog.machine(name)
    assert m is not None
    assert (m.name, m.vcpu, m.memory_gb, m.egress_gbps) == (name, vcpu, memory, egress)


@pytest.mark.parametrize("name", ["n1-standard-12", "N1-STANDARD-8", "", "a4-highgpu-8g"])
def test_machine_absent(name: str) -> None:
    assert catalog.machine(name) is None


def test_machine_types_sorted_and_complete() -> None:
    types = catalog.machine_types()
    assert types == sorted(types)
    assert len(types) == 182
    assert "n1-highcpu-16" in types


# --- near_miss ----------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("n1-standrad-8", "n1-standard-8"),
    ("n1-stadard-8", "n1-standard-8"),
    ("N1-STANDARD-8", "n1-standard-8"),
    ("n1_highmem_96", "n1-highmem-96"),
    ("n1-highmem96", "n1-highmem-96"),
    ("n1-higmem-96", "n1-highmem-96"),
    ("a2-highgpu-8", "a2-highgpu-8g"),
    ("e2-standart-4", "e2-standard-4"),
    ("a4-highgpu-8g", None),       # a newer series, not a typo of a3
    ("n1-standard-12", None),      # no such size: unknown, not a typo
    ("tpu-v4-pod", None),
    ("n1-standard-8", None),       # exact: nothing to suggest
    ("n1-sdtnraad-8", None),       # too far
])
def test_near_miss(name: str, expected: str | None) -> None:
    assert catalog.near_miss(name) == expected


# --- accelerators --------------------------------------------------------------

def test_accelerator_types_come_from_installed_package() -> None:
    types = catalog.accelerator_types()
    assert "NVIDIA_TESLA_V100" in types and "TPU_V2" in types
    assert not any(t.endswith("UNSPECIFIED") for t in types)


def test_catalog_accelerators_match_the_real_enum() -> None:
    """Fails when google-cloud-aiplatform gains (or drops) an accelerator: update accelerators.csv."""
    from google.cloud.aiplatform_v1.types import AcceleratorType

    real = {e.name for e in AcceleratorType if e.value != 0}
    assert set(catalog.catalog_accelerators()) == real
    assert set(catalog.accelerator_types()) == real


def test_accelerator_types_does_not_import_aiplatform() -> None:
    code = ("import sys; from vxtrain import catalog; t = catalog.accelerator_types(); "
            "assert 'NVIDIA_L4' in t, t; "
            "bad = [m for m in sys.modules if m.startswith('google.cloud.aiplatform')]; "
            "assert not bad, bad")
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True,
                          env={"PYTHONPATH": str(root)}, timeout=60)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name, deprecated", [("NVIDIA_TESLA_K80", True), ("NVIDIA_TESLA_T4", False)])
def test_deprecated_accelerator(name: str, deprecated: bool) -> None:
    assert catalog.deprecated_accelerator(name) is deprecated


V100 = "NVIDIA_TESLA_V100"
T4 = "NVIDIA_TESLA_T4"
P4 = "NVIDIA_TESLA_P4"
P100 = "NVIDIA_TESLA_P100"
K80 = "NVIDIA_TESLA_K80"


@pytest.mark.parametrize("machine_type, expected", [
    ("n1-standard-4", {V100: (1, 2, 4, 8), T4: (1, 2, 4), P4: (1, 2, 4), P100: (1, 2, 4), K80: (1, 2, 4, 8)}),
    ("n1-highmem-96", {V100: (8,), T4: (4,), P4: (4,), P100: (4,)}),
    ("n1-standard-16", {V100: (2, 4, 8), T4: (1, 2, 4), P4: (1, 2, 4), P100: (1, 2, 4), K80: (2, 4, 8)}),
    ("n1-highmem-32", {V100: (4, 8), T4: (1, 2, 4), P4: (2, 4), P100: (2, 4), K80: (4, 8)}),
    ("a2-highgpu-1g", {"NVIDIA_TESLA_A100": (1,)}),
    ("a2-megagpu-16g", {"NVIDIA_TESLA_A100": (16,)}),
    ("a2-ultragpu-4g", {"NVIDIA_A100_80GB": (4,)}),
    ("a3-highgpu-8g", {"NVIDIA_H100_80GB": (8,)}),
    ("a3-megagpu-8g", {"NVIDIA_H100_MEGA_80GB": (8,)}),
    ("a3-ultragpu-8g", {"NVIDIA_H200_141GB": (8,)}),
    ("g2-standard-8", {"NVIDIA_L4": (1,)}),
    ("g2-standard-24", {"NVIDIA_L4": (2,)}),
    ("g2-standard-96", {"NVIDIA_L4": (8,)}),
    ("n2-standard-8", {}),
    ("e2-standard-4", {}),
    ("not-a-machine", None),
])
def test_allowed_accelerators(machine_type: str, expected: dict[str, tuple[int, ...]] | None) -> None:
    assert catalog.allowed_accelerators(machine_type) == expected


def test_allowed_accelerators_returns_a_copy() -> None:
    got = catalog.allowed_accelerators("g2-standard-8")
    assert got is not None
    got.clear()
    assert catalog.allowed_accelerators("g2-standard-8") == {"NVIDIA_L4": (1,)}


@pytest.mark.parametrize("machine_type, expected", [
    ("g2-standard-48", ("NVIDIA_L4", 4)),
    ("a2-highgpu-2g", ("NVIDIA_TESLA_A100", 2)),
    ("n1-standard-8", None),
    ("nope", None),
])
def test_builtin_accelerator(machine_type: str, expected: tuple[str, int] | None) -> None:
    assert catalog.builtin_accelerator(machine_type) == expected


@pytest.mark.parametrize("acc, count, expected", [
    (V100, 1, (12, 78.0)),
    (V100, 8, (96, 624.0)),
    (T4, 4, (96, 624.0)),
    (P100, 2, (32, 208.0)),
    (K80, 8, (64, 208.0)),
    (T4, 8, None),
    (V100, 3, None),
    ("NVIDIA_L4", 1, None),
])
def test_n1_gpu_limits(acc: str, count: int, expected: tuple[int, float] | None) -> None:
    assert catalog.n1_gpu_limits(acc, count) == expected


@pytest.mark.parametrize("acc, expected", [(V100, (1, 2, 4, 8)), (T4, (1, 2, 4)), ("NVIDIA_L4", ())])
def test_n1_gpu_counts(acc: str, expected: tuple[int, ...]) -> None:
    assert catalog.n1_gpu_counts(acc) == expected


# --- node_egress ------------------------------------------------------------------

@pytest.mark.parametrize("machine_type, acc, count, gbps, confidence", [
    ("n1-highmem-96", V100, 8, 100.0, "documented"),   # Google's Reduction Server example
    ("n1-highcpu-16", None, 0, 32.0, "documented"),    # the recommended RS machine
    ("n1-highmem-96", None, 0, 32.0, "documented"),
    ("n1-standard-16", V100, 4, 32.0, "unverified"),
    ("n1-standard-32", V100, 4, 50.0, "unverified"),
    ("n1-standard-4", T4, 1, 10.0, "unverified"),
    ("n1-highmem-96", T4, 4, 100.0, "unverified"),
    ("n1-standard-64", P100, 4, 32.0, "documented"),
    ("n1-standard-8", K80, 2, 16.0, "documented"),
    ("n1-standard-8", V100, 0, 16.0, "documented"),    # count 0: no GPUs
    ("n1-highmem-96", V100, 1, 32.0, "documented"),    # not a valid combo: machine default
    ("a2-highgpu-8g", "NVIDIA_TESLA_A100", 8, 100.0, "documented"),
    ("g2-standard-48", "NVIDIA_L4", 4, 50.0, "documented"),
    ("a3-megagpu-8g", "NVIDIA_H100_MEGA_80GB", 8, 1800.0, "unverified"),
    ("e2-standard-8", None, 0, 16.0, "documented"),
])
def test_node_egress(machine_type: str, acc: str | None, count: int, gbps: float, confidence: str) -> None:
    e = catalog.node_egress(machine_type, acc, count)
    assert (e.gbps, e.confidence) == (gbps, confidence)
    assert e.source.startswith("https://cloud.google.com/compute/docs/")


@pytest.mark.parametrize("machine_type", ["a3-highgpu-1g", "a4-highgpu-8g", ""])
def test_node_egress_unknown(machine_type: str) -> None:
    e = catalog.node_egress(machine_type)
    assert e.gbps is None and e.confidence == "unknown"
    assert isinstance(e, Egress)


# --- reduction_server_image ------------------------------------------------------------

@pytest.mark.parametrize("region, multi", [
    ("us-central1", "us"),
    ("northamerica-northeast1", "us"),
    ("southamerica-east1", "us"),
    ("europe-west4", "europe"),
    ("me-west1", "europe"),
    ("africa-south1", "europe"),
    ("asia-northeast1", "asia"),
    ("australia-southeast1", "asia"),
    ("", "us"),
    (None, "us"),
])
def test_reduction_server_image(region: str | None, multi: str) -> None:
    assert catalog.reduction_server_image(region) == (
        f"{multi}-docker.pkg.dev/vertex-ai-restricted/training/reductionserver:latest")
