"""A compiled CustomJob as the arguments of google-cloud-pipeline-components' CustomTrainingJobOp.

CustomTrainingJobOp (``google_cloud_pipeline_components.v1.custom_job``) takes the job's
parts as separate inputs and writes them into a payload with proto field names
(``worker_pool_specs``, ``machine_spec``, ``replica_count``); its launcher builds the job
from that payload with the client library's proto-plus messages, which know fields by
those names only (``JobServiceClient.create_custom_job(custom_job=dict)``). vxtrain
compiles the REST form (camelCase), so each pool is renamed field by field after the
installed aiplatform_v1 protos (``vxtrain.protos``), and int64 values are numbers.

Every field of the compiled job that no input of the op carries is returned, so
``convert`` can refuse the job rather than write another one. Pure: no kfp, no IO.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from vxtrain import protos

#: The op's inputs that are one field of the compiled CustomJob: input → (path in the job).
#: google_cloud_pipeline_components/v1/custom_job/component.py (custom_training_job), 2.22.0.
SCALAR_INPUTS: dict[str, tuple[str, ...]] = {
    "display_name": ("displayName",),
    "labels": ("labels",),
    "encryption_spec_key_name": ("encryptionSpec", "kmsKeyName"),
    "timeout": ("jobSpec", "scheduling", "timeout"),
    "restart_job_on_worker_restart": ("jobSpec", "scheduling", "restartJobOnWorkerRestart"),
    "strategy": ("jobSpec", "scheduling", "strategy"),
    "max_wait_duration": ("jobSpec", "scheduling", "maxWaitDuration"),
    "service_account": ("jobSpec", "serviceAccount"),
    "tensorboard": ("jobSpec", "tensorboard"),
    "enable_web_access": ("jobSpec", "enableWebAccess"),
    "network": ("jobSpec", "network"),
    "reserved_ip_ranges": ("jobSpec", "reservedIpRanges"),
    "base_output_directory": ("jobSpec", "baseOutputDirectory", "outputUriPrefix"),
    "persistent_resource_id": ("jobSpec", "persistentResourceId"),
}
#: The op's inputs that are messages of the job, renamed to proto field names like the pools.
MESSAGE_INPUTS: dict[str, tuple[tuple[str, ...], protos.MessageRef]] = {
    "worker_pool_specs": (("jobSpec", "workerPoolSpecs"), ("custom_job", "WorkerPoolSpec")),
    "psc_interface_config": (("jobSpec", "pscInterfaceConfig"), ("service_networking", "PscInterfaceConfig")),
}
#: Proto types whose JSON form may be a string (int64 and the like, RFC: proto3 JSON mapping)
#: but which the op's payload must hold as numbers for proto-plus.
_INTEGER_TYPES = frozenset({"INT64", "UINT64", "SINT64", "FIXED64", "SFIXED64",
                            "INT32", "UINT32", "SINT32", "FIXED32", "SFIXED32"})


@dataclass(frozen=True)
class OpArguments:
    """The op's arguments for one compiled job, and the job's fields it has no input for."""

    arguments: dict[str, Any]
    #: Dotted paths of the compiled job (``jobSpec.scheduling.disableRetries``) the op drops.
    dropped: list[str] = field(default_factory=list)


def op_arguments(custom_job: Mapping[str, Any], project: str | None, region: str | None) -> OpArguments:
    """CustomTrainingJobOp's arguments for ``custom_job`` (the compiled REST JSON).

    ``project``/``region``: the job's, when the spec or the options give them; without one,
    the op's own default stands (the PipelineJob's project and location on Vertex AI)."""
    arguments: dict[str, Any] = {}
    used: set[tuple[str, ...]] = set()
    for name, path in SCALAR_INPUTS.items():
        value = _at(custom_job, path)
        if value is not None:
            arguments[name] = value
            used.add(path)
    for name, (path, message) in MESSAGE_INPUTS.items():
        value = _at(custom_job, path)
        if value is not None:
            arguments[name] = proto_names(value, message)
            used.add(path)
    if project:
        arguments["project"] = project
    if region:
        arguments["location"] = region
    return OpArguments(arguments, sorted(_leaves(custom_job, used)))


def proto_names(value: Any, message: protos.MessageRef | None) -> Any:
    """``value`` (REST JSON of ``message``) with proto field names and integer numbers, recursively."""
    if isinstance(value, list):
        return [proto_names(item, message) for item in value]
    if not isinstance(value, Mapping):
        return value
    fields = protos.message_fields(*message) if message else None
    out: dict[str, Any] = {}
    for key, item in value.items():
        known = fields.get(key) if fields else None
        if known is None:  # a field these protos do not declare: named by the proto JSON rule
            out[camel_to_snake(key)] = proto_names(item, None)
        elif known.kind == "map":  # keys are data, not field names
            out[known.name] = {k: proto_names(v, known.message) for k, v in item.items()}
        elif known.type in _INTEGER_TYPES:
            out[known.name] = [int(v) for v in item] if isinstance(item, list) else int(item)
        else:
            out[known.name] = proto_names(item, known.message)
    return out


def camel_to_snake(name: str) -> str:
    """``bootDiskSizeGb`` → ``boot_disk_size_gb`` (the inverse of the proto JSON name rule)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _at(data: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    """The value at ``path`` in ``data``, or None."""
    current: Any = data
    for key in path:
        if not isinstance(current, Mapping) or key not in current:
            return None
        current = current[key]
    return current


def _leaves(data: Mapping[str, Any], used: set[tuple[str, ...]], prefix: tuple[str, ...] = ()) -> list[str]:
    """Dotted paths of the values in ``data`` under no path of ``used`` (empty mappings skipped)."""
    found: list[str] = []
    for key, value in data.items():
        path = (*prefix, key)
        if path in used:
            continue
        if isinstance(value, Mapping) and any(u[:len(path)] == path for u in used):
            found += _leaves(value, used, path)
        elif value not in ({}, [], None):
            found.append(".".join(path))
    return found
