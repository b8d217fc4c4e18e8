"""Scheduling rules: FLEX_START's requirements (the DWS page), max_wait, a strategy on a persistent
resource; one table row per rule and variant, exact codes, severities and paths."""
from __future__ import annotations

import copy
import textwrap
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from vxtrain import api, catalog, model
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, NativeSpec
from vxtrain.validation import rules
from tests.validation.specs import E, W, changed

IMAGE = "us-docker.pkg.dev/p/train/bert:1"
H100 = {"machine_type": "a3-highgpu-8g", "accelerator": {"type": "NVIDIA_H100_80GB", "count": 8}}
A100 = {"machine_type": "a2-highgpu-1g", "accelerator": {"type": "NVIDIA_TESLA_A100", "count": 1}}
T4 = {"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_T4", "count": 1}}
FLEX = {"strategy": "FLEX_START"}
BASE: dict[str, Any] = {"display_name": "t", "region": "us-central1", "defaults": {"image": IMAGE},
                        "chief": H100, "scheduling": FLEX}


def spec(**changes: Any) -> dict[str, Any]:
    """BASE with top-level keys replaced (None deletes); dict values merge one level deep."""
    return changed(BASE, **changes)


def run(data: dict[str, Any]) -> list[Diagnostic]:
    return rules.check(model.build(data), NativeSpec(data, "native", Document(data, "t.yaml", {})))


def found(data: dict[str, Any]) -> list[tuple[str, str, str]]:
    return sorted((d.severity, d.code, d.path) for d in run(data))


def pool(machine: Mapping[str, Any], **more: Any) -> dict[str, Any]:
    return {**copy.deepcopy(dict(machine)), **more}


def only_chief(chief: dict[str, Any]) -> dict[str, Any]:
    """BASE with ``chief`` replaced whole."""
    return {**spec(chief=None), "chief": chief}


def in_defaults(machine: Mapping[str, Any], **pools: Any) -> dict[str, Any]:
    """A job whose machine is in ``defaults``: chief ``{}`` and ``pools``."""
    return {**spec(chief=None), "defaults": {"image": IMAGE, **machine}, "chief": {}, **pools}


