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
from typing import TYPE_CHECKING, Any, TypedDict

from vxtrain import catalog, slots
from vxtrain.model import (RESERVATION_AFFINITY, RESERVATION_NAME_KEY, Job, LustreMount, NfsMount, Pool,
                           PscInterface, PythonPackage, Reservation, Scheduling, Study, StudyParameter)
from vxtrain.vocab.kinds import CUSTOM, JOB_SPEC, TRIAL_JOB_SPEC

# Annotations only: validate imports this module, and a TypedDict class costs ~15 µs a field
# to create (measured); a dict literal is a TypedDict without its class.
if TYPE_CHECKING:
    from vxtrain.vocab import jobjson

    class _Header(TypedDict, total=False):
        """The fields CustomJob and HyperparameterTuningJob share, first in both."""

        displayName: str
        labels: dict[str, str]

    class _ArgsEnv(TypedDict, total=False):
        """The fields ContainerSpec and PythonPackageSpec share, last in both."""

        args: list[str]
        env: list[jobjson.EnvVar]

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

def _set_header(out: _Header, job: Job) -> None:
    """displayName and labels set on ``out`` (a CustomJob or a HyperparameterTuningJob)."""
    if job.display_name is not None:
        out["displayName"] = job.display_name
    if job.labels:
        out["labels"] = dict(job.labels)


# The two jobs are built as jobjson.CustomJob and jobjson.HyperparameterTuningJob and
# returned as plain dicts: pipeline.Result holds them so (custom_job,
# hyperparameter_tuning_job), and mypy takes no TypedDict for a plain dict.

def compile_custom_job(job: Job) -> dict[str, Any]:
    """The REST JSON of the job's ``aiplatform_v1.CustomJob``: displayName, labels, jobSpec.

    ``job.extra`` is deep-merged last (its ``jobSpec`` part already inside
    :func:`compile_custom_job_spec`).
    """
    out: jobjson.CustomJob = {}
    _set_header(out, job)
    out[JOB_SPEC] = compile_custom_job_spec(job)
    top = {k: v for k, v in job.extra.items() if k != JOB_SPEC}
    # validation/extra.py checks each key `extra` adds against the protos (as in compile_custom_job_spec).
    merged: jobjson.CustomJob = deep_merge(out, top)
    return dict(merged)


def compile_custom_job_spec(job: Job) -> jobjson.CustomJobSpec:
    """The ``jobSpec`` (a CustomJobSpec): what ``convert --to gcloud`` writes and
    what CLUSTER_SPEC's ``job`` holds; ``extra.jobSpec`` merged in."""
    spec: jobjson.CustomJobSpec = {"workerPoolSpecs": compile_pools(job)}
    scheduling = compile_scheduling(job.scheduling)
    if scheduling:
        spec["scheduling"] = scheduling
    spec.update(_job_spec_scalars(job))
    extra = job.extra.get(CUSTOM.spec_key)  # `extra` spells a CustomJob's REST JSON
    if not isinstance(extra, Mapping):
        return spec
    # validation/extra.py checks every key and value of `extra` against the protos; what it
    # lets through keeps the CustomJobSpec shape.
    merged: jobjson.CustomJobSpec = deep_merge(spec, extra)
    return merged


def _job_spec_scalars(job: Job) -> jobjson.CustomJobSpec:
    out: jobjson.CustomJobSpec = {}
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


def _newer_job_fields(job: Job) -> jobjson.CustomJobSpec:
    """The CustomJobSpec fields of 2025-26 (google/cloud/aiplatform/v1/custom_job.proto)."""
    out: jobjson.CustomJobSpec = {}
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


def compile_psc_interface(psc: PscInterface) -> jobjson.PscInterfaceConfig:
    """PscInterfaceConfig: networkAttachment and dnsPeeringConfigs (service_networking.proto)."""
    out: jobjson.PscInterfaceConfig = {}
    if psc.network_attachment is not None:
        out["networkAttachment"] = psc.network_attachment
    peering: list[jobjson.DnsPeeringConfig] = []
    for d in psc.dns_peering:
        config: jobjson.DnsPeeringConfig = {}
        if d.domain is not None:  # the lenient model leaves a missing value None: not sent
            config["domain"] = d.domain
        if d.target_project is not None:
            config["targetProject"] = d.target_project
        if d.target_network is not None:
            config["targetNetwork"] = d.target_network
        peering.append(config)
    if peering:
        out["dnsPeeringConfigs"] = peering
    return out


def compile_pools(job: Job) -> list[jobjson.WorkerPoolSpec]:
    """workerPoolSpecs: slot 0 chief, 1 workers, 2 parameter servers or Reduction
    Server, 3 evaluators; ``{}`` for a gap, trailing gaps dropped."""
    # A skipped pool is an empty value: "All worker pools except the first one are
    # optional and can be skipped by providing an empty value."
    # https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec
    specs: list[jobjson.WorkerPoolSpec] = [{} for _ in slots.SLOTS]
    for pool in job.ordered_pools():
        specs[pool.index] = compile_pool(pool, region=job.region)
    while specs and not specs[-1]:
        specs.pop()
    return specs


def compile_pool(pool: Pool, *, region: str | None = None) -> jobjson.WorkerPoolSpec:
    """One WorkerPoolSpec. The Reduction Server pool runs Google's image unless
    it names its own; defaults never reach it (the model does not merge them). A pool
    with no code at all gets no containerSpec (an empty one would clash with the
    pythonPackageSpec ``extra`` may give it: the two are a oneof)."""
    out: jobjson.WorkerPoolSpec = {"machineSpec": _machine_spec(pool)}
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


