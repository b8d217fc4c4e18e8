"""The machine catalog: data integrity and every lookup, table-driven."""
from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest

from vxtrain import catalog
from vxtrain.catalog import Egress
from vxtrain.catalog.spelling import within

CATALOG_DIR = Path(catalog.__file__).parent
CSV_FILES = sorted(CATALOG_DIR.glob("*.csv"))
CONFIDENCE = {"documented", "copied", "derived", "unverified"}
VERTEX_TABLE = Path(__file__).resolve().parent / "data" / "vertex" / "n1_gpu_allowed_counts.csv"


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
        "accelerators.csv", "flex_start_accelerators.csv", "gpu_machines.csv", "gpu_networks.csv",
        "gpu_partitions.csv", "image_platforms.csv", "legacy_machines.csv",
        "legacy_scale_tiers.csv", "machines.csv", "n1_gpu_egress.csv", "n1_gpu_limits.csv", "prices.csv",
        "quota_metrics.csv", "quota_patterns.csv", "region_accelerators.csv", "regions.csv",
        "reservation_requirements.csv",
        "tpu_machines.csv", "training_accelerators.csv", "training_machines.csv", "vpc_peering.csv"}


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


@pytest.mark.parametrize("name", ["n1-standard-12", "N1-STANDARD-8", "", "a5-highgpu-8g"])
def test_machine_absent(name: str) -> None:
    assert catalog.machine(name) is None


def test_machine_types_sorted_and_complete() -> None:
    types = catalog.machine_types()
    assert types == sorted(types)
    assert len(types) == 218
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
    ("a5-highgpu-8g", None),       # a newer series, not a typo of a4
    ("a4-highgpu-8g", None),       # exact
    ("n1-standard-1", None),       # a real type, not offered: not a typo of an offered one
    ("c3-standard-8", None),
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
    ("n1-standard-4", {V100: (1, 2, 4, 8), T4: (1, 2, 4), P4: (1, 2, 4), P100: (1, 2, 4)}),
    ("n1-highmem-96", {V100: (8,), T4: (4,), P4: (4,)}),
    ("n1-standard-16", {V100: (2, 4, 8), T4: (1, 2, 4), P4: (1, 2, 4), P100: (1, 2, 4)}),
    ("n1-highmem-32", {V100: (4, 8), T4: (2, 4), P4: (2, 4), P100: (2, 4)}),
    ("n1-highcpu-64", {V100: (8,), T4: (4,), P4: (4,), P100: (4,)}),
    ("a4-highgpu-8g", {"NVIDIA_B200": (8,)}),
    ("a4x-highgpu-4g", {"NVIDIA_GB200": (4,)}),
    ("g4-standard-96", {"NVIDIA_RTX_PRO_6000": (2,)}),
    ("n1-standard-1", None),       # not offered for training
    ("a3-edgegpu-8g", None),
    ("cloud-tpu", None),           # TPU VM: accelerators not tabulated
    ("ct5lp-hightpu-4t", None),
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
    (V100, 1, (12, 76.0)),
    (V100, 8, (96, 624.0)),
    (T4, 4, (96, 624.0)),
    (P100, 2, (32, 208.0)),
    (P100, 4, (64, 208.0)),
    (T4, 1, (16, 104.0)),
    (K80, 8, None),
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


@pytest.mark.parametrize("machine_type", ["a3-highgpu-1g", "a4x-highgpu-4g", "cloud-tpu", ""])
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


# --- what Vertex AI training offers ----------------------------------------------------

def test_every_offered_type_but_tpu_vms_has_a_shape() -> None:
    missing = [t for t in catalog.training_machine_types() if catalog.machine(t) is None]
    assert missing == ["cloud-tpu", "tpu7x-standard-4t"]  # no fixed shape / no figure found


def test_training_list_size_and_date() -> None:
    assert len(catalog.training_machine_types()) == 117
    assert catalog.training_list_as_of() == "2026-11-23"


@pytest.mark.parametrize("name", ["e2-micro", "n1-standard-1", "n1-standard-2", "e2-standard-2", "n1-highcpu-4",
                                  "n2-highcpu-2", "n2-highcpu-8", "n2-standard-96", "c3-standard-8",
                                  "c2d-standard-8", "n2d-standard-8", "a3-edgegpu-8g", "a3-ultragpu-8g-nolssd"])
def test_not_offered(name: str) -> None:
    assert catalog.machine(name) is not None and not catalog.offered(name)


