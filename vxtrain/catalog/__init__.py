"""The machine catalog: what Vertex AI training offers (machine types,
accelerators, regions) and the Compute Engine facts behind them (vCPU, memory,
GPUs, bandwidth), plus the legacy AI Platform names and Google's image names.

The facts are data (``*.csv`` beside this file, each row with a ``source`` URL
and a ``confidence`` of documented | copied | derived | unverified; README.md
says how they were derived). The modules only load them, once and lazily, into
dicts, so every lookup is a dict hit (``validate`` runs thousands of specs a
second):

- :mod:`~vxtrain.catalog.tables`: reading the CSV files;
- :mod:`~vxtrain.catalog.machines`: shapes, built-in GPUs, the training list, near misses;
- :mod:`~vxtrain.catalog.accelerators`: AcceleratorType names, what each machine takes;
- :mod:`~vxtrain.catalog.egress`: per-node bandwidth;
- :mod:`~vxtrain.catalog.tpus`: TPU machine types, their topologies, counts and hosts;
- :mod:`~vxtrain.catalog.regions`: locations and their accelerators;
- :mod:`~vxtrain.catalog.quotas`: training quota metrics;
- :mod:`~vxtrain.catalog.capacity`: FLEX_START's accelerators, accelerators that need a reservation;
- :mod:`~vxtrain.catalog.images`: Artifact Registry multi-regions, prebuilt and Reduction Server images;
- :mod:`~vxtrain.catalog.legacy_machines`: AI Platform's legacy machine names and scale tiers;
- :mod:`~vxtrain.catalog.prices`: training prices (imported on its own: only ``plan`` needs it).

This package re-exports the lookups, so ``from vxtrain.catalog import X`` and
``catalog.X`` work for all of them. Nothing here imports google.cloud.aiplatform.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from vxtrain.catalog.accelerators import (
    accelerator_types, allowed_accelerators, catalog_accelerators, deprecated_accelerator, n1_gpu_counts,
    n1_gpu_limits, training_accelerator)
from vxtrain.catalog.egress import Egress, node_egress
from vxtrain.catalog.images import (
    PREBUILT_DOC, PREBUILT_SHAPE, in_prebuilt_repository, is_prebuilt_image, multi_region, prebuilt_image, reduction_server_image)
from vxtrain.catalog.machines import (
    Machine, builtin_accelerator, machine, machine_types, near_miss, nearest_offered, offered,
    training_list_as_of, training_machine_types)
from vxtrain.catalog.regions import (
    Region, RegionAccelerator, near_region, region, region_accelerator, region_accelerator_key, regions_offering,
    training_regions)
from vxtrain.catalog.tpus import (
    TpuMachine, TpuSize, is_tpu, tpu_accelerator_types, tpu_machine, tpu_machine_types, tpu_machines, tpu_region_key,
    tpu_size)

if TYPE_CHECKING:  # loaded on first use at run time (__getattr__ below)
    from vxtrain.catalog.capacity import (
        FLEX_START_MAX_TIMEOUT_S, FlexStart, ReservationRequirement, flex_start, flex_start_accelerators,
        reservation_requirement)
    from vxtrain.catalog.legacy_machines import (
        LegacyMachine, TierPool, legacy_machine, legacy_machine_names, scale_tier, scale_tiers)
    from vxtrain.catalog.quotas import (
        CPU_QUOTA_KEY, QUOTA_SERVICE, QuotaCandidate, QuotaMetric, accelerator_candidate, accelerator_quota,
        candidate_metrics, cpu_candidate, cpu_quota, known_metrics, machine_family, quota_id, quota_metric)

#: Lookups whose module loads when first asked for: a native spec with no accelerator
#: never reads the legacy names, the quota metrics or Flex Start's list (legacy_machines
#: and quotas add 1.7 ms and 1.8 ms to validate's start).
_LAZY: dict[str, str] = {
    **dict.fromkeys(("FLEX_START_MAX_TIMEOUT_S", "FlexStart", "ReservationRequirement", "flex_start",
                     "flex_start_accelerators", "reservation_requirement"), "capacity"),
    **dict.fromkeys(("LegacyMachine", "TierPool", "legacy_machine", "legacy_machine_names", "scale_tier",
                     "scale_tiers"), "legacy_machines"),
    **dict.fromkeys(("CPU_QUOTA_KEY", "QUOTA_SERVICE", "QuotaCandidate", "QuotaMetric", "accelerator_candidate",
                     "accelerator_quota", "candidate_metrics", "cpu_candidate", "cpu_quota", "known_metrics",
                     "machine_family", "quota_id", "quota_metric"), "quotas"),
}


def __getattr__(name: str) -> Any:
    """``catalog.X`` / ``from vxtrain.catalog import X`` for the lookups in _LAZY (PEP 562)."""
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CPU_QUOTA_KEY",
    "Egress",
    "FLEX_START_MAX_TIMEOUT_S",
    "FlexStart",
    "LegacyMachine",
    "Machine",
    "PREBUILT_DOC",
    "PREBUILT_SHAPE",
    "QUOTA_SERVICE",
    "QuotaCandidate",
    "QuotaMetric",
    "Region",
    "RegionAccelerator",
    "ReservationRequirement",
    "TierPool",
    "TpuMachine",
    "TpuSize",
    "accelerator_candidate",
    "accelerator_quota",
    "accelerator_types",
    "allowed_accelerators",
    "builtin_accelerator",
    "candidate_metrics",
    "catalog_accelerators",
    "cpu_candidate",
    "cpu_quota",
    "deprecated_accelerator",
    "flex_start",
    "flex_start_accelerators",
    "in_prebuilt_repository",
    "is_prebuilt_image",
    "is_tpu",
    "known_metrics",
    "legacy_machine",
    "legacy_machine_names",
    "machine",
    "machine_family",
    "machine_types",
    "multi_region",
    "n1_gpu_counts",
    "n1_gpu_limits",
    "near_miss",
    "near_region",
    "nearest_offered",
    "node_egress",
    "offered",
    "prebuilt_image",
    "quota_id",
    "quota_metric",
    "reduction_server_image",
    "region",
    "region_accelerator",
    "region_accelerator_key",
    "regions_offering",
    "reservation_requirement",
    "scale_tier",
    "scale_tiers",
    "tpu_accelerator_types",
    "tpu_machine",
    "tpu_machine_types",
    "tpu_machines",
    "tpu_region_key",
    "tpu_size",
    "training_accelerator",
    "training_list_as_of",
    "training_machine_types",
    "training_regions",
]
