"""Region rules: the effective region (flag > spec > $CLOUD_ML_REGION) is a Vertex AI
training location and offers the pools' accelerators (vxtrain/catalog/regions.csv,
region_accelerators.csv)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from vxtrain import api
from vxtrain.diagnostics import Diagnostic

IMAGE = "us-docker.pkg.dev/p/train/img:1"


def check(tmp_path: Path, data: dict[str, Any], **options: Any) -> list[Diagnostic]:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    options.setdefault("environ", {})
    return api.check_file(path, api.Options(**options)).diagnostics


def job(region: str | None = "us-central1", **chief: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"display_name": "r", "chief": {"machine_type": "n1-standard-8", "image": IMAGE, **chief}}
    if region is not None:
        data["region"] = region
    return data


def codes(diags: list[Diagnostic]) -> list[tuple[str, str, str]]:
    return sorted((d.severity, d.code, d.path) for d in diags)


@pytest.mark.parametrize("region, expected", [
    ("us-central1", []),
    ("europe-west4", []),
    ("us-centrl1", [("error", "unknown-region", "region")]),
    ("mars-west1", [("error", "unknown-region", "region")]),
    ("global", [("error", "unknown-region", "region")]),
    ("asia-south2", [("warning", "region-training-unverified", "region")]),
])
def test_region(tmp_path: Path, region: str, expected: list[tuple[str, str, str]]) -> None:
    assert codes(check(tmp_path, job(region))) == expected


def test_near_miss_says_did_you_mean(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job("us-centrl1"))
    assert 'region "us-centrl1" is not a Vertex AI location; did you mean "us-central1"?' in d.message
    lines = (tmp_path / "job.yaml").read_text().splitlines()
    assert d.line is not None and lines[d.line - 1].startswith("region:")


def test_unknown_region_lists_training_regions(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job("mars-west1"))
    assert "training regions: africa-south1, " in d.message and "us-central1" in d.message


def test_region_from_the_flag_is_reported_at_the_flag(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job("us-central1"), region="us-centrl1")
    assert d.code == "unknown-region" and d.file == "--region"


def test_region_from_the_environment(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job(None), environ={"CLOUD_ML_REGION": "mars-west1"})
    assert d.code == "unknown-region" and d.file == "$CLOUD_ML_REGION"
    assert check(tmp_path, job("us-central1"), environ={"CLOUD_ML_REGION": "mars-west1"}) == []  # spec wins


def test_flag_beats_a_bad_spec_region(tmp_path: Path) -> None:
    assert check(tmp_path, job("mars-west1"), region="europe-west4") == []


@pytest.mark.parametrize("region, chief, expected", [
    ("us-central1", {"accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}}, []),
    # L4 is listed with a dagger (not for training) in asia-east1
    ("asia-east1", {"machine_type": "g2-standard-8", "accelerator": {"type": "NVIDIA_L4", "count": 1}},
     [("error", "accelerator-not-in-region", "chief.accelerator.type")]),
    # no accelerators at all in africa-south1
    ("africa-south1", {"accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}},
     [("error", "accelerator-not-in-region", "chief.accelerator.type")]),
    # locations page lists T4 in asia-east1, quotas page says "Not available": a warning
    ("asia-east1", {"accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}},
     [("warning", "accelerator-region-unverified", "chief.accelerator.type")]),
    # B200 is not listed in europe-west1 at all
    ("europe-west1", {"machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 8}},
     [("error", "accelerator-not-in-region", "chief.accelerator.type")]),
    ("us-central1", {"machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 8}}, []),
    # CPU-only jobs run in every training region
    ("africa-south1", {}, []),
])
def test_accelerator_per_region(tmp_path: Path, region: str, chief: dict[str, Any],
                                expected: list[tuple[str, str, str]]) -> None:
    assert codes(check(tmp_path, job(region, **chief))) == expected


def test_not_in_region_names_regions_that_offer_it(tmp_path: Path) -> None:
    (d,) = check(tmp_path, job("asia-east1", machine_type="g2-standard-8",
                               accelerator={"type": "NVIDIA_L4", "count": 1}))
    assert "NVIDIA_L4 is not offered for training in asia-east1" in d.message
    assert "us-central1" in d.message and "asia-east1," not in d.message


def test_region_rules_report_once_per_accelerator(tmp_path: Path) -> None:
    data = job("africa-south1", accelerator={"type": "NVIDIA_TESLA_T4", "count": 1})
    data["workers"] = {"replicas": 2, "machine_type": "n1-standard-8", "image": IMAGE,
                       "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}}
    assert [d.code for d in check(tmp_path, data)] == ["accelerator-not-in-region"]