@pytest.mark.parametrize("name, first", [
    ("n1-standard-1", "n1-standard-4"),
    ("n1-highcpu-4", "n1-highcpu-16"),
    ("e2-standard-2", "e2-standard-4"),
    ("n2-standard-96", "n2-standard-80"),
    ("a3-edgegpu-8g", "a3-highgpu-8g"),
    ("a3-ultragpu-8g-nolssd", "a3-ultragpu-8g"),
    ("a3-edgegpu-8g-nolssd", "a3-highgpu-8g"),
])
def test_nearest_offered(name: str, first: str) -> None:
    nearest = catalog.nearest_offered(name)
    assert nearest[0] == first
    assert all(catalog.offered(t) for t in nearest)


def _vertex_allowed_counts() -> dict[tuple[str, str], tuple[int, ...]]:
    return {(r["machine_type"], r["accelerator"]): tuple(int(c) for c in r["allowed_counts"].split())
            for r in _rows(VERTEX_TABLE)}


def test_n1_limits_reproduce_vertex_allowed_counts_table() -> None:
    """The one limit table the rule uses gives exactly Vertex AI's published N1 x GPU table (68 cells)."""
    table = _vertex_allowed_counts()
    assert len(table) == 68
    got = {(m, acc): (catalog.allowed_accelerators(m) or {}).get(acc, ()) for m, acc in table}
    assert got == table
    offered_n1 = {t for t in catalog.training_machine_types() if t.startswith("n1-")}
    assert {m for m, _ in table} == offered_n1


def test_training_accelerators_cover_the_enum() -> None:
    rows = {r["name"]: r["training"] for r in _rows(CATALOG_DIR / "training_accelerators.csv")}
    assert set(rows) == set(catalog.catalog_accelerators())
    assert {n for n, t in rows.items() if t == "no"} == {K80, "TPU_V4_POD"}
    assert not catalog.training_accelerator(K80) and catalog.training_accelerator(T4)


def test_every_offered_gpu_type_is_on_an_offered_machine() -> None:
    used = {acc for t in catalog.training_machine_types() for acc in (catalog.allowed_accelerators(t) or {})}
    gpus = {a for a in catalog.catalog_accelerators() if a.startswith("NVIDIA_") and catalog.training_accelerator(a)}
    assert gpus == used


# --- regions ---------------------------------------------------------------------------

def test_regions() -> None:
    assert len(catalog.training_regions()) == 38
    r = catalog.region("us-central1")
    assert r is not None and r.training == "yes"
    south2 = catalog.region("asia-south2")
    assert south2 is not None and south2.training == "not listed"
    assert catalog.region("global") is None and catalog.region("mars-west1") is None


@pytest.mark.parametrize("name, expected", [
    ("us-centrl1", ["us-central1"]),
    ("US-CENTRAL1", ["us-central1"]),
    ("europe-west", ["europe-west1", "europe-west2", "europe-west3"]),
    ("mars-west1", []),
    ("us-central1", []),
])
def test_near_region(name: str, expected: list[str]) -> None:
    assert catalog.near_region(name) == expected


@pytest.mark.parametrize("machine_type, acc, count, key", [
    ("n1-standard-8", T4, 1, T4),
    ("a3-highgpu-8g", None, None, "NVIDIA_H100_80GB"),
    ("cloud-tpu", "TPU_V2", 8, "TPU_V2"),
    ("cloud-tpu", "TPU_V3", 32, "TPU_V3 (pod)"),
    ("ct6e-standard-4t", None, None, "TPU v6e (ct6e)"),
    ("tpu7x-standard-4t", None, None, "TPU7x (tpu7x)"),
    ("ct5lp-hightpu-4t", None, None, "TPU_V5_LITEPOD"),  # keyed by the machine, accelerator type or not
    ("ct5lp-hightpu-1t", "TPU_V5_LITEPOD", 1, "TPU_V5_LITEPOD"),
    ("cloud-tpu", "TPU_V2", 64, "TPU_V2 (pod)"),
    ("cloud-tpu", "NVIDIA_TESLA_T4", 1, None),  # the TPU rules refuse it; no region check on top
    ("cloud-tpu", None, None, None),
    ("n1-standard-8", None, None, None),
])
def test_region_accelerator_key(machine_type: str, acc: str | None, count: int | None, key: str | None) -> None:
    assert catalog.region_accelerator_key(machine_type, acc, count) == key


@pytest.mark.parametrize("region, key, offered, conflict", [
    ("us-central1", T4, True, False),
    ("asia-east1", "NVIDIA_L4", False, False),      # listed with a dagger: not for training
    ("asia-east1", T4, True, True),                 # the quotas page says "Not available"
    ("africa-south1", T4, False, False),            # no accelerators at all
    ("us-central1", "TPU_V3 (pod)", False, False),
])
def test_region_accelerator(region: str, key: str, offered: bool, conflict: bool) -> None:
    found = catalog.region_accelerator(region, key)
    assert found is not None and (found.offered, found.conflict) == (offered, conflict)


