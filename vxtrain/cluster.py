"""The cluster environment of a Vertex AI replica: computed, and read back.

Two halves, one module, so both sides agree on one format:

* **computing** (``replica_env``): the variables Vertex AI sets for replica
  ``workerpoolK:i`` of a job — ``CLUSTER_SPEC``, ``TF_CONFIG`` (distributed jobs
  only), ``AIP_*`` directories, ``CLOUD_ML_JOB_ID``. ``vxtrain env`` prints them,
  the local runner starts processes with them.
* **reading** (``current``, ``role``, ``index``, ``is_chief``, ``trial``,
  ``num_workers``, ``torch_env``): the runtime helper for training code.

This module imports only the standard library (the ``Job`` type is for type
checkers only) so training containers can use it, or vendor this one file.

Formats: https://cloud.google.com/vertex-ai/docs/training/distributed-training#cluster-variables
and ../shared/reference/CLUSTER_ENV.md (the docs' examples, restated).
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vxtrain.model import Job

#: What a preview of a cloud run uses when no job id is known yet (Vertex AI
#: job ids are decimal numbers).
PREVIEW_JOB_ID = "0000000000000000000"
#: The port Vertex AI gives every replica in CLUSTER_SPEC / TF_CONFIG.
CLOUD_PORT = 2222
#: workerPoolSpecs slot → TF_CONFIG task type. Slot 2 holds parameter servers
#: or a Reduction Server; Reduction Server replicas are not TF tasks.
TF_TASK_TYPES: dict[int, str] = {0: "chief", 1: "worker", 2: "ps", 3: "evaluator"}
#: The task types that are keys of TF_CONFIG's cluster: evaluators never are.
TF_CLUSTER_TYPES: tuple[str, ...] = ("chief", "worker", "ps")


# --- computing the environment ------------------------------------------------

def pool_replicas(job: Job) -> dict[int, int]:
    """Pool slot → replica count, for the pools the job has (auto-sized pools: 0 until planned)."""
    return {pool.index: pool.replicas or 0 for pool in job.ordered_pools()}


def cloud_hosts(job: Job, job_id: str = PREVIEW_JOB_ID) -> dict[int, list[str]]:
    """Host names in Vertex AI's style, e.g. ``cmle-training-workerpool1-<job id>-0:2222``."""
    return {k: [f"cmle-training-workerpool{k}-{job_id}-{i}:{CLOUD_PORT}" for i in range(n)]
            for k, n in pool_replicas(job).items()}


def has_replica(job: Job, pool_index: int, replica_index: int) -> bool:
    """Whether ``workerpool{pool_index}`` exists and has replica ``replica_index``."""
    count = pool_replicas(job).get(pool_index)
    return count is not None and 0 <= replica_index < count


def is_distributed(job: Job) -> bool:
    """More than one replica: Vertex AI sets TF_CONFIG only then."""
    return sum(pool_replicas(job).values()) > 1


def _is_reduction_server(job: Job, pool_index: int) -> bool:
    pool = job.pool("reduction_server")
    return pool is not None and pool.index == pool_index


def cluster_spec(job: Job, job_spec: Mapping[str, Any], pool_index: int, replica_index: int,
                 hosts: Mapping[int, list[str]], trial: str | None = None) -> dict[str, Any]:
    """The CLUSTER_SPEC document of one replica (every pool the job has, by slot)."""
    task: dict[str, Any] = {"type": f"workerpool{pool_index}", "index": replica_index}
    if trial is not None:
        task["trial"] = trial
    cluster = {f"workerpool{k}": list(hosts.get(k, [])) for k in sorted(pool_replicas(job))}
    return {"cluster": cluster, "environment": "cloud", "task": task, "job": dict(job_spec)}


def tf_cluster(job: Job, hosts: Mapping[int, list[str]]) -> dict[str, list[str]]:
    """TF_CONFIG's ``cluster``: chief, worker, ps — never evaluators, never Reduction Server."""
    cluster: dict[str, list[str]] = {}
    for k in sorted(pool_replicas(job)):
        task_type = TF_TASK_TYPES[k]
        if task_type in TF_CLUSTER_TYPES and not _is_reduction_server(job, k):
            cluster[task_type] = list(hosts.get(k, []))
    return cluster


