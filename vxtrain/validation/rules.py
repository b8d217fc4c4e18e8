"""Semantic validation rules: what Vertex AI would reject (errors) or what is
probably a mistake (warnings), checked before any API call.

``check`` runs after the JSON-schema check (vxtrain/validation/schema.py), which
already reports wrong types, unknown keys, missing required keys, enums
(scheduling.strategy), duration syntax, ``replicas``/``count`` below 1, the
display_name length and incomplete ``python_package`` blocks. The rules do what
a schema cannot: cross-field checks and lookups in the machine catalog. They
read the lenient job model, so any field may be None.

This module is the registry: each rule group lives in its own module beside it
(``*_rules.py``, ``extra.py``), and ``RULES`` lists them in the order they run.
Every message names the bad value and what would be accepted; the Vertex doc
that forced a rule is linked beside it.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import NativeSpec
from vxtrain.model import Job
from vxtrain.validation import (accelerator_rules, container_rules, experiment_rules, extra, gpudirect_rules,
                                image_rules, label_rules, machine_rules, network_rules, package_rules, recovery_rules,
                                reduction_server_rules, region_rules, reservation_rules, role_rules, scheduling_rules,
                                study_rules, tensorboard_rules, tpu_rules)

Rule = Callable[[Job, NativeSpec], Iterable[Diagnostic]]

RULES: tuple[Rule, ...] = (
    role_rules.chief_rules,  # exactly one primary replica
    role_rules.extra_pool_rules,  # a pool only extra: writes gives its replicaCount
    machine_rules.check,
    accelerator_rules.check,
    tpu_rules.check,  # TPU jobs: one pool, one replica, topology or cloud-tpu count, Spot
    reduction_server_rules.check,
    container_rules.code_rules,  # image or python_package
    container_rules.env_rules,
    label_rules.check,
    scheduling_rules.check,
    reservation_rules.check,  # reservations, GB200's, the persistent resource ID in extra
    tensorboard_rules.check,
    role_rules.evaluator_rules,
    study_rules.check,  # the study: block
    package_rules.check,  # python_package source/package_uris, staging_bucket
    image_rules.check,  # build: base, source, requirements; image_repository
    region_rules.check,  # region and accelerators per region
    network_rules.check,  # VPC peering vs PSC-I, reserved ranges, NFS and Lustre mounts
    gpudirect_rules.check,  # the NCCL settings of multi-node GPUDirect-RDMA jobs; GPU partitions (MIG)
    experiment_rules.check,  # experiment, experiment_run, protected_artifact_location_id
    extra.check,  # extra: field by field, value by value
    recovery_rules.check,  # recovery: and notify:
)


def check(job: Job, native: NativeSpec) -> list[Diagnostic]:
    """Every semantic diagnostic of ``job`` (located through ``native``)."""
    out: list[Diagnostic] = []
    for rule in RULES:
        out += rule(job, native)
    # A mistake in ``defaults`` shows in every pool that inherits it: report it once.
    return list(dict.fromkeys(out))