def test_every_region_accelerator_row_is_a_region() -> None:
    regions = {r["region"] for r in _rows(CATALOG_DIR / "regions.csv")}
    assert {r["region"] for r in _rows(CATALOG_DIR / "region_accelerators.csv")} == regions


# --- quota metrics ---------------------------------------------------------------------

@pytest.mark.parametrize("acc, preemptible, metric", [
    ("NVIDIA_H100_80GB", False, "custom_model_training_nvidia_h100_gpus"),
    ("NVIDIA_H100_80GB", True, "custom_model_training_preemptible_nvidia_h100_gpus"),
    ("NVIDIA_H100_MEGA_80GB", False, "custom_model_training_nvidia_h100_mega_gpus"),
    ("NVIDIA_TESLA_A100", False, "custom_model_training_nvidia_a100_gpus"),
    (T4, False, "custom_model_training_nvidia_t4_gpus"),
    (T4, True, "custom_model_training_preemptible_nvidia_t4_gpus"),  # a third-party list's row (unverified)
    ("NVIDIA_TESLA_V100", True, "custom_model_training_nvidia_v100_gpus"),  # no preemptible twin: the fault's fallback
    (None, False, "custom_model_training_cpus"),
])
def test_quota_metric(acc: str | None, preemptible: bool, metric: str) -> None:
    assert catalog.quota_metric(acc, preemptible=preemptible) == f"aiplatform.googleapis.com/{metric}"


@pytest.mark.parametrize("acc", ["NVIDIA_B200", "NVIDIA_GB200", "NVIDIA_RTX_PRO_6000", K80])
def test_quota_metric_unknown_is_not_made_up(acc: str) -> None:
    assert catalog.quota_metric(acc) is None


def test_accelerator_quota_has_no_on_demand_fallback_for_spot() -> None:
    assert catalog.accelerator_quota("NVIDIA_TESLA_V100", preemptible=True) is None
    row = catalog.accelerator_quota(T4)
    assert row is not None and row.quota_id == "CustomModelTrainingT4GPUsPerProjectPerRegion" and row.unit == "gpus"


@pytest.mark.parametrize("machine_type, metric", [
    ("n1-standard-8", "custom_model_training_cpus"), ("e2-standard-4", "custom_model_training_cpus"),
    ("n2-standard-16", "custom_model_training_n2_cpus"), ("c2-standard-8", "custom_model_training_c2_cpus"),
    ("a2-highgpu-1g", None), ("n4-standard-8", None), ("c3-standard-8", None),
])
def test_cpu_quota_per_machine_family(machine_type: str, metric: str | None) -> None:
    row = catalog.cpu_quota(machine_type)
    assert (row.metric if row else None) == (f"aiplatform.googleapis.com/{metric}" if metric else None)
    assert row is None or row.unit == "vcpus"


@pytest.mark.parametrize("acc, preemptible, metric", [
    ("NVIDIA_TESLA_A100", True, "custom_model_training_preemptible_nvidia_a100_gpus"),
    ("NVIDIA_A100_80GB", True, "custom_model_training_preemptible_nvidia_a100_80gb_gpus"),
    ("NVIDIA_TESLA_V100", True, "custom_model_training_preemptible_nvidia_v100_gpus"),
    ("NVIDIA_H100_80GB", True, None),       # a row names it: no candidate
    ("NVIDIA_TESLA_A100", False, None),     # likewise (on-demand)
    ("NVIDIA_B200", True, None),            # no on-demand metric named: no {gpu} token
    ("NVIDIA_B200", False, None),
    ("TPU_V3", True, None),                 # no TPU pattern
    ("NVIDIA_TESLA_K80", True, None),       # no row at all
])
def test_accelerator_candidate_from_the_documented_pattern(acc: str, preemptible: bool, metric: str | None) -> None:
    found = catalog.accelerator_candidate(acc, preemptible=preemptible)
    assert (found.metric if found else None) == (f"aiplatform.googleapis.com/{metric}" if metric else None)
    assert found is None or (found.unit == "gpus" and found.source.startswith("https://"))


