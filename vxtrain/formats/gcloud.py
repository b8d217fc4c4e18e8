"""gcloud ``--config`` files (a CustomJobSpec, or a whole CustomJob) → the native shape.

``gcloud ai custom-jobs create --config FILE`` takes a CustomJobSpec in its
camelCase JSON form (https://cloud.google.com/sdk/gcloud/reference/ai/custom-jobs/create).
Slot meanings are fixed by Vertex AI
(https://cloud.google.com/vertex-ai/docs/training/distributed-training):
0 chief, 1 workers, 2 parameter servers *or* Reduction Server, 3 evaluators;
``{}`` is an empty slot. Slot 2 is a Reduction Server when its image is one
(:func:`vxtrain.slots.is_reduction_server_image`: Google's
``vertex-ai-restricted/training/reductionserver`` or a mirror of it).

Accepted field names are read from the installed ``google.cloud.aiplatform_v1``
type sources *as text* (:mod:`vxtrain.protos`; never imported: validate must
start fast), so a field added by a newer library is accepted without a vxtrain
release. Fields the native format has no key for (``models``, ``encryptionSpec``, ...) are
kept in native ``extra`` (CustomJob JSON form) so nothing the user wrote is lost; the newer
job fields (``pscInterfaceConfig``, ``reservedIpRanges``, ``nfsMounts``, ``gpuPartitionSize``,
the experiment fields, ...) have native keys and map onto them.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from vxtrain import protos, slots
from vxtrain.diagnostics import Diagnostic
from vxtrain.formats.common import Conversion, describe, int_or_same, proto_duration
from vxtrain.loading.document import Document, KeyPath, NativeSpec
from vxtrain.model import (NO_DEFAULTS_ROLE, RESERVATION_AFFINITY, RESERVATION_NAME_KEY, Job, build,
                           merge_defaults, written_at)
from vxtrain.protos import MessageRef

if TYPE_CHECKING:  # annotations only: the native document being built is the user's YAML
    from vxtrain.vocab.jobjson import JsonObject

#: Where each message a config may contain is declared: (module under aiplatform_v1/types/,
#: class), and the fields vxtrain maps itself, used only when google-cloud-aiplatform
#: is not installed.
MESSAGES: dict[str, tuple[MessageRef, tuple[str, ...]]] = {
    "CustomJob": (("custom_job", "CustomJob"), ("displayName", "jobSpec", "labels", "encryptionSpec")),
    "CustomJobSpec": (("custom_job", "CustomJobSpec"), (
        "workerPoolSpecs", "scheduling", "serviceAccount", "network", "baseOutputDirectory", "tensorboard",
        "enableWebAccess", "persistentResourceId", "reservedIpRanges", "pscInterfaceConfig", "enableDashboardAccess",
        "experiment", "experimentRun", "protectedArtifactLocationId")),
    "WorkerPoolSpec": (("custom_job", "WorkerPoolSpec"), (
        "containerSpec", "pythonPackageSpec", "machineSpec", "replicaCount", "diskSpec", "nfsMounts",
        "lustreMounts")),
    "ContainerSpec": (("custom_job", "ContainerSpec"), ("imageUri", "command", "args", "env")),
    "PythonPackageSpec": (("custom_job", "PythonPackageSpec"), (
        "executorImageUri", "packageUris", "pythonModule", "args", "env")),
    "MachineSpec": (("machine_resources", "MachineSpec"), (
        "machineType", "acceleratorType", "acceleratorCount", "tpuTopology", "reservationAffinity", "gpuPartitionSize")),
    "DiskSpec": (("machine_resources", "DiskSpec"), ("bootDiskType", "bootDiskSizeGb")),
    "Scheduling": (("custom_job", "Scheduling"), (
        "timeout", "restartJobOnWorkerRestart", "strategy", "disableRetries", "maxWaitDuration")),
    "GcsDestination": (("io", "GcsDestination"), ("outputUriPrefix",)),
    "EnvVar": (("env_var", "EnvVar"), ("name", "value")),
}

#: CustomJob fields the server sets; a described job may carry them, they are ignored.
OUTPUT_ONLY: frozenset[str] = frozenset({
    "name", "state", "createTime", "startTime", "endTime", "updateTime", "error",
    "webAccessUris", "satisfiesPzs", "satisfiesPzi",
})


def fields_of(message: str) -> tuple[str, ...]:
    """camelCase field names of one CustomJob-related message, from the installed protos
    (:mod:`vxtrain.protos`), else the fallback list of :data:`MESSAGES`."""
    ref, fallback = MESSAGES[message]
    fields = protos.message_fields(*ref)
    return tuple(fields) if fields else fallback


def convert(document: Document, *, display_name: str | None = None) -> tuple[NativeSpec, list[Diagnostic]]:
    """A gcloud config (CustomJobSpec or CustomJob) in the native shape, with its origin map."""
    conv = Conversion(document)
    root = document.data
    spec, prefix = _unwrap(conv, root)
    name = root.get("displayName") if prefix else None
    if name is not None:
        conv.put(("display_name",), name, ("displayName",))
    elif display_name:
        conv.put(("display_name",), display_name, ())
    if prefix:
        _custom_job_fields(conv, root)
    if spec is not None:
        _spec_fields(conv, spec, prefix)
    return conv.result("gcloud")


def _unwrap(conv: Conversion, root: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, KeyPath]:
    """The CustomJobSpec of the document and its key path (``jobSpec`` for a whole CustomJob)."""
    if "jobSpec" not in root:
        return root, ()
    return conv.mapping(root["jobSpec"], ("jobSpec",), "jobSpec"), ("jobSpec",)


def _custom_job_fields(conv: Conversion, root: Mapping[str, Any]) -> None:
    known = set(fields_of("CustomJob"))
    conv.check_keys({k: v for k, v in root.items() if k not in OUTPUT_ONLY}, known, ())
    ignored = sorted(k for k in root if k in OUTPUT_ONLY)
    if ignored:
        conv.warning("output-only-ignored", "ignored fields set by the server, not by a job config: "
                     + ", ".join(ignored), (ignored[0],))
    if "labels" in root:
        conv.put(("labels",), root["labels"], ("labels",))
    for key in sorted(known - {"displayName", "jobSpec", "labels"} - OUTPUT_ONLY):
        if key in root:
            conv.put(("extra", key), root[key], (key,))


def _spec_fields(conv: Conversion, spec: Mapping[str, Any], prefix: KeyPath) -> None:
    hints = {k: f"'{k}' is a CustomJob field, not a CustomJobSpec one: put the spec under 'jobSpec:' "
                "beside it (or use --display-name)" for k in ("displayName", "labels")}
    conv.check_keys(spec, fields_of("CustomJobSpec"), prefix, hints)
    simple = {"serviceAccount": "service_account", "tensorboard": "tensorboard",
              "enableWebAccess": "enable_web_access", "persistentResourceId": "persistent_resource", **NETWORK_FIELDS}
    for key, native in simple.items():
        if key in spec:
            conv.put((native,), spec[key], prefix + (key,))
    if "pscInterfaceConfig" in spec:
        _psc_interface(conv, spec["pscInterfaceConfig"], prefix + ("pscInterfaceConfig",))
    if "baseOutputDirectory" in spec:
        _output_dir(conv, spec["baseOutputDirectory"], prefix + ("baseOutputDirectory",))
    if "scheduling" in spec:
        _scheduling(conv, spec["scheduling"], prefix + ("scheduling",))
    mapped = {"workerPoolSpecs", "baseOutputDirectory", "scheduling", "pscInterfaceConfig", *simple}
    for key in fields_of("CustomJobSpec"):
        if key in spec and key not in mapped:
            conv.put(("extra", "jobSpec", key), spec[key], prefix + (key,))
    _pools(conv, spec.get("workerPoolSpecs"), prefix + ("workerPoolSpecs",))


#: CustomJobSpec fields whose native key has the same value (the newer job fields and the network).
NETWORK_FIELDS: dict[str, str] = {
    "network": "network", "reservedIpRanges": "reserved_ip_ranges", "enableDashboardAccess": "enable_dashboard_access",
    "experiment": "experiment", "experimentRun": "experiment_run",
    "protectedArtifactLocationId": "protected_artifact_location_id",
}
#: The fields of the messages below and their native keys (the same names in snake_case).
_DNS_PEERING = {"domain": "domain", "targetProject": "target_project", "targetNetwork": "target_network"}
_MOUNTS: dict[str, tuple[str, dict[str, str]]] = {
    "nfsMounts": ("nfs_mounts", {"server": "server", "path": "path", "mountPoint": "mount_point"}),
    "lustreMounts": ("lustre_mounts", {"instanceIp": "instance_ip", "volumeHandle": "volume_handle",
                                       "filesystem": "filesystem", "mountPoint": "mount_point"}),
}


def _psc_interface(conv: Conversion, value: Any, src: KeyPath) -> None:
    """pscInterfaceConfig → psc_interface {network_attachment, dns_peering: [{domain, ...}]}."""
    raw = conv.mapping(value, src, "pscInterfaceConfig")
    if raw is None:
        return
    conv.link(("psc_interface",), src)
    if "networkAttachment" in raw:
        conv.put(("psc_interface", "network_attachment"), raw["networkAttachment"], src + ("networkAttachment",))
    if "dnsPeeringConfigs" in raw:
        _objects(conv, raw["dnsPeeringConfigs"], ("psc_interface", "dns_peering"), src + ("dnsPeeringConfigs",),
                 _DNS_PEERING)


def _objects(conv: Conversion, value: Any, native: KeyPath, src: KeyPath, names: Mapping[str, str]) -> None:
    """A list of messages → a list of native mappings (each field renamed by ``names``; others kept as
    written, for the schema to name), every item and field linked to its source line."""
    if not isinstance(value, list):
        conv.put(native, value, src)  # the schema says what it should be
        return
    items = [{names.get(str(key), str(key)): sub for key, sub in item.items()} if isinstance(item, Mapping) else item
             for item in value]
    conv.put(native, items, src)
    for i, item in enumerate(value):
        if isinstance(item, Mapping):
            for key in item:
                conv.link(native + (i, names.get(str(key), str(key))), src + (i, str(key)))


def _output_dir(conv: Conversion, value: Any, src: KeyPath) -> None:
    if isinstance(value, str):  # a bare URI is a common slip; accept it
        conv.put(("base_output_dir",), value, src)
        return
    raw = conv.mapping(value, src, "baseOutputDirectory")
    if raw is None:
        return
    conv.check_keys(raw, fields_of("GcsDestination"), src)
    if "outputUriPrefix" in raw:
        conv.put(("base_output_dir",), raw["outputUriPrefix"], src + ("outputUriPrefix",))


def _scheduling(conv: Conversion, value: Any, src: KeyPath) -> None:
    raw = conv.mapping(value, src, "scheduling")
    if raw is None:
        return
    conv.check_keys(raw, fields_of("Scheduling"), src)
    conv.link(("scheduling",), src)
    for key, native in (("timeout", "timeout"), ("maxWaitDuration", "max_wait")):
        if key in raw:
            seconds = proto_duration(raw[key])
            if seconds is None:
                conv.error("bad-value", f"{key} {raw[key]!r} is not a duration; write seconds like \"86400s\"",
                           src + (key,))
            else:
                conv.put(("scheduling", native), seconds, src + (key,))
    for key, native in (("restartJobOnWorkerRestart", "restart_job_on_worker_restart"),
                        ("strategy", "strategy"), ("disableRetries", "disable_retries")):
        if key in raw:
            conv.put(("scheduling", native), raw[key], src + (key,))


def _pools(conv: Conversion, value: Any, src: KeyPath) -> None:
    # Pool 0 may be missing or empty: a "missing-chief" error then points at its slot.
    conv.link(("chief",), src + (0,) if isinstance(value, list) and value else src)
    if value is None:
        conv.error("missing-key", "a CustomJobSpec needs workerPoolSpecs (pool 0 is the chief)", src[:-1])
        return
    if not isinstance(value, list):
        conv.error("wrong-type", f"workerPoolSpecs must be a list of worker pool specs, got {describe(value)}",
                   src)
        return
    most = len(slots.SLOTS)
    if len(value) > most:
        conv.error("too-many-pools", f"Vertex AI takes at most {most} worker pools "
                   f"(chief, workers, parameter servers or Reduction Server, evaluators), got {len(value)}",
                   src + (most,))
    for index, raw in enumerate(value[:most]):
        if raw is None or raw == {}:
            continue  # an empty slot: "All worker pools except the first one are optional"
        pool = conv.mapping(raw, src + (index,), f"workerPoolSpecs[{index}]")
        if pool is not None:
            _pool(conv, pool, index, src + (index,))


def _pool(conv: Conversion, pool: Mapping[str, Any], index: int, src: KeyPath) -> None:
    container = pool.get("containerSpec")
    role = slots.role_of(index, container.get("imageUri") if isinstance(container, Mapping) else None)
    base = (role,)
    conv.link(base, src)
    conv.check_keys(pool, fields_of("WorkerPoolSpec"), src)
    _replicas(conv, pool, base, src)
    if "machineSpec" in pool:
        _machine(conv, pool["machineSpec"], base, index, src + ("machineSpec",))
    if "containerSpec" in pool and "pythonPackageSpec" in pool:
        conv.error("conflicting-keys", "a worker pool takes containerSpec or pythonPackageSpec, not both",
                   src + ("pythonPackageSpec",))
    if "containerSpec" in pool:
        _container(conv, pool["containerSpec"], base, src + ("containerSpec",))
    elif "pythonPackageSpec" in pool:
        _python_package(conv, pool["pythonPackageSpec"], base, src + ("pythonPackageSpec",))
    if "diskSpec" in pool:
        _disk(conv, pool["diskSpec"], base, src + ("diskSpec",))
    for key, (native, names) in _MOUNTS.items():
        if key in pool:
            _objects(conv, pool[key], base + (native,), src + (key,), names)
    mapped = {"containerSpec", "pythonPackageSpec", "machineSpec", "replicaCount", "diskSpec", *_MOUNTS}
    for key in fields_of("WorkerPoolSpec"):
        if key in pool and key not in mapped:
            conv.put(("extra", "jobSpec", "workerPoolSpecs", index, key), pool[key], src + (key,))


def _replicas(conv: Conversion, pool: Mapping[str, Any], base: KeyPath, src: KeyPath) -> None:
    if "replicaCount" not in pool:
        return
    # int64 fields are strings in proto JSON: "4"
    conv.put(base + ("replicas",), int_or_same(pool["replicaCount"]), src + ("replicaCount",))


def _machine(conv: Conversion, value: Any, base: KeyPath, index: int, src: KeyPath) -> None:
    raw = conv.mapping(value, src, "machineSpec")
    if raw is None:
        return
    conv.check_keys(raw, fields_of("MachineSpec"), src)
    if "machineType" in raw:
        conv.put(base + ("machine_type",), raw["machineType"], src + ("machineType",))
    _accelerator(conv, raw, base, src)
    mapped = {"machineType", "acceleratorType", "acceleratorCount", "gpuPartitionSize"}
    if "tpuTopology" in raw:
        conv.put(base + ("tpu_topology",), raw["tpuTopology"], src + ("tpuTopology",))
        mapped.add("tpuTopology")
    if _reservation(conv, raw.get("reservationAffinity"), base, src + ("reservationAffinity",)):
        mapped.add("reservationAffinity")
    for key in fields_of("MachineSpec"):
        if key in raw and key not in mapped:
            conv.put(("extra", "jobSpec", "workerPoolSpecs", index, "machineSpec", key), raw[key], src + (key,))


_AFFINITIES = {api: native for native, api in RESERVATION_AFFINITY.items()}


def _reservation(conv: Conversion, value: Any, base: KeyPath, src: KeyPath) -> bool:
    """reservationAffinity → reservation {affinity, name} when it has that shape (a known type;
    with specific, the reservation-name key and one name); False leaves it to ``extra`` as written."""
    if not isinstance(value, Mapping) or value.get("reservationAffinityType") not in _AFFINITIES:
        return False
    affinity = _AFFINITIES[value["reservationAffinityType"]]
    values = value.get("values")
    if set(value) - {"reservationAffinityType", "key", "values"} or (
            affinity != "specific" and ("key" in value or "values" in value)) or (
            "key" in value and value["key"] != RESERVATION_NAME_KEY) or (
            "values" in value and not (isinstance(values, list) and len(values) == 1)):
        return False
    conv.link(base + ("reservation",), src)
    conv.put(base + ("reservation", "affinity"), affinity, src + ("reservationAffinityType",))
    if isinstance(values, list):
        conv.put(base + ("reservation", "name"), values[0], src + ("values", 0))
    return True


def _accelerator(conv: Conversion, raw: Mapping[str, Any], base: KeyPath, src: KeyPath) -> None:
    """acceleratorType/acceleratorCount → accelerator {type, count} (UNSPECIFIED or 0: none)."""
    acc_type = raw.get("acceleratorType")
    has_type = acc_type not in (None, "", "ACCELERATOR_TYPE_UNSPECIFIED")
    count = raw.get("acceleratorCount")
    has_count = count not in (None, 0, "0")
    if has_type or has_count:
        conv.link(base + ("accelerator",), src + ("acceleratorType" if has_type else "acceleratorCount",))
    if has_type:
        conv.put(base + ("accelerator", "type"), acc_type, src + ("acceleratorType",))
    if has_count:
        conv.put(base + ("accelerator", "count"), int_or_same(count), src + ("acceleratorCount",))
    if "gpuPartitionSize" in raw:
        conv.put(base + ("accelerator", "partition_size"), raw["gpuPartitionSize"], src + ("gpuPartitionSize",))


def _container(conv: Conversion, value: Any, base: KeyPath, src: KeyPath) -> None:
    raw = conv.mapping(value, src, "containerSpec")
    if raw is None:
        return
    conv.check_keys(raw, fields_of("ContainerSpec"), src)
    if "imageUri" in raw:
        conv.put(base + ("image",), raw["imageUri"], src + ("imageUri",))
    if base == ("reduction_server",):
        dropped = [k for k in ("command", "args", "env") if raw.get(k)]
        if dropped:  # the Reduction Server image takes no command, args or env of ours
            conv.warning("rs-container-ignored", "the Reduction Server pool runs Google's image as is; "
                         f"dropped {', '.join(dropped)}", src + (dropped[0],))
        return
    _command_args_env(conv, raw, base, src)


def _command_args_env(conv: Conversion, raw: Mapping[str, Any], base: KeyPath, src: KeyPath) -> None:
    for key in ("command", "args"):
        if key in raw:
            conv.put(base + (key,), raw[key], src + (key,))
    if "env" in raw:
        _env(conv, raw["env"], base, src + ("env",))


def _env(conv: Conversion, value: Any, base: KeyPath, src: KeyPath) -> None:
    """``[{name, value}]`` → ``{name: value}``; each native key points at its list item."""
    if not isinstance(value, list):
        conv.error("wrong-type", f"env must be a list of {{name, value}} items, got {describe(value)}", src)
        return
    env: dict[str, object] = {}  # name → value as written (the schema checks the values)
    for i, item in enumerate(value):
        raw = conv.mapping(item, src + (i,), f"env[{i}]")
        if raw is None:
            continue
        conv.check_keys(raw, fields_of("EnvVar"), src + (i,))
        name = raw.get("name")
        if not isinstance(name, str) or not name:
            conv.error("missing-key", f"env[{i}] needs a name", src + (i,))
            continue
        if name in env:
            conv.error("duplicate-env", f"env var {name!r} is set twice; keep one", src + (i, "name"))
        env[name] = raw.get("value", "")
        conv.link(base + ("env", name), src + (i, "name"))
    conv.put(base + ("env",), env, src, items=False)


def _python_package(conv: Conversion, value: Any, base: KeyPath, src: KeyPath) -> None:
    raw = conv.mapping(value, src, "pythonPackageSpec")
    if raw is None:
        return
    conv.check_keys(raw, fields_of("PythonPackageSpec"), src)
    conv.link(base + ("python_package",), src)
    for key, native in (("executorImageUri", "executor_image"), ("packageUris", "package_uris"),
                        ("pythonModule", "module")):
        if key in raw:
            conv.put(base + ("python_package", native), raw[key], src + (key,))
    _command_args_env(conv, raw, base, src)


def _disk(conv: Conversion, value: Any, base: KeyPath, src: KeyPath) -> None:
    raw = conv.mapping(value, src, "diskSpec")
    if raw is None:
        return
    conv.check_keys(raw, fields_of("DiskSpec"), src)
    conv.link(base + ("disk",), src)
    if "bootDiskType" in raw:
        conv.put(base + ("disk", "type"), raw["bootDiskType"], src + ("bootDiskType",))
    if "bootDiskSizeGb" in raw:
        conv.put(base + ("disk", "size_gb"), int_or_same(raw["bootDiskSizeGb"]), src + ("bootDiskSizeGb",))


def job_from_custom_job(custom_job: Mapping[str, Any]) -> Job:
    """The job model of a CustomJob in its REST JSON form (camelCase), as a client sent it.

    The one converter from Vertex's shape to the model: :func:`convert`, then
    :func:`vxtrain.model.build`. Lenient like ``build``: what does not convert
    is left out, and the diagnostics are not returned (``vxtrain validate``
    reports them for files; a request to the emulator was already checked
    the way Vertex AI checks it).
    """
    native, _ = convert(Document(dict(custom_job), "<CustomJob>"))
    return build(native.data)


# --- the spec as sent: extra's CustomJob fields on their native keys -------------------

#: Where ``extra`` writes worker pools (compile merges them by position, slot by slot).
EXTRA_POOLS: KeyPath = ("extra", "jobSpec", "workerPoolSpecs")
#: The native keys of a pool the spec writes that ``as_sent`` takes from ``extra``'s
#: WorkerPoolSpec (the hardware, the replica count, the boot disk, the mounts). A pool only
#: ``extra`` writes takes all.
SENT_POOL_KEYS: tuple[str, ...] = ("machine_type", "accelerator", "tpu_topology", "replicas", "disk", "nfs_mounts",
                                   "lustre_mounts")
#: A pool's code in ``extra`` (each WorkerPoolSpec task) → the native keys it sets: a
#: containerSpec's imageUri, command and args, a pythonPackageSpec's executorImageUri,
#: packageUris and pythonModule (field by field, over the pool's own python_package) and
#: args. Moved only onto a pool that compiles to the same task, or to none (a pool without
#: code of its own); the other task is extra.py's oneof conflict to report. env: ``_sent_env``.
SENT_CODE_KEYS: dict[str, tuple[str, ...]] = {"containerSpec": ("image", "command", "args"),
                                              "pythonPackageSpec": ("python_package", "args")}
#: acceleratorType values that mean no accelerator (gcloud's convert reads them as none).
_NO_ACCELERATOR = (None, "", "ACCELERATOR_TYPE_UNSPECIFIED")


def as_sent(native: NativeSpec) -> NativeSpec:
    """``native`` as the job is sent: the CustomJob fields ``extra:`` sets that the native
    format has keys for (a pool's hardware, replicas, disk, mounts and code, the scheduling,
    the network fields), written on those keys (the mapping is :func:`convert`'s), so every
    rule, the bandwidth and cost plans check what compile sends (compile merges ``extra``
    last). Each such value is located at the ``extra`` line that set it
    (``NativeSpec.sent``). A pool in a slot only ``extra`` fills becomes a pool of its own,
    without ``defaults`` (compile never sent them there). ``native`` itself when ``extra``
    sets none of these fields.
    """
    extra = native.data.get("extra")
    spec = extra.get("jobSpec") if isinstance(extra, Mapping) else None
    if not isinstance(spec, Mapping):
        return native
    data = dict(native.data)
    sent: dict[KeyPath, KeyPath] = {}
    pools = spec.get("workerPoolSpecs")
    for index, raw in enumerate(pools[:len(slots.SLOTS)] if isinstance(pools, list) else []):
        if isinstance(raw, Mapping) and raw:
            _sent_pool(native, data, sent, raw, index)
    if isinstance(spec.get("scheduling"), Mapping):
        conv = Conversion(native.source)
        _scheduling(conv, spec["scheduling"], ("extra", "jobSpec", "scheduling"))
        written = conv.data.get("scheduling") or {}
        if written:
            own = native.data.get("scheduling")
            data["scheduling"] = {**(own if isinstance(own, Mapping) else {}), **written}
            sent.update({("scheduling", key): conv.origin[("scheduling", key)] for key in written})
    _sent_job_fields(native, data, sent, spec)
    if not sent:
        return native
    return NativeSpec(data=data, format=native.format, source=native.source, origin=native.origin,
                      sent={**native.sent, **sent})


def _sent_job_fields(native: NativeSpec, data: JsonObject, sent: dict[KeyPath, KeyPath],
                     spec: Mapping[str, Any]) -> None:
    """The network and the newer job fields ``extra.jobSpec`` sets, on their native keys (each
    replaces the spec's own: compile merges ``extra`` last, a list or scalar whole)."""
    conv = Conversion(native.source)
    src = ("extra", "jobSpec")
    for key, name in NETWORK_FIELDS.items():
        if key in spec:
            conv.put((name,), spec[key], src + (key,))
    if "pscInterfaceConfig" in spec:
        _psc_interface(conv, spec["pscInterfaceConfig"], src + ("pscInterfaceConfig",))
    for key in conv.data:
        own = data.get(key)
        written = conv.data[key]
        # pscInterfaceConfig merges field by field into the spec's psc_interface (deep_merge).
        data[key] = {**own, **written} if isinstance(own, Mapping) and isinstance(written, Mapping) else written
    sent.update({path: at for path, at in conv.origin.items() if path})


def _sent_pool(native: NativeSpec, data: JsonObject, sent: dict[KeyPath, KeyPath],
               raw: Mapping[str, Any], index: int) -> None:
    """Slot ``index``'s WorkerPoolSpec in ``extra`` onto its pool's native keys in ``data``."""
    conv = Conversion(native.source)
    src = EXTRA_POOLS + (index,)
    _pool(conv, raw, index, src)
    converted = [key for key in conv.data if key != "extra"]
    if not converted and not _takes_gpus(raw):
        return
    container = raw.get("containerSpec")
    role = converted[0] if converted else slots.role_of(
        index, container.get("imageUri") if isinstance(container, Mapping) else None)
    # Slot 2 is the spec's parameter servers or Reduction Server, whichever it writes.
    own_role = next((r for r in slots.SLOTS[index].roles if isinstance(native.data.get(r), Mapping)), None)
    target = own_role or role
    written: JsonObject = conv.data.get(role, {})
    links = {(target, *path[1:]): at for path, at in conv.origin.items() if path[:1] == (role,)}
    if own_role is None:  # a pool only extra writes: nothing of defaults reaches it
        defaults = native.data.get("defaults")
        blank = dict.fromkeys(defaults, None) if isinstance(defaults, Mapping) and target != NO_DEFAULTS_ROLE \
            else {}
        data[target] = {**blank, **written}
        _no_gpus(data[target], {}, raw, src, target, links)
        sent.update(links)
        return
    own: Mapping[str, Any] = native.data[own_role]
    pool = dict(own)
    defaults = native.data.get("defaults")
    merged = own if target == NO_DEFAULTS_ROLE or not isinstance(defaults, Mapping) else \
        merge_defaults(defaults, own)
    keys = SENT_POOL_KEYS + _sent_code(raw, merged, target)
    for key in keys:
        if key not in written:
            continue
        value = written[key]
        if not isinstance(value, Mapping):
            pool[key] = value
            # a list's items (the mounts) and their fields point at their own extra lines
            sent.update({path: at for path, at in links.items() if path[:2] == (target, key)})
            continue
        base = merged.get(key)
        pool[key] = {**(base if isinstance(base, Mapping) else {}), **value}
        if key == "accelerator" and isinstance(base, Mapping) and "type" in base and "count" not in pool[key]:
            pool[key]["count"] = 1  # the native count's default, compiled with the spec's type
        for sub in pool[key]:
            path: KeyPath = (target, key, sub)
            at = links.get(path) or written_at(native.data, own_role, key, sub)
            if at is not None and at != path:
                sent[path] = at
        whole = written_at(native.data, own_role, key) or links.get((target, key))
        if whole is not None and whole != (target, key):
            sent[(target, key)] = whole
    _no_gpus(pool, merged, raw, src, target, sent)
    _kept_build(native, merged, own, pool, target, sent, keys)
    _sent_env(native, sent, raw, written, links, merged, own, pool, target)
    data[target] = pool


def compiled_task(pool: Mapping[str, Any]) -> str | None:
    """The WorkerPoolSpec task a native pool (``defaults`` merged) compiles to: a
    pythonPackageSpec for a package without an image, a containerSpec for anything else a
    container runs (an image, a build, a command, args or env), None for a pool without code
    (compile then sends no task, and ``extra`` may give either)."""
    if pool.get("python_package") is not None and pool.get("image") is None:
        return "pythonPackageSpec"
    if any(pool.get(key) for key in ("image", "build", "command", "args", "env")):
        return "containerSpec"
    return None


def _sent_code(raw: Mapping[str, Any], merged: Mapping[str, Any], role: str) -> tuple[str, ...]:
    """The native code keys ``extra``'s task sets on the pool: those of the one task it gives,
    when the pool compiles to that task or to none (() otherwise: a conflict, or the Reduction
    Server, whose image vxtrain chooses)."""
    given = [task for task in SENT_CODE_KEYS if isinstance(raw.get(task), Mapping)]
    if role == NO_DEFAULTS_ROLE or len(given) != 1:
        return ()
    compiled = compiled_task(merged)
    return SENT_CODE_KEYS[given[0]] if compiled in (None, given[0]) else ()


def _no_gpus(pool: JsonObject, merged: Mapping[str, Any], raw: Mapping[str, Any], src: KeyPath, role: str,
             sent: dict[KeyPath, KeyPath]) -> None:
    """What ``extra`` sends when it takes GPUs away (compile merges it over the spec's own):
    ``acceleratorCount: 0`` under a type is 0 GPUs, which meets the native count's minimum of 1
    at its line (without any type it means no accelerator, as in a gcloud config);
    ``ACCELERATOR_TYPE_UNSPECIFIED`` over the spec's type leaves a count without a type
    (Vertex's "Both ... should be specified or none", at the type's line), or, with a count
    of 0 too, no accelerator (a GPU machine's missing-accelerator)."""
    count_zero = _zero_count(raw)
    type_none = _type_none(raw)
    base = merged.get("accelerator")
    acc = {**(base if isinstance(base, Mapping) else {}), **_mapping_or_empty(pool.get("accelerator"))}
    if not (count_zero or type_none) or acc.get("type") in _NO_ACCELERATOR:
        return
    at = src + ("machineSpec",)
    if type_none and count_zero:  # no accelerator (one from defaults would merge back: left as written)
        pool.pop("accelerator", None)
        sent[(role, "accelerator")] = at
        return
    if type_none:
        acc.pop("type", None)
        acc.setdefault("count", 1)
        sent[(role, "accelerator", "count")] = at + ("acceleratorType",)
    else:
        acc["count"] = 0
        sent[(role, "accelerator", "count")] = at + ("acceleratorCount",)
    pool["accelerator"] = acc


def _mapping_or_empty(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _takes_gpus(raw: Mapping[str, Any]) -> bool:
    """Whether the WorkerPoolSpec ``raw`` writes an acceleratorCount of 0 or an acceleratorType of none."""
    return _zero_count(raw) or _type_none(raw)


def _type_none(raw: Mapping[str, Any]) -> bool:
    machine = raw.get("machineSpec")
    return isinstance(machine, Mapping) and "acceleratorType" in machine and \
        machine["acceleratorType"] in _NO_ACCELERATOR


def _zero_count(raw: Mapping[str, Any]) -> bool:
    """Whether the WorkerPoolSpec ``raw`` writes ``machineSpec.acceleratorCount: 0``."""
    machine = raw.get("machineSpec")
    return isinstance(machine, Mapping) and machine.get("acceleratorCount") in (0, "0")


def _kept_build(native: NativeSpec, merged: Mapping[str, Any], own: Mapping[str, Any], pool: JsonObject,
                role: str, sent: dict[KeyPath, KeyPath], keys: tuple[str, ...]) -> None:
    """A ``build:`` the pool inherits stays beside the image ``extra`` gives it (the pool's own
    code key would otherwise drop it from ``defaults``): both are sent, and the rules say so."""
    if "image" in keys and "image" in pool and "build" in merged and "build" not in own:
        pool["build"] = merged["build"]
        at = written_at(native.data, role, "build")
        if at is not None:
            sent[(role, "build")] = at


def _sent_env(native: NativeSpec, sent: dict[KeyPath, KeyPath], raw: Mapping[str, Any], written: Mapping[str, Any],
              links: Mapping[KeyPath, KeyPath], merged: Mapping[str, Any], own: Mapping[str, Any],
              pool: JsonObject, role: str) -> None:
    """The env ``extra`` gives the code the pool compiles to (compile merges it by name, as
    ``defaults``' env merges with the pool's), onto the pool's ``env``. Env given to the other
    kind of code is extra.py's conflict to report; the Reduction Server takes none."""
    env = written.get("env")
    code = compiled_task({**merged, **pool}) or "containerSpec"
    if role == NO_DEFAULTS_ROLE or not isinstance(raw.get(code), Mapping) or not isinstance(env, Mapping) or not env:
        return
    own_env = own.get("env")
    pool["env"] = {**(own_env if isinstance(own_env, Mapping) else {}), **env}
    sent.update({(role, "env", name): links[(role, "env", name)] for name in env if (role, "env", name) in links})
    whole = written_at(native.data, role, "env") or links.get((role, "env"))
    if whole is not None and whole != (role, "env"):
        sent[(role, "env")] = whole
