"""The cluster environment Vertex AI gives a replica, computed from a job.

The variables Vertex AI sets for replica ``workerpoolK:i`` of a job —
``CLUSTER_SPEC``, ``TF_CONFIG`` (distributed jobs only), ``AIP_*``
directories, ``CLOUD_ML_JOB_ID``. ``vxtrain env`` prints them, the local
runner starts processes with them. Training code reads them back with
:mod:`vxtrain.cluster` (the import-light helper); both take the slot table
from :mod:`vxtrain.slots`, so they agree on one format.

Formats: https://cloud.google.com/vertex-ai/docs/training/distributed-training#cluster-variables
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from vxtrain.cluster import CLOUD_PORT
from vxtrain.errors import VxtrainError
from vxtrain.model import ATTEMPT_ENV, Job
from vxtrain.slots import SLOTS, TF_CLUSTER_TYPES, TF_TASK_TYPES

#: What a preview of a cloud run uses when no job id is known yet (Vertex AI
#: job ids are decimal numbers).
PREVIEW_JOB_ID = "0000000000000000000"
#: Most replicas a CLUSTER_SPEC / TF_CONFIG is written out for here (``env``, local runs):
#: each names every replica's host (~60 bytes), so a job of a billion replicas would build
#: gigabytes in memory for one variable. 100,000 hosts is ~6 MB, past any real job.
MAX_CLUSTER_REPLICAS = 100_000


class Task(TypedDict):
    """CLUSTER_SPEC's and TF_CONFIG's ``task``: this replica's pool (or TF task type) and index."""

    type: str
    index: int
    trial: NotRequired[str]  # a tuning job's trial id


class ClusterSpec(TypedDict):
    """The CLUSTER_SPEC document: every pool's hosts by ``workerpoolK``; ``job`` the legacy JSON string."""

    cluster: dict[str, list[str]]
    environment: str
    task: Task
    job: str


class TfConfig(TypedDict):
    """The TF_CONFIG document: chief / worker / ps hosts; ``job`` the CustomJobSpec as a dictionary."""

    cluster: dict[str, list[str]]
    environment: str
    task: Task
    job: dict[str, object]


def pool_replicas(job: Job) -> dict[int, int]:
    """Pool slot → replica count, for the pools the job has (auto-sized pools: 0 until planned)."""
    return {pool.index: pool.replicas or 0 for pool in job.ordered_pools()}


def cloud_hosts(job: Job, job_id: str = PREVIEW_JOB_ID) -> dict[int, list[str]]:
    """Host names in Vertex AI's style, e.g. ``cmle-training-workerpool1-<job id>-0:2222``."""
    return {k: [f"cmle-training-{SLOTS[k].cluster_key}-{job_id}-{i}:{CLOUD_PORT}" for i in range(n)]
            for k, n in pool_replicas(job).items()}


def has_replica(job: Job, pool_index: int, replica_index: int) -> bool:
    """Whether slot ``pool_index`` (``workerpoolK``) exists and has replica ``replica_index``."""
    count = pool_replicas(job).get(pool_index)
    return count is not None and 0 <= replica_index < count


def is_distributed(job: Job) -> bool:
    """More than one replica: Vertex AI sets TF_CONFIG only then."""
    return sum(pool_replicas(job).values()) > 1


def _is_reduction_server(job: Job, pool_index: int) -> bool:
    """Whether slot ``pool_index`` holds the job's Reduction Server (its replicas are no TF tasks)."""
    pool = job.pool("reduction_server")
    return pool is not None and pool.index == pool_index


def cluster_spec(job: Job, job_spec: Mapping[str, Any], pool_index: int, replica_index: int,
                 hosts: Mapping[int, list[str]], trial: str | None = None) -> ClusterSpec:
    """The CLUSTER_SPEC document of one replica (every pool the job has, by slot)."""
    task: Task = {"type": SLOTS[pool_index].cluster_key, "index": replica_index}
    if trial is not None:
        task["trial"] = trial
    cluster = {SLOTS[k].cluster_key: list(hosts.get(k, [])) for k in sorted(pool_replicas(job))}
    return {"cluster": cluster, "environment": "cloud", "task": task,
            "job": cluster_spec_job(job_spec, pool_index)}


def cluster_spec_job(job_spec: Mapping[str, Any], pool_index: int) -> str:
    """CLUSTER_SPEC's ``job`` as running Vertex AI jobs carry it: a JSON-encoded *string*
    with AI Platform's legacy keys, e.g. ``"{\\"python_module\\":\\"\\",\\"package_uris\\":[],
    \\"job_args\\":[]}"``.

    Google's page describes ``job`` as the CustomJobSpec as a dictionary, but every value
    copied from a running job (custom containers) is this string, with the three keys empty;
    local runs give training code what Vertex AI gives it. For a Python package pool the
    keys are filled from its pythonPackageSpec (module, package URIs, args): the legacy
    meaning of those keys, not seen in a capture.
    """
    pools = job_spec.get("workerPoolSpecs")
    pool = pools[pool_index] if isinstance(pools, list) and 0 <= pool_index < len(pools) else {}
    package = pool.get("pythonPackageSpec") if isinstance(pool, Mapping) else None
    package = package if isinstance(package, Mapping) else {}
    legacy = {"python_module": package.get("pythonModule", ""),
              "package_uris": list(package.get("packageUris", [])),
              "job_args": list(package.get("args", []))}
    return json.dumps(legacy, separators=(",", ":"))