@pytest.mark.parametrize("machine_type, metric", [
    ("a2-highgpu-1g", "custom_model_training_a2_cpus"), ("n4-standard-8", "custom_model_training_n4_cpus"),
    ("n2-standard-16", None), ("n1-standard-8", None),  # rows name them
    ("c3-standard-8", None),  # no row: no source says C3 has a quota of its own
])
def test_cpu_candidate_only_for_the_families_the_quotas_page_keeps_apart(machine_type: str,
                                                                         metric: str | None) -> None:
    found = catalog.cpu_candidate(machine_type)
    assert (found.metric if found else None) == (f"aiplatform.googleapis.com/{metric}" if metric else None)


def test_candidates_never_name_a_catalog_metric() -> None:
    candidates = catalog.candidate_metrics()
    assert "custom_model_training_preemptible_nvidia_a100_gpus" in candidates
    assert not candidates & catalog.known_metrics()


def test_every_quota_row_names_a_known_unit_and_a_full_metric() -> None:
    for row in _rows(CATALOG_DIR / "quota_metrics.csv"):
        assert row["unit"] in ("gpus", "vcpus", ""), row
        assert not row["quota_metric"] or row["quota_metric"].startswith("aiplatform.googleapis.com/custom_model_training_"), row
        assert not row["quota_id"] or row["quota_id"].startswith("CustomModelTraining"), row


# --- legacy AI Platform names -----------------------------------------------------

def test_scale_tiers_in_order_and_every_pool_names_a_legacy_machine() -> None:
    assert catalog.scale_tiers() == ["BASIC", "STANDARD_1", "PREMIUM_1", "BASIC_GPU"]
    for tier in catalog.scale_tiers():
        pools = catalog.scale_tier(tier) or ()
        assert [p.role for p in pools][0] == "chief" and pools[0].replicas == 1
        assert all(catalog.legacy_machine(p.legacy_machine) is not None for p in pools), tier
    assert catalog.scale_tier("CUSTOM") is None and catalog.scale_tier("BASIC_TPU") is None


def test_legacy_names_say_which_gpus_they_meant_only_where_vxtrain_changes_them() -> None:
    replaced = {name: m.replaces for name in catalog.legacy_machine_names()
                if (m := catalog.legacy_machine(name)) is not None and m.replaces}
    assert replaced == {"standard_gpu": "1 × NVIDIA_TESLA_K80", "complex_model_m_gpu": "4 × NVIDIA_TESLA_K80",
                        "complex_model_l_gpu": "8 × NVIDIA_TESLA_K80"}
    standard = catalog.legacy_machine("standard")
    assert standard is not None and (standard.machine_type, standard.accelerator_type) == ("n1-standard-4", None)
    assert catalog.legacy_machine("n1-standard-4") is None


def test_legacy_machine_types_are_catalog_machines() -> None:
    for row in _rows(CATALOG_DIR / "legacy_machines.csv"):
        assert catalog.machine(row["machine_type"]) is not None, row
        assert catalog.machine(row["ai_platform_machine_type"]) is not None, row


# --- Google's images ---------------------------------------------------------------

@pytest.mark.parametrize("region", [None, "us-central1", "europe-west4", "asia-east1", "me-west1"])
def test_prebuilt_image_names_match_the_prebuilt_pattern(region: str | None) -> None:
    image = catalog.prebuilt_image("tf", True, "2", "11", region)
    assert image == f"{catalog.multi_region(region)}-docker.pkg.dev/vertex-ai/training/tf-gpu.2-11:latest"
    assert catalog.is_prebuilt_image(image)


@pytest.mark.parametrize("image, prebuilt", [
    ("us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-1.py310:latest", True),
    ("europe-docker.pkg.dev/vertex-ai/training/sklearn-cpu.1-0:latest", True),
    ("gcr.io/cloud-aiplatform/training/tf-cpu.2-8:latest", True),
    ("us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:2024", False),
    ("eu-docker.pkg.dev/vertex-ai/training/tf-cpu.2-8:latest", False),
    ("us-docker.pkg.dev/my-project/training/tf-cpu.2-8:latest", False),
])
def test_is_prebuilt_image(image: str, prebuilt: bool) -> None:
    assert catalog.is_prebuilt_image(image) is prebuilt


def test_a_very_long_name_is_no_near_miss_and_costs_no_distance() -> None:
    """A 10 kB region or machine type took 29 s in the did-you-mean search: names whose
    lengths differ by more than the edits allowed are never compared."""
    assert within("us-centrl1", "us-central1", 2) and not within("us-central1" * 1000, "us-central1", 2)
    assert catalog.near_region("us-centrl1") == ["us-central1"]
    assert catalog.near_region("us-central1" * 1000) == []
    assert catalog.near_miss("n1-standard-8" * 800) is None