CASES: list[tuple[str, dict[str, Any], list[tuple[str, str, str]]]] = [
    # the accepted shapes
    ("h100", spec(), []),
    ("l4", spec(chief={"machine_type": "g2-standard-8", "accelerator": {"type": "NVIDIA_L4", "count": 1}}), []),
    ("a100-40", spec(chief=A100), []),
    ("a100-80", spec(chief={"machine_type": "a2-ultragpu-1g", "accelerator": {"type": "NVIDIA_A100_80GB"}}), []),
    ("h200", spec(chief={"machine_type": "a3-ultragpu-8g",
                         "accelerator": {"type": "NVIDIA_H200_141GB", "count": 8}}), []),
    ("b200", spec(chief={"machine_type": "a4-highgpu-8g", "accelerator": {"type": "NVIDIA_B200", "count": 8}}), []),
    ("same-in-every-pool", in_defaults(H100, workers={"replicas": 3}, evaluators={}), []),
    ("same-written-twice", spec(workers=pool(H100, replicas=2)), []),
    ("timeout-7d", spec(scheduling={"timeout": "7d"}), []),
    ("timeout-168h", spec(scheduling={"timeout": "168h"}), []),
    ("max-wait-0", spec(scheduling={"max_wait": 0}), []),
    ("max-wait-2h", spec(scheduling={"max_wait": "2h"}), []),
    # the false accepts
    ("t4", spec(chief=T4), [E("flex-start-gpu", "chief.accelerator.type")]),
    ("no-gpu", only_chief({"machine_type": "n1-standard-8"}), [E("flex-start-no-gpu", "chief.machine_type")]),
    ("tpu-vm", only_chief({"machine_type": "ct5lp-hightpu-4t", "tpu_topology": "2x2"}),
     [E("flex-start-no-gpu", "chief.machine_type")]),
    ("timeout-8d", spec(scheduling={"timeout": "8d"}), [E("flex-start-timeout", "scheduling.timeout")]),
    ("timeout-7d-and-a-second", spec(scheduling={"timeout": 7 * 86400 + 1}),
     [E("flex-start-timeout", "scheduling.timeout")]),
    ("different-machines", spec(workers=pool(A100, replicas=2)),
     [E("flex-start-mixed-machines", "workers.machine_type")]),
    ("reduction-server", spec(workers=pool(H100, replicas=2), reduction_server={"replicas": "auto"}),
     [E("flex-start-reduction-server", "reduction_server")]),
    ("reduction-server-machine", spec(workers=pool(H100, replicas=2),
                                      reduction_server={"replicas": 2, "machine_type": "n1-highcpu-16"}),
     [E("flex-start-reduction-server", "reduction_server.machine_type")]),
    # more GPUs and machines outside the list
    ("v100", spec(chief={"machine_type": "n1-standard-8", "accelerator": {"type": "NVIDIA_TESLA_V100"}}),
     [E("flex-start-gpu", "chief.accelerator.type")]),
    ("gb200", spec(chief={"machine_type": "a4x-highgpu-4g", "accelerator": {"type": "NVIDIA_GB200", "count": 4},
                          "reservation": {"affinity": "specific",
                                          "name": "projects/p/zones/us-central1-a/reservations/r"}}),
     [E("flex-start-gpu", "chief.accelerator.type"), W("reservation-with-flex-start", "chief.reservation.affinity")]),
    ("rtx-pro-6000", spec(chief={"machine_type": "g4-standard-48", "accelerator": {"type": "NVIDIA_RTX_PRO_6000"}}),
     [E("flex-start-gpu", "chief.accelerator.type")]),
    ("t4-in-defaults-once", in_defaults(T4, workers={"replicas": 2}), [E("flex-start-gpu", "defaults.accelerator.type")]),
    ("mixed-and-t4", spec(workers=pool(T4, replicas=2)),
     [E("flex-start-gpu", "workers.accelerator.type"), E("flex-start-mixed-machines", "workers.machine_type")]),
    ("mixed-accelerator-count", spec(chief={"machine_type": "g2-standard-24",
                                            "accelerator": {"type": "NVIDIA_L4", "count": 2}},
                                     workers={"machine_type": "g2-standard-24", "replicas": 2,
                                              "accelerator": {"type": "NVIDIA_L4", "count": 1}}),
     [E("accelerator-count", "workers.accelerator.count"), E("flex-start-mixed-machines", "workers.accelerator")]),
    ("unknown-machine-not-twice", spec(chief={"machine_type": "n1-standrad-8"}),
     [E("unknown-machine-type", "chief.machine_type")]),
    # H100 Mega: accepted, with a warning (docs/decisions.md)
    ("h100-mega", spec(chief={"machine_type": "a3-megagpu-8g",
                              "accelerator": {"type": "NVIDIA_H100_MEGA_80GB", "count": 8}}),
     [W("flex-start-gpu-unconfirmed", "chief.accelerator.type")]),
    # max_wait: FLEX_START only
    ("max-wait-standard", spec(scheduling={"strategy": "STANDARD", "max_wait": "1h"}),
     [W("max-wait-ignored", "scheduling.max_wait")]),
    # the rules do not apply without FLEX_START
    ("spot-t4-8d", spec(chief=T4, scheduling={"strategy": "SPOT", "timeout": "8d"}), []),
    ("standard-mixed", spec(scheduling=None, workers=pool(A100, replicas=2), reduction_server={"replicas": "auto"}),
     []),
    # a strategy on a persistent resource: a warning (docs/decisions.md)
    ("spot-on-persistent-resource", spec(scheduling={"strategy": "SPOT"}, persistent_resource="pool-1"),
     [W("strategy-on-persistent-resource", "scheduling.strategy")]),
    ("flex-on-persistent-resource", spec(persistent_resource="pool-1"),
     [W("strategy-on-persistent-resource", "scheduling.strategy")]),
    ("standard-on-persistent-resource", spec(scheduling={"strategy": "STANDARD"}, persistent_resource="pool-1"), []),
    # extra: the field compiled last is the one checked, at its line
    ("extra-strategy", spec(scheduling=None, chief=T4, extra={"jobSpec": {"scheduling": {"strategy": "FLEX_START"}}}),
     [E("flex-start-gpu", "chief.accelerator.type")]),
    ("extra-timeout", spec(extra={"jobSpec": {"scheduling": {"timeout": "691200s"}}}),
     [E("flex-start-timeout", "extra.jobSpec.scheduling.timeout")]),
    ("extra-strategy-overrides", spec(chief=T4, extra={"jobSpec": {"scheduling": {"strategy": "STANDARD"}}}), []),
    ("extra-max-wait", spec(scheduling=None, extra={"jobSpec": {"scheduling": {"maxWaitDuration": "60s"}}}),
     [W("max-wait-ignored", "extra.jobSpec.scheduling.maxWaitDuration")]),
    ("extra-flex-makes-max-wait-count", spec(scheduling={"strategy": "SPOT", "max_wait": "1h"},
                                             extra={"jobSpec": {"scheduling": {"strategy": "FLEX_START"}}}), []),
    ("extra-persistent-resource", spec(extra={"jobSpec": {"persistentResourceId": "pool-1"}}),
     [W("strategy-on-persistent-resource", "scheduling.strategy")]),
]


