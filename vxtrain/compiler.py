"""Job model → the REST JSON (camelCase) of a Vertex AI CustomJob.

Pure: no environment, clock or network, and deterministic key order, so
``plan`` output and ``convert --to gcloud`` files diff cleanly. The result is
the JSON form of ``google.cloud.aiplatform_v1.CustomJob`` (what the REST API
and ``gcloud ai custom-jobs create --config`` take); the proto message itself
is built only by a backend, to keep google.cloud.aiplatform off this path.

``extra:`` is merged here (:func:`deep_merge`) and checked, field by field and
value by value, with the other rules (vxtrain/validation/extra.py).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from vxtrain import catalog, slots
from vxtrain.model import (RESERVATION_AFFINITY, RESERVATION_NAME_KEY, Job, LustreMount, NfsMount, Pool,
                           PscInterface, PythonPackage, Reservation, Scheduling, Study, StudyParameter)
from vxtrain.vocab.kinds import CUSTOM, TUNING

_ALGORITHMS = {
    None: "ALGORITHM_UNSPECIFIED",  # Vertex's default: Bayesian optimization
    "default": "ALGORITHM_UNSPECIFIED",
    "random": "RANDOM_SEARCH",
    "grid": "GRID_SEARCH",
}
_SCALES = {
    "linear": "UNIT_LINEAR_SCALE",
    "log": "UNIT_LOG_SCALE",
    "reverse_log": "UNIT_REVERSE_LOG_SCALE",
}
_GOALS = {"maximize": "MAXIMIZE", "minimize": "MINIMIZE"}


# --- CustomJob ---------------------------------------------------------------

def _job_header(job: Job) -> dict[str, Any]:
    """displayName and labels: the fields CustomJob and HyperparameterTuningJob share."""
    out: dict[str, Any] = {}
    if job.display_name is not None:
        out["displayName"] = job.display_name
    if job.labels:
        out["labels"] = dict(job.labels)
    return out


def compile_custom_job(job: Job) -> dict[str, Any]:
    """The REST JSON of the job's ``aiplatform_v1.CustomJob``: displayName, labels, jobSpec.

    ``job.extra`` is deep-merged last (its ``jobSpec`` part already inside
    :func:`compile_custom_job_spec`).
    """
    out = _job_header(job)
    out[CUSTOM.spec_key] = compile_custom_job_spec(job)
    top = {k: v for k, v in job.extra.items() if k != CUSTOM.spec_key}
    merged: dict[str, Any] = deep_merge(out, top)  # two mappings merge into a mapping
    return merged


def compile_custom_job_spec(job: Job) -> dict[str, Any]:
    """The ``jobSpec`` (a CustomJobSpec): what ``convert --to gcloud`` writes and
    what CLUSTER_SPEC's ``job`` holds; ``extra.jobSpec`` merged in."""
    spec: dict[str, Any] = {"workerPoolSpecs": compile_pools(job)}
    scheduling = compile_scheduling(job.scheduling)
    if scheduling:
        spec["scheduling"] = scheduling
    spec.update(_job_spec_scalars(job))
    extra = job.extra.get(CUSTOM.spec_key)  # `extra` spells a CustomJob's REST JSON
    return deep_merge(spec, extra) if isinstance(extra, Mapping) else spec


def _job_spec_scalars(job: Job) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if job.service_account is not None:
        out["serviceAccount"] = job.service_account
    if job.network is not None:
        out["network"] = job.network
    if job.base_output_dir is not None:
        out["baseOutputDirectory"] = {"outputUriPrefix": job.base_output_dir}
    if job.tensorboard is not None:
        out["tensorboard"] = job.tensorboard
    if job.enable_web_access is not None:
        out["enableWebAccess"] = job.enable_web_access
    if job.persistent_resource is not None:
        out["persistentResourceId"] = job.persistent_resource
    out.update(_newer_job_fields(job))
    return out


