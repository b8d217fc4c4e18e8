"""Where this process sits in its Vertex AI job, read from CLUSTER_SPEC / TF_CONFIG.

The runtime helper for training code (``from vxtrain import cluster``):
``current``, ``role``, ``index``, ``is_chief``, ``trial``, ``num_workers``,
``torch_env``. The environment it reads is computed for ``vxtrain env`` and
the local runner by :mod:`vxtrain.runtime.cluster_env`; both take the slot
table from :mod:`vxtrain.slots`.

Import-light on purpose: the standard library and :mod:`vxtrain.slots` only,
so training containers can use it. To vendor it, copy ``cluster.py`` and
``slots.py`` into a folder named ``vxtrain`` (no ``__init__.py`` needed).

Formats: https://cloud.google.com/vertex-ai/docs/training/distributed-training#cluster-variables
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vxtrain.slots import TF_CLUSTER_TYPES, TF_TYPE_BY_CLUSTER_KEY, is_reduction_server_image

if TYPE_CHECKING:  # for annotations only: at run time this module needs no more than slots
    from vxtrain.vocab.jobjson import JsonObject

#: The port Vertex AI gives every replica in CLUSTER_SPEC / TF_CONFIG.
CLOUD_PORT = 2222


#: Old AI Platform wrote ``master`` (TensorFlow 2 rejects it); Vertex AI writes ``chief``.
_ROLE_ALIASES = {"master": "chief"}


@dataclass(frozen=True)
class ClusterInfo:
    """Where this process sits in its job, read from CLUSTER_SPEC / TF_CONFIG.

    ``cluster`` is in TF_CONFIG's shape (chief / worker / ps → host:port lists,
    ``master`` renamed ``chief``); ``role`` is chief, worker, ps or evaluator. ``job`` is
    whatever object the environment's ``job`` holds (see :func:`_job`): no shape is promised.
    """

    role: str = "chief"
    index: int = 0
    trial: str | None = None
    cluster: dict[str, list[str]] = field(default_factory=dict)
    job: JsonObject = field(default_factory=dict)

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


def _load_json(environ: Mapping[str, str], name: str) -> JsonObject:
    """The JSON object in environment variable ``name`` (``{}`` when unset): set by whoever
    started the process, so nothing about its content is sure."""
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
    # CLUSTER_SPEC's workerpoolK reads as its TF type (slot 2 as ps: a Reduction
    # Server replica runs Google's image, not training code).
    return _ROLE_ALIASES.get(text, TF_TYPE_BY_CLUSTER_KEY.get(text, text))


def _normalize_cluster(raw: Any) -> dict[str, list[str]]:
    if not isinstance(raw, Mapping):
        return {}
    out: dict[str, list[str]] = {}
    for key, hosts in raw.items():
        role = _normalize_role(key)
        if role in TF_CLUSTER_TYPES and isinstance(hosts, list):
            out.setdefault(role, []).extend(str(h) for h in hosts)
    return out


def _job(raw: Any) -> JsonObject:
    """The ``job`` of CLUSTER_SPEC / TF_CONFIG as a dict, in either form it comes in.

    Running Vertex AI jobs put a JSON-encoded *string* in CLUSTER_SPEC's ``job``
    (``"{\\"python_module\\":\\"\\",\\"package_uris\\":[],\\"job_args\\":[]}"``);
    Google's page, TF_CONFIG and earlier vxtrain versions give a dictionary (the
    CustomJobSpec). Anything else reads as ``{}``: ``job`` is informational.
    """
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def _spec_cluster(spec: Mapping[str, Any]) -> dict[str, list[str]]:
    """CLUSTER_SPEC's cluster in TF's shape, leaving out a Reduction Server pool when the
    ``job`` says which pool is one (the CustomJobSpec form; the string form cannot)."""
    cluster = _normalize_cluster(spec.get("cluster"))
    pools = _job(spec.get("job")).get("workerPoolSpecs")
    slot2 = pools[2] if isinstance(pools, list) and len(pools) > 2 else None
    image = slot2.get("containerSpec", {}).get("imageUri", "") if isinstance(slot2, Mapping) else ""
    if is_reduction_server_image(image):
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
    job = _job(raw_job)
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