@pytest.mark.parametrize("data, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule(data: dict[str, Any], expected: list[tuple[str, str, str]]) -> None:
    assert found(data) == sorted(expected)


@pytest.mark.parametrize("data, code, words", [
    (spec(chief=T4), "flex-start-gpu", ["NVIDIA_TESLA_T4", "L4, A100 (40 or 80 GB), H100, H200 or B200",
                                        "NVIDIA_H100_80GB", "strategy STANDARD or SPOT", "schedule-jobs-dws"]),
    (only_chief({"machine_type": "n1-standard-8"}), "flex-start-no-gpu", ["n1-standard-8 has none", "g2-standard-8"]),
    (spec(scheduling={"timeout": "8d"}), "flex-start-timeout", ["8 days", "7 days or less", "7d or less"]),
    (spec(scheduling={"timeout": "200h"}), "flex-start-timeout", ["720000s (8.33 days)"]),
    (spec(workers=pool(A100, replicas=2)), "flex-start-mixed-machines",
     ['"the same machine configuration for all worker pools"', "workers has a2-highgpu-1g with 1 x NVIDIA_TESLA_A100",
      "chief a3-highgpu-8g with 8 x NVIDIA_H100_80GB"]),
    (spec(workers=pool(H100, replicas=2), reduction_server={"replicas": "auto"}), "flex-start-reduction-server",
     ["n1-highcpu-16 without GPUs", "remove reduction_server", "#reduction-server"]),
    (spec(chief={"machine_type": "a3-megagpu-8g", "accelerator": {"type": "NVIDIA_H100_MEGA_80GB", "count": 8}}),
     "flex-start-gpu-unconfirmed", ["8 NVIDIA H100 GPUs", "Vertex AI may refuse it"]),
    (spec(scheduling={"strategy": "SPOT"}, persistent_resource="pool-1"), "strategy-on-persistent-resource",
     ['"pool-1"', "no Spot VMs", "existing machines held by the PersistentResource", "persistent-resource-train"]),
    (spec(extra={"jobSpec": {"scheduling": {"timeout": "691200s"}}}), "flex-start-timeout",
     ["extra.jobSpec.scheduling.timeout is 8 days"]),
])
def test_message_names_the_value_and_what_is_accepted(data: dict[str, Any], code: str, words: list[str]) -> None:
    (diag,) = [d for d in run(data) if d.code == code]
    for word in words:
        assert word in diag.message, (word, diag.message)


def test_every_training_accelerator_has_a_flex_start_decision() -> None:
    """A new accelerator in the training list cannot slip past FLEX_START without a row."""
    from vxtrain.catalog.tables import rows  # the raw rows: the lookup hides the list's edges

    training = {r["name"] for r in rows("training_accelerators.csv")}
    flex = {r["accelerator"]: r for r in rows("flex_start_accelerators.csv")}
    assert set(flex) == training
    assert {r["flex_start"] for r in flex.values()} == {"yes", "no"}
    assert all(r["source"].startswith("https://docs.cloud.google.com/") for r in flex.values())


def test_flex_start_list_is_the_pages_list() -> None:
    """"L4, A100, H100, H200, or B200 GPUs", A100 in both sizes; H100 Mega accepted as derived."""
    assert catalog.flex_start_accelerators() == (
        "NVIDIA_L4", "NVIDIA_TESLA_A100", "NVIDIA_A100_80GB", "NVIDIA_H100_80GB", "NVIDIA_H100_MEGA_80GB",
        "NVIDIA_H200_141GB", "NVIDIA_B200")
    mega = catalog.flex_start("NVIDIA_H100_MEGA_80GB")
    assert mega is not None and mega.allowed and mega.confidence == "derived"
    assert catalog.flex_start("NVIDIA_TESLA_T4") is not None and not catalog.flex_start("NVIDIA_TESLA_T4").allowed
    assert catalog.flex_start("NVIDIA_TESLA_T44") is None
    assert catalog.FLEX_START_MAX_TIMEOUT_S == 604800


def test_every_gpu_machine_is_decided_for_flex_start() -> None:
    """Every accelerator-optimized type carries GPUs the FLEX_START table decides."""
    from vxtrain.catalog.tables import rows  # gpu_machines.csv as written

    for row in rows("gpu_machines.csv"):
        assert catalog.flex_start(row["accelerator"]) is not None, row


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "job.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_located_at_the_line_of_the_key(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        display_name: t
        region: us-central1
        defaults: {image: us-docker.pkg.dev/p/t/i:1}
        chief:
          machine_type: n1-standard-8
          accelerator: {type: NVIDIA_TESLA_T4, count: 1}
        workers:
          replicas: 2
          machine_type: a2-highgpu-1g
          accelerator: {type: NVIDIA_TESLA_A100, count: 1}
        reduction_server: {replicas: 2}
        scheduling:
          strategy: FLEX_START
          timeout: 8d
        """)
    result = api.check_file(path)
    at = {d.code: (d.line, d.path) for d in result.diagnostics if d.severity == "error"}
    assert at["flex-start-gpu"] == (6, "chief.accelerator.type")
    assert at["flex-start-mixed-machines"] == (9, "workers.machine_type")
    assert at["flex-start-reduction-server"] == (11, "reduction_server")
    assert at["flex-start-timeout"] == (14, "scheduling.timeout")
    assert not result.valid


def test_gcloud_config_is_located_at_its_own_keys(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        workerPoolSpecs:
          - machineSpec: {machineType: n1-standard-8, acceleratorType: NVIDIA_TESLA_T4, acceleratorCount: 1}
            replicaCount: 1
            containerSpec: {imageUri: us-docker.pkg.dev/p/t/i:1}
        scheduling:
          strategy: FLEX_START
          timeout: 691200s
        """)
    result = api.check_file(path)
    at = {d.code: (d.line, d.path) for d in result.diagnostics if d.severity == "error"}
    assert at["flex-start-gpu"] == (2, "workerPoolSpecs[0].machineSpec.acceleratorType")
    assert at["flex-start-timeout"] == (7, "scheduling.timeout")