def _newer_job_fields(job: Job) -> dict[str, Any]:
    """The CustomJobSpec fields of 2025-26 (google/cloud/aiplatform/v1/custom_job.proto)."""
    out: dict[str, Any] = {}
    if job.reserved_ip_ranges:
        out["reservedIpRanges"] = list(job.reserved_ip_ranges)
    if job.psc_interface is not None:
        out["pscInterfaceConfig"] = compile_psc_interface(job.psc_interface)
    if job.protected_artifact_location_id is not None:
        out["protectedArtifactLocationId"] = job.protected_artifact_location_id
    if job.enable_dashboard_access is not None:
        out["enableDashboardAccess"] = job.enable_dashboard_access
    if job.experiment is not None:
        out["experiment"] = job.experiment
    if job.experiment_run is not None:
        out["experimentRun"] = job.experiment_run
    return out


def compile_psc_interface(psc: PscInterface) -> dict[str, Any]:
    """PscInterfaceConfig: networkAttachment and dnsPeeringConfigs (service_networking.proto)."""
    out: dict[str, Any] = {}
    if psc.network_attachment is not None:
        out["networkAttachment"] = psc.network_attachment
    peering = [_present({"domain": d.domain, "targetProject": d.target_project, "targetNetwork": d.target_network})
               for d in psc.dns_peering]
    if peering:
        out["dnsPeeringConfigs"] = peering
    return out