def tf_config(job: Job, job_spec: Mapping[str, Any], pool_index: int, replica_index: int,
              hosts: Mapping[int, list[str]], trial: str | None = None) -> dict[str, Any] | None:
    """The TF_CONFIG document of one replica; None when Vertex AI sets none.

    None for single-replica jobs and for Reduction Server replicas (not TF tasks).
    Vertex AI also puts an internal id in ``task.cloud``; it has no meaning to
    training code and is left out.
    """
    if not is_distributed(job) or _is_reduction_server(job, pool_index):
        return None
    task: dict[str, Any] = {"type": TF_TASK_TYPES[pool_index], "index": replica_index}
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

    The pool's own ``env`` comes first (the container env of the spec), then
    what Vertex AI sets. Besides the cluster documents: ``CLOUD_ML_JOB_ID`` and
    ``AIP_TENSORBOARD_RESOURCE_NAME`` (with a tensorboard), the names
    google-cloud-aiplatform's training_utils/environment_variables.py reads.
    Raises KeyError when the replica does not exist.
    """
    if not has_replica(job, pool_index, replica_index):
        raise KeyError(f"workerpool{pool_index}:{replica_index}")
    hosts = cloud_hosts(job, job_id) if hosts is None else hosts
    env = dict(_pool_env(job, pool_index))
    env["CLUSTER_SPEC"] = json.dumps(cluster_spec(job, job_spec, pool_index, replica_index, hosts, trial))
    tf = tf_config(job, job_spec, pool_index, replica_index, hosts, trial)
    if tf is not None:
        env["TF_CONFIG"] = json.dumps(tf)
    env.update(output_dirs(job.base_output_dir, trial))
    env["CLOUD_ML_JOB_ID"] = job_id
    if job.tensorboard:
        env["AIP_TENSORBOARD_RESOURCE_NAME"] = job.tensorboard
    return env


def _pool_env(job: Job, pool_index: int) -> dict[str, str]:
    for pool in job.ordered_pools():
        if pool.index == pool_index:
            return dict(pool.env)
    return {}


# --- the runtime helper (read inside a replica) -------------------------------

#: CLUSTER_SPEC task types → roles (slot 2 read as parameter servers: a
#: Reduction Server replica runs Google's image, not training code).
_POOL_ROLES = {"workerpool0": "chief", "workerpool1": "worker", "workerpool2": "ps",
               "workerpool3": "evaluator"}
#: Old AI Platform wrote ``master`` (TensorFlow 2 rejects it); Vertex AI writes ``chief``.
_ROLE_ALIASES = {"master": "chief"}


@dataclass(frozen=True)
class ClusterInfo:
    """Where this process sits in its job, read from CLUSTER_SPEC / TF_CONFIG.

    ``cluster`` is in TF_CONFIG's shape (chief / worker / ps → host:port lists,
    ``master`` renamed ``chief``); ``role`` is chief, worker, ps or evaluator.
    """

    role: str = "chief"
    index: int = 0
    trial: str | None = None
    cluster: dict[str, list[str]] = field(default_factory=dict)
    job: dict[str, Any] = field(default_factory=dict)

    @property
    def is_chief(self) -> bool:
        """The primary replica (pool 0): the one whose exit ends the job."""
        return self.role == "chief"

    @property
    def num_workers(self) -> int:
        """Replicas of the ``worker`` pool (pool 1), not counting the chief."""
        return len(self.cluster.get("worker", []))

    @property
    def world_size(self) -> int:
        """Processes that train together in all-reduce: the chief plus the workers."""
        return max(1, len(self.cluster.get("chief", [])) + self.num_workers)

    @property
    def rank(self) -> int | None:
        """PyTorch rank: chief 0, worker i → i + 1; None for ps and evaluators."""
        if self.role == "chief":
            return 0
        return self.index + 1 if self.role == "worker" else None


def _load_json(environ: Mapping[str, str], name: str) -> dict[str, Any]:
    raw = environ.get(name)
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{name} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a JSON object, got {type(value).__name__}")
    return value


def _normalize_role(raw: Any) -> str:
    text = str(raw or "chief").lower()
    return _ROLE_ALIASES.get(text, _POOL_ROLES.get(text, text))


def _normalize_cluster(raw: Any) -> dict[str, list[str]]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, list[str]] = {}
    for key, hosts in raw.items():
        role = _normalize_role(key)
        if role in TF_CLUSTER_TYPES and isinstance(hosts, list):
            out.setdefault(role, []).extend(str(h) for h in hosts)
    return out


def _spec_cluster(spec: Mapping[str, Any]) -> dict[str, list[str]]:
    """CLUSTER_SPEC's cluster in TF's shape, leaving out a Reduction Server pool."""
    cluster = _normalize_cluster(spec.get("cluster"))
    pools = spec.get("job", {}).get("workerPoolSpecs") if isinstance(spec.get("job"), Mapping) else None
    slot2 = pools[2] if isinstance(pools, list) and len(pools) > 2 else None
    image = slot2.get("containerSpec", {}).get("imageUri", "") if isinstance(slot2, Mapping) else ""
    if "reductionserver" in str(image):
        cluster.pop("ps", None)
    return cluster


def current(environ: Mapping[str, str] | None = None) -> ClusterInfo:
    """This process's place in the job; a lone process is chief 0 of a one-replica job.

    TF_CONFIG gives the TensorFlow view when present; CLUSTER_SPEC (set on every
    Vertex AI replica) fills in otherwise, reading workerpool0..3 as
    chief / worker / ps / evaluator.
    """
    environ = os.environ if environ is None else environ
    spec, tf = _load_json(environ, "CLUSTER_SPEC"), _load_json(environ, "TF_CONFIG")
    source = tf or spec
    raw_task, raw_job = source.get("task"), source.get("job")
    task: Mapping[str, Any] = raw_task if isinstance(raw_task, Mapping) else {}
    job: dict[str, Any] = raw_job if isinstance(raw_job, dict) else {}
    cluster = _normalize_cluster(tf.get("cluster")) or _spec_cluster(spec)
    trial = task.get("trial")
    return ClusterInfo(role=_normalize_role(task.get("type")), index=int(task.get("index") or 0),
                       trial=None if trial in (None, "") else str(trial), cluster=cluster, job=job)


def role(environ: Mapping[str, str] | None = None) -> str:
    """chief, worker, ps or evaluator (``master`` reads as ``chief``)."""
    return current(environ).role


def index(environ: Mapping[str, str] | None = None) -> int:
    """Zero-based index within the role."""
    return current(environ).index


def is_chief(environ: Mapping[str, str] | None = None) -> bool:
    """True on the primary replica (and in a process outside any cluster)."""
    return current(environ).is_chief


def trial(environ: Mapping[str, str] | None = None) -> str | None:
    """The hyperparameter-tuning trial id ("1", "2", ...), None outside a study."""
    return current(environ).trial


def num_workers(environ: Mapping[str, str] | None = None) -> int:
    """How many ``worker`` replicas the job has (the chief not counted)."""
    return current(environ).num_workers


def _split_host(address: str) -> tuple[str, str]:
    host, sep, port = address.rpartition(":")
    return (host, port) if sep else (address, str(CLOUD_PORT))


def torch_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK for torch.distributed.

    Values already in the environment win (the local runner and PyTorch
    containers set them); missing ones are derived from the cluster: the
    master is the chief's address, the chief and workers take part, ranks are
    chief 0 and workers 1..N. Parameter servers and evaluators get no RANK.
    """
    environ = os.environ if environ is None else environ
    info = current(environ)
    chief = (info.cluster.get("chief") or ["127.0.0.1:29500"])[0]
    addr, port = _split_host(chief)
    derived = {"MASTER_ADDR": addr, "MASTER_PORT": port, "WORLD_SIZE": str(info.world_size)}
    if info.rank is not None:
        derived["RANK"] = str(info.rank)
    return {name: environ.get(name) or value for name, value in derived.items()}


def apply_torch_env() -> dict[str, str]:
    """Put ``torch_env()`` into os.environ (for ``init_method="env://"``) and return it."""
    values = torch_env()
    os.environ.update(values)
    return values