def _nfs_mount(mount: NfsMount) -> jobjson.NfsMount:
    """NfsMount (machine_resources.proto): server, path, mountPoint; a missing one not sent."""
    out: jobjson.NfsMount = {}
    if mount.server is not None:
        out["server"] = mount.server
    if mount.path is not None:
        out["path"] = mount.path
    if mount.mount_point is not None:
        out["mountPoint"] = mount.mount_point
    return out


def _lustre_mount(mount: LustreMount) -> jobjson.LustreMount:
    """LustreMount (machine_resources.proto): instanceIp, volumeHandle, filesystem, mountPoint;
    a missing one not sent."""
    out: jobjson.LustreMount = {}
    if mount.instance_ip is not None:
        out["instanceIp"] = mount.instance_ip
    if mount.volume_handle is not None:
        out["volumeHandle"] = mount.volume_handle
    if mount.filesystem is not None:
        out["filesystem"] = mount.filesystem
    if mount.mount_point is not None:
        out["mountPoint"] = mount.mount_point
    return out


def _machine_spec(pool: Pool) -> jobjson.MachineSpec:
    out: jobjson.MachineSpec = {}
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


def _reservation_affinity(reservation: Reservation) -> jobjson.ReservationAffinity:
    """machineSpec.reservationAffinity: ``key`` and ``values`` with a specific reservation only."""
    out: jobjson.ReservationAffinity = {"reservationAffinityType": RESERVATION_AFFINITY[str(reservation.affinity)]}
    if reservation.affinity == "specific" and reservation.name is not None:
        out["key"] = RESERVATION_NAME_KEY
        out["values"] = [reservation.name]
    return out


def _container_spec(pool: Pool, region: str | None) -> jobjson.ContainerSpec:
    image = pool.image
    if image is None and pool.role == "reduction_server":
        # https://cloud.google.com/vertex-ai/docs/training/distributed-training#reduction-server
        image = catalog.reduction_server_image(region)
    out: jobjson.ContainerSpec = {} if image is None else {"imageUri": image}
    if pool.command:
        out["command"] = list(pool.command)
    _set_args_env(out, pool)
    return out


def _python_package_spec(pool: Pool, pkg: PythonPackage) -> jobjson.PythonPackageSpec:
    out: jobjson.PythonPackageSpec = {}
    if pkg.executor_image is not None:
        out["executorImageUri"] = pkg.executor_image
    if pkg.package_uris:
        out["packageUris"] = list(pkg.package_uris)
    if pkg.module is not None:
        out["pythonModule"] = pkg.module
    _set_args_env(out, pool)
    return out


def _set_args_env(out: _ArgsEnv, pool: Pool) -> None:
    """args and env set on ``out`` (a ContainerSpec or a PythonPackageSpec)."""
    if pool.args:
        out["args"] = list(pool.args)
    if pool.env:
        out["env"] = [{"name": k, "value": v} for k, v in pool.env.items()]


def compile_scheduling(scheduling: Scheduling | None) -> jobjson.Scheduling:
    """Scheduling with durations as the proto JSON ``"<seconds>s"`` strings ({} if unset)."""
    if scheduling is None:
        return {}
    out: jobjson.Scheduling = {}
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
    out: jobjson.HyperparameterTuningJob = {}
    _set_header(out, job)
    out["studySpec"] = compile_study_spec(study)
    if study.max_trials is not None:
        out["maxTrialCount"] = study.max_trials
    if study.parallel_trials is not None:
        out["parallelTrialCount"] = study.parallel_trials
    if study.max_failed_trials is not None:
        out["maxFailedTrialCount"] = study.max_failed_trials
    out[TRIAL_JOB_SPEC] = compile_custom_job_spec(job)
    return dict(out)  # a plain dict, as compile_custom_job's


def compile_study_spec(study: Study) -> jobjson.StudySpec:
    """StudySpec: metrics, parameters and the search algorithm."""
    metrics: list[jobjson.MetricSpec] = [
        {"metricId": m.id, "goal": _GOALS.get((m.goal or "").lower(), (m.goal or "").upper())}
        for m in study.metrics if m.id is not None]
    algorithm = _ALGORITHMS.get(study.algorithm.lower() if study.algorithm else None)
    return {
        "metrics": metrics,
        "parameters": [compile_parameter(p) for p in study.parameters],
        "algorithm": algorithm or (study.algorithm or "").upper(),
    }


def compile_parameter(param: StudyParameter) -> jobjson.ParameterSpec:
    """One ParameterSpec; scaleType only for numeric parameters that give a scale."""
    out: jobjson.ParameterSpec = {"parameterId": param.name}
    kind = (param.type or "").lower()
    if kind == "double":
        out["doubleValueSpec"] = _double_bounds(param)
    elif kind == "integer":
        out["integerValueSpec"] = _integer_bounds(param)
    elif kind == "discrete":
        out["discreteValueSpec"] = {"values": [float(v) for v in param.values if _is_number(v)]}
    elif kind == "categorical":
        out["categoricalValueSpec"] = {"values": [_category(v) for v in param.values]}
    if param.scale is not None and kind != "categorical":
        out["scaleType"] = _SCALES.get(param.scale.lower(), param.scale.upper())
    return out


def _double_bounds(param: StudyParameter) -> jobjson.DoubleValueSpec:
    out: jobjson.DoubleValueSpec = {}
    if param.min is not None:
        out["minValue"] = float(param.min)
    if param.max is not None:
        out["maxValue"] = float(param.max)
    return out


def _integer_bounds(param: StudyParameter) -> jobjson.IntegerValueSpec:
    out: jobjson.IntegerValueSpec = {}
    if param.min is not None:
        out["minValue"] = int(param.min)
    if param.max is not None:
        out["maxValue"] = int(param.max)
    return out


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _category(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