def _present(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without the ones that are None (the lenient model's missing values)."""
    return {key: value for key, value in fields.items() if value is not None}


def compile_pools(job: Job) -> list[dict[str, Any]]:
    """workerPoolSpecs: slot 0 chief, 1 workers, 2 parameter servers or Reduction
    Server, 3 evaluators; ``{}`` for a gap, trailing gaps dropped."""
    # A skipped pool is an empty value: "All worker pools except the first one are
    # optional and can be skipped by providing an empty value."
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec
    specs: list[dict[str, Any]] = [{} for _ in slots.SLOTS]
    for pool in job.ordered_pools():
        specs[pool.index] = compile_pool(pool, region=job.region)
    while specs and not specs[-1]:
        specs.pop()
    return specs


def compile_pool(pool: Pool, *, region: str | None = None) -> dict[str, Any]:
    """One WorkerPoolSpec. The Reduction Server pool runs Google's image unless
    it names its own; defaults never reach it (the model does not merge them). A pool
    with no code at all gets no containerSpec (an empty one would clash with the
    pythonPackageSpec ``extra`` may give it: the two are a oneof)."""
    out: dict[str, Any] = {"machineSpec": _machine_spec(pool)}
    if pool.replicas is not None:
        out["replicaCount"] = pool.replicas
    if pool.python_package is not None and pool.image is None:
        out["pythonPackageSpec"] = _python_package_spec(pool, pool.python_package)
    elif container := _container_spec(pool, region):
        out["containerSpec"] = container
    # else: a pool without code sends no task, so the one ``extra`` gives it (either kind) is
    # the pool's only one (formats.gcloud.compiled_task); without one it is missing-image.
    if pool.disk is not None:
        out["diskSpec"] = {"bootDiskType": pool.disk.type, "bootDiskSizeGb": pool.disk.size_gb}
    if pool.nfs_mounts:
        out["nfsMounts"] = [_nfs_mount(m) for m in pool.nfs_mounts]
    if pool.lustre_mounts:
        out["lustreMounts"] = [_lustre_mount(m) for m in pool.lustre_mounts]
    return out


def _nfs_mount(mount: NfsMount) -> dict[str, Any]:
    """NfsMount (machine_resources.proto): server, path, mountPoint."""
    return _present({"server": mount.server, "path": mount.path, "mountPoint": mount.mount_point})


def _lustre_mount(mount: LustreMount) -> dict[str, Any]:
    """LustreMount (machine_resources.proto): instanceIp, volumeHandle, filesystem, mountPoint."""
    return _present({"instanceIp": mount.instance_ip, "volumeHandle": mount.volume_handle,
                     "filesystem": mount.filesystem, "mountPoint": mount.mount_point})


def _machine_spec(pool: Pool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pool.machine_type is not None:
        out["machineType"] = pool.machine_type
    acc = pool.accelerator
    if acc is not None and acc.type is not None:
        out["acceleratorType"] = acc.type
        if acc.count is not None:
            out["acceleratorCount"] = acc.count
        if acc.partition_size is not None:
            out["gpuPartitionSize"] = acc.partition_size
    if pool.tpu_topology is not None:
        out["tpuTopology"] = pool.tpu_topology
    if pool.reservation is not None and pool.reservation.affinity in RESERVATION_AFFINITY:
        out["reservationAffinity"] = _reservation_affinity(pool.reservation)
    return out


def _reservation_affinity(reservation: Reservation) -> dict[str, Any]:
    """machineSpec.reservationAffinity: ``key`` and ``values`` with a specific reservation only."""
    out: dict[str, Any] = {"reservationAffinityType": RESERVATION_AFFINITY[str(reservation.affinity)]}
    if reservation.affinity == "specific" and reservation.name is not None:
        out["key"] = RESERVATION_NAME_KEY
        out["values"] = [reservation.name]
    return out


def _container_spec(pool: Pool, region: str | None) -> dict[str, Any]:
    image = pool.image
    if image is None and pool.role == "reduction_server":
        # https://cloud.google.com/vertex-ai/docs/training/distributed-training#reduction-server
        image = catalog.reduction_server_image(region)
    out: dict[str, Any] = {} if image is None else {"imageUri": image}
    if pool.command:
        out["command"] = list(pool.command)
    out.update(_args_env(pool))
    return out


def _python_package_spec(pool: Pool, pkg: PythonPackage) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pkg.executor_image is not None:
        out["executorImageUri"] = pkg.executor_image
    if pkg.package_uris:
        out["packageUris"] = list(pkg.package_uris)
    if pkg.module is not None:
        out["pythonModule"] = pkg.module
    out.update(_args_env(pool))
    return out


def _args_env(pool: Pool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if pool.args:
        out["args"] = list(pool.args)
    if pool.env:
        out["env"] = [{"name": k, "value": v} for k, v in pool.env.items()]
    return out


def compile_scheduling(scheduling: Scheduling | None) -> dict[str, Any]:
    """Scheduling with durations as the proto JSON ``"<seconds>s"`` strings ({} if unset)."""
    if scheduling is None:
        return {}
    out: dict[str, Any] = {}
    if scheduling.timeout is not None:
        out["timeout"] = f"{scheduling.timeout}s"
    if scheduling.restart_job_on_worker_restart is not None:
        out["restartJobOnWorkerRestart"] = scheduling.restart_job_on_worker_restart
    if scheduling.strategy is not None:
        out["strategy"] = scheduling.strategy.upper()
    if scheduling.max_wait is not None:
        out["maxWaitDuration"] = f"{scheduling.max_wait}s"
    if scheduling.disable_retries is not None:
        out["disableRetries"] = scheduling.disable_retries
    return out


#: How lists in ``extra`` merge into the compiled ones (docs/spec.md, "`extra:` merge rules").
#: workerPoolSpecs by position: a pool's position is its role (slots.SLOTS), so
#: ``[{}, {...}]`` changes pool 1 only. env by ``name``: an entry replaces the
#: compiled one of the same name, new names are appended, the others are kept
#: (a position means nothing there). Any other list (args, command, packageUris,
#: nfsMounts, ...) is replaced whole: it is an ordered value, and merging item by
#: item would splice two argument lists into one nobody wrote.
POSITIONAL_LISTS = frozenset({"workerPoolSpecs"})
KEYED_LISTS: dict[str, str] = {"env": "name"}


def deep_merge(base: Any, over: Any, field: str | None = None) -> Any:
    """``over`` merged into a copy of ``base``: mappings key by key; lists per
    :data:`POSITIONAL_LISTS` and :data:`KEYED_LISTS` (``field`` is the key they
    are under), else replaced; anything else is replaced by ``over``."""
    if isinstance(base, Mapping) and isinstance(over, Mapping):
        out = dict(base)
        for key, value in over.items():
            out[key] = deep_merge(base[key], value, str(key)) if key in base else copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(over, list):
        if field in POSITIONAL_LISTS:
            merged = [deep_merge(b, o) for b, o in zip(base, over)]
            return merged + copy.deepcopy(over[len(base):]) + copy.deepcopy(base[len(over):])
        if field in KEYED_LISTS:
            return _merge_by(base, over, KEYED_LISTS[field])
    return copy.deepcopy(over)


def _merge_by(base: list[Any], over: list[Any], key: str) -> list[Any]:
    """``over``'s items replace ``base``'s items with the same ``key`` value; others append."""
    out = copy.deepcopy(base)
    where = {item.get(key): i for i, item in enumerate(out) if isinstance(item, Mapping)}
    for item in over:
        name = item.get(key) if isinstance(item, Mapping) else None
        if name is not None and name in where:
            out[where[name]] = copy.deepcopy(item)
        else:
            if name is not None:
                where[name] = len(out)
            out.append(copy.deepcopy(item))
    return out


# --- HyperparameterTuningJob --------------------------------------------------

def compile_hpt_job(job: Job) -> dict[str, Any]:
    """The REST JSON of ``aiplatform_v1.HyperparameterTuningJob`` for ``job.study``;
    each trial runs :func:`compile_custom_job_spec`. Raises ValueError without a study."""
    study = job.study
    if study is None:
        raise ValueError("the job has no study: compile_hpt_job needs `study:`")
    out = _job_header(job)
    out["studySpec"] = compile_study_spec(study)
    counts = (("maxTrialCount", study.max_trials), ("parallelTrialCount", study.parallel_trials),
              ("maxFailedTrialCount", study.max_failed_trials))
    out.update({key: value for key, value in counts if value is not None})
    out[TUNING.spec_key] = compile_custom_job_spec(job)
    return out


def compile_study_spec(study: Study) -> dict[str, Any]:
    """StudySpec: metrics, parameters and the search algorithm."""
    metrics = [{"metricId": m.id, "goal": _GOALS.get((m.goal or "").lower(), (m.goal or "").upper())}
               for m in study.metrics if m.id is not None]
    algorithm = _ALGORITHMS.get(study.algorithm.lower() if study.algorithm else None)
    return {
        "metrics": metrics,
        "parameters": [compile_parameter(p) for p in study.parameters],
        "algorithm": algorithm or (study.algorithm or "").upper(),
    }


def compile_parameter(param: StudyParameter) -> dict[str, Any]:
    """One ParameterSpec; scaleType only for numeric parameters that give a scale."""
    out: dict[str, Any] = {"parameterId": param.name}
    kind = (param.type or "").lower()
    if kind == "double":
        out["doubleValueSpec"] = _bounds(param, float)
    elif kind == "integer":
        out["integerValueSpec"] = _bounds(param, int)
    elif kind == "discrete":
        out["discreteValueSpec"] = {"values": [float(v) for v in param.values if _is_number(v)]}
    elif kind == "categorical":
        out["categoricalValueSpec"] = {"values": [_category(v) for v in param.values]}
    if param.scale is not None and kind != "categorical":
        out["scaleType"] = _SCALES.get(param.scale.lower(), param.scale.upper())
    return out


def _bounds(param: StudyParameter, cast: type) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if param.min is not None:
        out["minValue"] = cast(param.min)
    if param.max is not None:
        out["maxValue"] = cast(param.max)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _category(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