def test_a_valid_flex_start_job_compiles(tmp_path: Path) -> None:
    path = _write(tmp_path, """
        display_name: t
        region: us-central1
        defaults:
          image: us-docker.pkg.dev/p/t/i:1
          machine_type: a3-highgpu-8g
          accelerator: {type: NVIDIA_H100_80GB, count: 8}
        chief: {}
        workers: {replicas: 3}
        scheduling: {strategy: FLEX_START, max_wait: 12h, timeout: 3d}
        """)
    result = api.check_file(path)
    assert result.valid, [d.render() for d in result.diagnostics]
    assert result.custom_job is not None
    assert result.custom_job["jobSpec"]["scheduling"] == {"strategy": "FLEX_START", "maxWaitDuration": "43200s",
                                                          "timeout": "259200s"}


GPU_MACHINES = [m for m in catalog.training_machine_types() if catalog.builtin_accelerator(m) is not None]


@pytest.mark.parametrize("machine_type", GPU_MACHINES)
def test_every_offered_gpu_machine_is_decided(machine_type: str) -> None:
    """Each accelerator-optimized type the training list offers, with its own GPUs in two pools:
    FLEX_START accepts it exactly when its GPU's row says so (a warning for a derived row)."""
    acc, count = catalog.builtin_accelerator(machine_type) or ("", 0)
    machine: dict[str, Any] = {"machine_type": machine_type, "accelerator": {"type": acc, "count": count}}
    need = catalog.reservation_requirement(acc)
    if need is not None and need.required:
        machine["reservation"] = {"affinity": "specific", "name": "projects/p/zones/us-central1-a/reservations/r"}
    data = in_defaults(machine, workers={"replicas": 2})
    codes = {d.code for d in run(data) if d.code.startswith("flex-start")}
    row = catalog.flex_start(acc)
    assert row is not None
    if not row.allowed:
        assert codes == {"flex-start-gpu"}
    elif row.confidence in ("derived", "unverified"):
        assert codes == {"flex-start-gpu-unconfirmed"}
    else:
        assert codes == set()