def tf_cluster(job: Job, hosts: Mapping[int, list[str]]) -> dict[str, list[str]]:
    """TF_CONFIG's ``cluster``: chief, worker, ps — never evaluators, never Reduction Server."""
    cluster: dict[str, list[str]] = {}
    for k in sorted(pool_replicas(job)):
        task_type = TF_TASK_TYPES[k]
        if task_type in TF_CLUSTER_TYPES and not _is_reduction_server(job, k):
            cluster[task_type] = list(hosts.get(k, []))
    return cluster


def tf_config(job: Job, job_spec: Mapping[str, Any], pool_index: int, replica_index: int,
              hosts: Mapping[int, list[str]], trial: str | None = None) -> TfConfig | None:
    """The TF_CONFIG document of one replica; None when Vertex AI sets none.

    None for single-replica jobs and for Reduction Server replicas (not TF tasks).
    Vertex AI also puts an internal id in ``task.cloud``; it has no meaning to
    training code and is left out. ``job`` is the CustomJobSpec as a dictionary,
    as Google's page describes it (no value from a running job was found to say
    otherwise, unlike CLUSTER_SPEC's: :func:`cluster_spec_job`).
    """
    if not is_distributed(job) or _is_reduction_server(job, pool_index):
        return None
    task: Task = {"type": TF_TASK_TYPES[pool_index], "index": replica_index}
    if trial is not None:
        task["trial"] = trial
    return {"cluster": tf_cluster(job, hosts), "environment": "cloud", "task": task,
            "job": dict(job_spec)}


def output_dirs(base_output_dir: str | None, trial: str | None = None) -> dict[str, str]:
    """AIP_MODEL_DIR / AIP_CHECKPOINT_DIR / AIP_TENSORBOARD_LOG_DIR under base_output_dir.

    A trial of a tuning job writes under ``<base>/<trial>/`` (CustomJobSpec.base_output_directory:
    https://cloud.google.com/vertex-ai/docs/reference/rest/v1/CustomJobSpec).
    """
    if not base_output_dir:
        return {}
    base = base_output_dir.rstrip("/")
    if trial is not None:
        base = f"{base}/{trial}"
    return {"AIP_MODEL_DIR": f"{base}/model/", "AIP_CHECKPOINT_DIR": f"{base}/checkpoints/",
            "AIP_TENSORBOARD_LOG_DIR": f"{base}/logs/"}


def replica_env(job: Job, job_spec: Mapping[str, Any], pool_index: int, replica_index: int, *,
                hosts: Mapping[int, list[str]] | None = None, trial: str | None = None,
                job_id: str = PREVIEW_JOB_ID) -> dict[str, str]:
    """Every variable Vertex AI sets for replica ``workerpool{pool_index}:{replica_index}``.

    The pool's own ``env`` comes first (the container env of the spec; with
    ``recovery:``, ``VXTRAIN_ATTEMPT=0`` as submit sends the first attempt), then
    what Vertex AI sets. Besides the cluster documents: ``CLOUD_ML_JOB_ID`` and
    ``AIP_TENSORBOARD_RESOURCE_NAME`` (with a tensorboard), the names
    google-cloud-aiplatform's training_utils/environment_variables.py reads.
    Raises KeyError when the replica does not exist.
    """
    if not has_replica(job, pool_index, replica_index):
        raise KeyError(f"workerpool{pool_index}:{replica_index}")
    check_cluster_size(job)
    hosts = cloud_hosts(job, job_id) if hosts is None else hosts
    env = dict(_pool_env(job, pool_index))
    if job.recovery is not None:
        # submit sends attempt N of a recovering job with VXTRAIN_ATTEMPT=N in every pool's env
        # (vxtrain.submission.decide.attempt_job); here, as on Vertex AI, the first is 0, so a
        # trainer that reads it runs alike in local-run and `env` (a job run from a CustomJob,
        # as the emulator's are, has no recovery: and keeps the number its env was sent with)
        env[ATTEMPT_ENV] = "0"
    env["CLUSTER_SPEC"] = json.dumps(cluster_spec(job, job_spec, pool_index, replica_index, hosts, trial))
    tf = tf_config(job, job_spec, pool_index, replica_index, hosts, trial)
    if tf is not None:
        env["TF_CONFIG"] = json.dumps(tf)
    env.update(output_dirs(job.base_output_dir, trial))
    env["CLOUD_ML_JOB_ID"] = job_id
    if job.tensorboard:
        env["AIP_TENSORBOARD_RESOURCE_NAME"] = job.tensorboard
    return env


def check_cluster_size(job: Job) -> None:
    """VxtrainError when the job has more replicas than a CLUSTER_SPEC is written out for here."""
    total = sum(pool_replicas(job).values())
    if total > MAX_CLUSTER_REPLICAS:
        raise VxtrainError(f"the job has {total:,} replicas: its CLUSTER_SPEC (every replica's host) is written "
                           f"out here for at most {MAX_CLUSTER_REPLICAS:,}; lower the replica counts")


def _pool_env(job: Job, pool_index: int) -> dict[str, str]:
    for pool in job.ordered_pools():
        if pool.index == pool_index:
            return dict(pool.env)
    return {}
