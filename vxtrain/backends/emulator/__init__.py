"""A local emulator of Vertex AI's ``google.cloud.aiplatform.v1.JobService``.

It is a real gRPC server speaking the real protobuf messages, so the
unmodified ``aiplatform_v1.JobServiceClient`` (gRPC transport, an insecure
channel to ``127.0.0.1:PORT``) talks to it as it would to Vertex AI. It
implements Create/Get/List/Cancel/Delete for CustomJob and
HyperparameterTuningJob; every other JobService method answers UNIMPLEMENTED.

What it emulates (see DESIGN.md "Backends"):

* request validation with Vertex-like INVALID_ARGUMENT messages
  ("List of found errors: 1.Field: ...; Message: ...");
* decimal job ids and ``projects/P/locations/L/customJobs/ID`` names;
* the state walk QUEUED → PENDING → RUNNING → SUCCEEDED / FAILED / CANCELLED,
  running each job with the local runner (``vxtrain.runtime.runner``), or on a
  timer when started with ``simulate_seconds``;
* fault injection (``METHOD:KIND:COUNT``) so the client's retry and
  exactly-once logic can be tested against every failure Vertex can produce.

There is no generated ``*_pb2_grpc`` module for JobService in
google-cloud-aiplatform (its GAPIC transport builds the stubs itself with
``channel.unary_unary("/google.cloud.aiplatform.v1.JobService/...")``), so the
handlers are registered with ``grpc.method_handlers_generic_handler`` using the
proto-plus classes' ``serialize`` / ``deserialize``.
"""
from __future__ import annotations

import base64
import ipaddress
import itertools
import os
import re
import secrets
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

import grpc
from google.cloud.aiplatform_v1.types import custom_job as cj
from google.cloud.aiplatform_v1.types import hyperparameter_tuning_job as hpt
from google.cloud.aiplatform_v1.types import job_service as js
from google.cloud.aiplatform_v1.types import operation as op_types
from google.cloud.aiplatform_v1.types import study as study_types
from google.cloud.aiplatform_v1.types.job_state import JobState
from google.longrunning import operations_pb2
from google.protobuf import any_pb2, empty_pb2, json_format
from google.rpc import status_pb2

from vxtrain.errors import LocalRunError, UsageError, VxtrainError
from vxtrain.model import Accelerator, Job, LocalSpec, Pool, PythonPackage

SERVICE = "google.cloud.aiplatform.v1.JobService"
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8470
FAULT_ENV = "VXTRAIN_EMULATOR_FAULTS"
FAULT_METHODS: tuple[str, ...] = ("create", "get", "list", "cancel", "delete")
FAULT_KINDS: tuple[str, ...] = ("unavailable-before-commit", "unavailable", "deadline-after-commit",
                                "quota", "permission", "internal")
DEFAULT_PAGE_SIZE = 100
#: Pause between the states of a job that really runs, so a poller can see them.
STEP_SECONDS = 0.05

# proto-plus publishes no type information, so mypy sees JobState's members as
# plain ints (the class derives from an untyped base). JobState(member) is the
# member itself at runtime and a JobState to mypy: the states used here, typed once.
QUEUED = JobState(JobState.JOB_STATE_QUEUED)
PENDING = JobState(JobState.JOB_STATE_PENDING)
RUNNING = JobState(JobState.JOB_STATE_RUNNING)
SUCCEEDED = JobState(JobState.JOB_STATE_SUCCEEDED)
FAILED = JobState(JobState.JOB_STATE_FAILED)
CANCELLING = JobState(JobState.JOB_STATE_CANCELLING)
CANCELLED = JobState(JobState.JOB_STATE_CANCELLED)
EXPIRED = JobState(JobState.JOB_STATE_EXPIRED)
PARTIALLY_SUCCEEDED = JobState(JobState.JOB_STATE_PARTIALLY_SUCCEEDED)
TERMINAL_STATES: frozenset[JobState] = frozenset({SUCCEEDED, FAILED, CANCELLED, EXPIRED, PARTIALLY_SUCCEEDED})
_PARENT = re.compile(r"^projects/(?P<project>[^/]+)/locations/(?P<location>[^/]+)$")


class RpcError(Exception):
    """A gRPC status the emulator answers with (code + Vertex-like message)."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


# --- resource kinds ---------------------------------------------------------

@dataclass(frozen=True)
class Kind:
    """One job resource type served by the emulator."""

    key: str                # "custom" | "hpt"
    collection: str         # the resource-name segment, e.g. "customJobs"
    label: str              # the type name Vertex uses in messages
    message: Any            # the proto-plus class
    spec_field: str         # where the CustomJobSpec lives
    spec_path: str          # the same, as Vertex names it in messages


CUSTOM = Kind("custom", "customJobs", "CustomJob", cj.CustomJob, "job_spec", "job_spec")
HPT = Kind("hpt", "hyperparameterTuningJobs", "HyperparameterTuningJob",
           hpt.HyperparameterTuningJob, "trial_job_spec", "trial_job_spec")
KINDS: dict[str, Kind] = {"custom": CUSTOM, "hpt": HPT}


def _now() -> datetime:
    return datetime.now(timezone.utc)


def _copy(message: Any) -> Any:
    """A deep copy of a proto-plus message (stored jobs are never handed out)."""
    cls = type(message)
    return cls.deserialize(cls.serialize(message))


# --- faults -----------------------------------------------------------------

@dataclass
class Fault:
    """Make ``method`` fail with ``kind`` for its next ``count`` calls."""

    method: str
    kind: str
    count: int = 1

    @property
    def before_commit(self) -> bool:
        """Faults other than deadline-after-commit fire before the method acts."""
        return self.kind != "deadline-after-commit"


def parse_fault(text: str) -> Fault:
    """``create:quota:2`` → Fault; a malformed spec is a UsageError naming what is accepted."""
    parts = text.strip().split(":")
    if len(parts) == 2:
        parts.append("1")
    if len(parts) != 3:
        raise UsageError(f"--fault takes METHOD:KIND:COUNT, got {text!r} (e.g. create:unavailable-before-commit:1)")
    method, kind, count = (p.strip().lower() for p in parts)
    if method not in FAULT_METHODS:
        raise UsageError(f"fault method {method!r} in {text!r} is not one of {', '.join(FAULT_METHODS)}")
    if kind not in FAULT_KINDS:
        raise UsageError(f"fault kind {kind!r} in {text!r} is not one of {', '.join(FAULT_KINDS)}")
    if not count.isdigit() or int(count) < 1:
        raise UsageError(f"fault count {count!r} in {text!r} must be a whole number ≥ 1")
    return Fault(method, kind, int(count))


def faults_from_env(environ: Mapping[str, str]) -> list[Fault]:
    """Faults listed comma-separated in ``VXTRAIN_EMULATOR_FAULTS``."""
    raw = environ.get(FAULT_ENV, "")
    return [parse_fault(item) for item in raw.split(",") if item.strip()]


class FaultPlan:
    """Pending faults; each call of a method consumes at most one (thread-safe)."""

    def __init__(self, faults: Iterable[Fault] = ()) -> None:
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        for fault in faults:
            self.add(fault)

    def add(self, fault: Fault | str) -> None:
        """Queue a fault (a Fault or its ``METHOD:KIND:COUNT`` text)."""
        parsed = parse_fault(fault) if isinstance(fault, str) else Fault(fault.method, fault.kind, fault.count)
        with self._lock:
            self._faults.append(parsed)

    def take(self, method: str) -> Fault | None:
        """The fault that fires on this call of ``method`` (one count used), or None."""
        with self._lock:
            for fault in self._faults:
                if fault.method == method and fault.count > 0:
                    fault.count -= 1
                    return Fault(fault.method, fault.kind, 1)
        return None

    def pending(self) -> list[Fault]:
        """Faults that have not fired yet (copies)."""
        with self._lock:
            return [Fault(f.method, f.kind, f.count) for f in self._faults if f.count > 0]

    def clear(self) -> None:
        """Drop every pending fault."""
        with self._lock:
            self._faults.clear()


def quota_metric(job: Any) -> str:
    """The quota metric Vertex would name for ``job``'s primary pool.

    Vertex words it "The following quota metrics exceed quota limits:
    aiplatform.googleapis.com/custom_model_training_nvidia_v100_gpus" (seen in
    GoogleCloudPlatform/vertex-ai-samples#700 and stable-diffusion-on-gcp#12).
    """
    pools = _spec_of(job).worker_pool_specs if job is not None else []
    accel = pools[0].machine_spec.accelerator_type.name if pools else "ACCELERATOR_TYPE_UNSPECIFIED"
    if accel.startswith("TPU"):
        return f"aiplatform.googleapis.com/custom_model_training_{accel.lower()}"
    if accel.startswith("NVIDIA"):
        gpu = accel.lower().replace("nvidia_tesla_", "nvidia_")
        return f"aiplatform.googleapis.com/custom_model_training_{gpu}_gpus"
    return "aiplatform.googleapis.com/custom_model_training_cpus"


def fault_error(fault: Fault, job: Any = None) -> RpcError:
    """The gRPC error a fault produces, worded like Vertex's own."""
    if fault.kind == "quota":
        return RpcError(grpc.StatusCode.RESOURCE_EXHAUSTED,
                        f"The following quota metrics exceed quota limits: {quota_metric(job)}")
    if fault.kind == "permission":
        account = _spec_of(job).service_account if job is not None else ""
        who = account or "the Vertex AI Custom Code Service Agent"
        return RpcError(grpc.StatusCode.PERMISSION_DENIED,
                        f"Permission 'iam.serviceAccounts.actAs' denied on service account {who} "
                        "(or it may not exist).")
    if fault.kind == "internal":
        return RpcError(grpc.StatusCode.INTERNAL, "Internal error encountered.")
    if fault.kind == "deadline-after-commit":
        return RpcError(grpc.StatusCode.DEADLINE_EXCEEDED, "Deadline Exceeded")
    return RpcError(grpc.StatusCode.UNAVAILABLE, "The service is currently unavailable.")


# --- validation -------------------------------------------------------------

def _spec_of(job: Any) -> Any:
    """The CustomJobSpec of a CustomJob or HyperparameterTuningJob."""
    return job.trial_job_spec if isinstance(job, hpt.HyperparameterTuningJob) else job.job_spec


def _is_empty(pool: cj.WorkerPoolSpec) -> bool:
    """``{}`` in workerPoolSpecs: a slot left empty on purpose."""
    return cj.WorkerPoolSpec.pb(pool).ByteSize() == 0


def parse_parent(parent: str) -> tuple[str, str]:
    """``projects/P/locations/L`` → (P, L); anything else is INVALID_ARGUMENT."""
    m = _PARENT.match(parent or "")
    if not m:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid parent {parent!r}: expected projects/{{project}}/locations/{{location}}.")
    return m.group("project"), m.group("location")


def pool_problems(pools: Sequence[cj.WorkerPoolSpec], prefix: str) -> list[tuple[str, str]]:
    """(field, message) for each way ``pools`` breaks Vertex's rules.

    https://cloud.google.com/vertex-ai/docs/training/distributed-training :
    the first pool runs the primary replica, so its replicaCount is exactly 1.
    The "Required field is not set." and accelerator wordings are Vertex's;
    the replica-count and task wordings are paraphrased.
    """
    if not pools:
        return [(f"{prefix}.worker_pool_specs", "Required field is not set.")]
    if _is_empty(pools[0]):
        return [(f"{prefix}.worker_pool_specs[0]",
                 "The first worker pool (the primary replica) must be specified; it cannot be empty.")]
    out = []
    if pools[0].replica_count != 1:
        out.append((f"{prefix}.worker_pool_specs[0].replica_count",
                    f"The replica count of the first worker pool (the primary replica) must be 1, "
                    f"got {pools[0].replica_count}."))
    for i, pool in enumerate(pools):
        if not _is_empty(pool):
            out += _one_pool_problems(pool, f"{prefix}.worker_pool_specs[{i}]")
    return out


def _one_pool_problems(pool: cj.WorkerPoolSpec, where: str) -> list[tuple[str, str]]:
    out = []
    machine = pool.machine_spec
    if not machine.machine_type:
        out.append((f"{where}.machine_spec.machine_type", "Required field is not set."))
    has_type = machine.accelerator_type.name != "ACCELERATOR_TYPE_UNSPECIFIED"
    if has_type != (machine.accelerator_count > 0):
        out.append((f"{where}.machine_spec.accelerator_type",
                    "Both `accelerator_type` and `accelerator_count` should be specified or none."))
    if "container_spec" not in pool and "python_package_spec" not in pool:
        out.append((f"{where}.task", "Either container_spec or python_package_spec must be set."))
    elif "container_spec" in pool and not pool.container_spec.image_uri:
        out.append((f"{where}.container_spec.image_uri", "Required field is not set."))
    elif "python_package_spec" in pool and not pool.python_package_spec.python_module:
        out.append((f"{where}.python_package_spec.python_module", "Required field is not set."))
    return out


def job_problems(kind: Kind, job: Any) -> list[tuple[str, str]]:
    """Everything Vertex would refuse in a create request's job."""
    out = []
    if not job.display_name:
        out.append(("display_name", "Required field is not set."))
    out += pool_problems(list(_spec_of(job).worker_pool_specs), kind.spec_path)
    if kind is HPT:
        out += _study_problems(job)
    return out


def _study_problems(job: hpt.HyperparameterTuningJob) -> list[tuple[str, str]]:
    out = []
    if not job.study_spec.metrics:
        out.append(("study_spec.metrics", "Required field is not set."))
    if not job.study_spec.parameters:
        out.append(("study_spec.parameters", "Required field is not set."))
    if job.max_trial_count <= 0:
        out.append(("max_trial_count", "Required field is not set."))
    return out


def invalid_argument(problems: Sequence[tuple[str, str]]) -> RpcError:
    """Vertex's wording for a list of field errors (as seen in prefect-gcp#175)."""
    listed = "\t".join(f"{i}.Field: {f}; Message: {m}" for i, (f, m) in enumerate(problems, 1))
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"List of found errors:\t{listed}\t")


# --- list filters -----------------------------------------------------------

_TERM = re.compile(r'\s*(?P<field>[A-Za-z_][\w.\-/]*)\s*(?P<op>!=|=|:)\s*'
                   r'(?P<value>"(?:[^"\\]|\\.)*"|[^\s"]+)\s*')
_AND = re.compile(r"AND\s+")

Predicate = Callable[[Any], bool]


def parse_filter(text: str) -> list[Predicate]:
    """An AIP-160 subset: ``labels.K=V``, ``labels.K:*``, ``state=S``/``state!=S``,
    ``display_name="x"``, ``display_name:"x_*"`` (``*`` a wildcard, as in the
    ListCustomJobsRequest.filter docs), joined by AND (https://google.aip.dev/160)."""
    if not text.strip():
        return []
    return [_predicate(term, text) for term in _terms(text.strip())]


def _terms(text: str) -> Iterator[re.Match[str]]:
    """The comparisons of ``A AND B AND …``, read left to right so that a quoted
    value may hold anything (``AND``, ``OR``, escaped quotes)."""
    pos = 0
    while True:
        term = _TERM.match(text, pos)
        if term is None:
            raise _bad_filter(text)
        yield term
        if term.end() == len(text):
            return
        joiner = _AND.match(text, term.end())
        if joiner is None:  # OR, NOT, parentheses, <, > …: not emulated
            raise _bad_filter(text)
        pos = joiner.end()


def _bad_filter(whole: str) -> RpcError:
    return RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                    f"Invalid filter {whole!r}: the emulator accepts terms like labels.KEY=VALUE, labels.KEY:*, "
                    "state=JOB_STATE_RUNNING, state!=JOB_STATE_FAILED, display_name=\"x\", "
                    "display_name:\"x_*\", joined by AND.")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return re.sub(r"\\(.)", r"\1", value[1:-1])
    return value


def _predicate(term: re.Match[str], whole: str) -> Predicate:
    name, op, value = term.group("field"), term.group("op"), _unquote(term.group("value"))
    if name.startswith("labels."):
        key = name[len("labels."):]
        return _text_predicate(lambda job: job.labels.get(key), op, value)
    if name == "state":
        return _state_predicate(op, value)
    if name == "display_name":
        return _text_predicate(lambda job: job.display_name, op, value)
    raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                   f"Unsupported filter field {name!r} in {whole!r}: use labels.KEY, state or display_name.")


def _negate(pred: Predicate, negate: bool) -> Predicate:
    return (lambda job: not pred(job)) if negate else pred


def _text_predicate(get: Callable[[Any], str | None], op: str, value: str) -> Predicate:
    """``=``/``!=`` compare exactly; ``:`` matches with ``*`` as a wildcard (``labels.K:*``:
    the label exists). An absent label equals nothing."""
    if op == ":":
        pattern = re.compile(".*".join(re.escape(part) for part in value.split("*")), re.DOTALL)
        return lambda job: (text := get(job)) is not None and pattern.fullmatch(text) is not None
    return _negate(lambda job: get(job) == value, op == "!=")


def _state_predicate(op: str, value: str) -> Predicate:
    if value not in JobState.__members__:
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                       f"Invalid state {value!r} in filter: use a JobState name such as JOB_STATE_RUNNING.")
    state = JobState.__members__[value]
    return _negate(lambda job: job.state == state, op == "!=")


def _page_token(seq: int) -> str:
    """A cursor, not an offset: the next page starts after the job numbered ``seq``,
    so jobs created or deleted between two pages neither repeat nor vanish."""
    return base64.urlsafe_b64encode(f"before:{seq}".encode()).decode()


def _page_cursor(token: str) -> int | None:
    """The ``seq`` a page token continues from (None: the first page)."""
    if not token:
        return None
    try:
        text = base64.urlsafe_b64decode(token.encode()).decode()
        if not text.startswith("before:"):
            raise ValueError(text)
        return int(text.removeprefix("before:"))
    except (ValueError, UnicodeDecodeError):
        raise RpcError(grpc.StatusCode.INVALID_ARGUMENT, f"Invalid page_token {token!r}.") from None


# --- running jobs -----------------------------------------------------------

class NotRunnable(Exception):
    """The job has no command that can run on this host."""


_ROLE_BY_INDEX = {0: "chief", 1: "workers", 2: "parameter_servers", 3: "evaluators"}


def job_model(job: Any, local: LocalSpec | None = None) -> tuple[Job, dict[str, Any]]:
    """The runner's Job model and the CustomJobSpec (REST dict) of a stored job.

    One private converter from the message (rather than the spec pipeline),
    so the emulator runs whatever a client sent. Raises NotRunnable with a
    hint when a pool has nothing to run on this host.
    """
    spec_msg = _spec_of(job)
    spec = json_format.MessageToDict(type(spec_msg).pb(spec_msg))
    pools = {}
    for index, raw in enumerate(spec.get("workerPoolSpecs", [])):
        if raw:
            pool = _pool_model(index, raw)
            pools[pool.role] = pool
    model = Job(display_name=job.display_name, pools=pools, labels=dict(job.labels), local=local,
                base_output_dir=spec.get("baseOutputDirectory", {}).get("outputUriPrefix"))
    _check_runnable(model)
    return model, spec


def _pool_model(index: int, raw: Mapping[str, Any]) -> Pool:
    container = raw.get("containerSpec", {})
    package = raw.get("pythonPackageSpec", {})
    image = container.get("imageUri")
    role = _ROLE_BY_INDEX.get(index, f"pool{index}")
    if index == 2 and image and "reductionserver" in image:
        role = "reduction_server"
    machine = raw.get("machineSpec", {})
    accel = Accelerator(machine.get("acceleratorType"), machine.get("acceleratorCount")) \
        if machine.get("acceleratorType") else None
    body = container or package
    pool = Pool(role=role, replicas=int(raw.get("replicaCount", 0)), machine_type=machine.get("machineType"),
                accelerator=accel, image=image, command=list(container.get("command", [])),
                args=list(body.get("args", [])), env={e["name"]: e.get("value", "") for e in body.get("env", [])})
    if package:
        pool.python_package = PythonPackage(package.get("executorImageUri"), list(package.get("packageUris", [])),
                                            package.get("pythonModule"))
    return pool


def _check_runnable(model: Job) -> None:
    if model.local is not None and model.local.command:
        return
    for pool in model.ordered_pools():
        module = pool.python_package.module if pool.python_package else None
        if pool.role != "reduction_server" and not pool.command and not module:
            raise NotRunnable(
                f"workerpool{pool.index} has nothing to run on this host: its container "
                f"({pool.image or 'no image'}) has no command, and the emulator cannot run the image's "
                "entrypoint. Give `local: {command: [...]}` in the spec, set a container command "
                "(`command:` in the pool or in `defaults`), or start the emulator with --simulate SECONDS.")


@dataclass
class Outcome:
    """How a job (or trial) ended."""

    state: JobState
    code: int = 0
    message: str = ""


def _cancelled(kind: Kind) -> Outcome:
    # Vertex's doc: a cancelled job gets error.code 1 (Code.CANCELLED).
    return Outcome(CANCELLED, 1, f"{kind.label} was cancelled.")


# --- the store and the service logic ----------------------------------------

@dataclass
class Record:
    """One stored job, its cancel switch and its lifecycle thread."""

    kind: Kind
    job: Any
    seq: int = 0            # creation order: lists are newest first, page tokens name a seq
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None
    history: list[JobState] = field(default_factory=list)


class Emulator:
    """The JobService's behaviour over plain proto-plus messages (no gRPC here).

    ``simulate_seconds``: instead of running jobs, walk every job through the
    states on a timer (spread over that many seconds) and succeed.
    ``workdir``: where relative commands of jobs run (default: the current
    directory at start). ``seed``: seeds the random search of studies.
    """

    def __init__(self, *, faults: Iterable[Fault | str] = (), simulate_seconds: float | None = None,
                 workdir: str | Path | None = None, out: TextIO | None = None, seed: int | None = None) -> None:
        self.faults = FaultPlan()
        for fault in faults:
            self.faults.add(fault)
        self.simulate_seconds = simulate_seconds
        self.workdir = Path(workdir) if workdir is not None else Path.cwd()
        self.out = out
        self.seed = seed  # random search of studies: a seed makes trial parameters reproducible
        self._lock = threading.RLock()
        self._records: dict[str, Record] = {}
        self._threads: list[threading.Thread] = []  # every lifecycle thread, deleted jobs' too
        self._seq = itertools.count(1)
        self._locals: list[tuple[dict[str, str], LocalSpec]] = []
        self._closed = False

    # -- public helpers for tests and --target local --

    def add_fault(self, fault: Fault | str) -> None:
        """Inject a fault at runtime (``"create:quota:1"`` or a Fault)."""
        self.faults.add(fault)

    def register_local(self, labels: Mapping[str, str], local: LocalSpec) -> None:
        """Run jobs whose labels include ``labels`` with ``local`` (``local.command`` etc.).

        ``--target local`` uses this: the compiled CustomJob has no ``local:``
        block, so the submitter tells the in-process emulator out of band.
        """
        with self._lock:
            self._locals.append((dict(labels), local))

    def jobs(self, kind: str = "custom") -> list[Any]:
        """Copies of the stored jobs of ``kind`` ("custom" or "hpt"), oldest first."""
        with self._lock:
            return [_copy(r.job) for r in self._records.values() if r.kind.key == kind]

    def job(self, name: str) -> Any:
        """A copy of the stored job called ``name`` (KeyError when absent)."""
        with self._lock:
            return _copy(self._records[name].job)

    def history(self, name: str) -> list[JobState]:
        """Every state job ``name`` has been in, in order."""
        with self._lock:
            return list(self._records[name].history)

    def wait(self, name: str, timeout: float = 30.0) -> Any:
        """Block until job ``name`` is in a terminal state; return a copy of it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            job = self.job(name)
            if job.state in TERMINAL_STATES:
                return job
            time.sleep(0.01)
        raise TimeoutError(f"{name} did not finish within {timeout} s")

    def close(self, timeout: float = 10.0) -> None:
        """Cancel every unfinished job and wait for their threads (and so their
        processes: the local runner stops them before it returns). Creates
        after this are refused, so no thread can start behind it."""
        with self._lock:
            self._closed = True
            records, threads = list(self._records.values()), list(self._threads)
        for record in records:
            record.stop.set()
        deadline = time.monotonic() + timeout
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # -- the RPCs --

    def call(self, method: str, action: Callable[[], Any], job: Any = None) -> Any:
        """Run one RPC's ``action`` under the fault plan of ``method``."""
        fault = self.faults.take(method)
        if fault is not None and fault.before_commit:
            raise fault_error(fault, job)
        result = action()
        if fault is not None:
            raise fault_error(fault, job)
        return result

    def create(self, kind: Kind, parent: str, job: Any) -> Any:
        """Validate and store ``job``, start its lifecycle; return the stored copy."""
        project, location = parse_parent(parent)
        problems = job_problems(kind, job)
        if problems:
            raise invalid_argument(problems)
        job = _copy(job)
        with self._lock:
            if self._closed:
                raise RpcError(grpc.StatusCode.UNAVAILABLE, "The service is shutting down.")
            job.name = f"projects/{project}/locations/{location}/{kind.collection}/{self._new_id()}"
            record = Record(kind, job, seq=next(self._seq))
            self._records[job.name] = record
            self._set_state(record, QUEUED, created=True)
            answer = _copy(job)
            self._start(record)  # under the lock: close() sees every thread it must join
        return answer

    def get(self, kind: Kind, name: str) -> Any:
        """A copy of the stored job ``name``."""
        with self._lock:
            return _copy(self._record(kind, name).job)

    def list(self, kind: Kind, parent: str, filter_: str, page_size: int, page_token: str) -> tuple[list[Any], str]:
        """One page of the jobs under ``parent`` matching ``filter_``, newest first."""
        parse_parent(parent)
        preds = parse_filter(filter_)
        before = _page_cursor(page_token)
        size = page_size if page_size > 0 else DEFAULT_PAGE_SIZE
        prefix = f"{parent}/{kind.collection}/"
        with self._lock:
            records = sorted(self._records.values(), key=lambda r: r.seq, reverse=True)
            matched = [r for r in records if r.kind is kind and r.job.name.startswith(prefix)
                       and (before is None or r.seq < before) and all(p(r.job) for p in preds)]
            page = [_copy(r.job) for r in matched[:size]]
        more = len(matched) > size
        return page, _page_token(matched[size - 1].seq) if more else ""

    def cancel(self, kind: Kind, name: str) -> None:
        """Ask a job to stop: CANCELLING now, CANCELLED once its processes ended."""
        with self._lock:
            record = self._record(kind, name)
            if record.job.state in TERMINAL_STATES:
                raise RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                               f"Cannot cancel {kind.label} {name}: it is already in state "
                               f"{record.job.state.name}.")
            if record.job.state != CANCELLING:  # a repeated cancel changes nothing
                self._set_state(record, CANCELLING)
            record.stop.set()

    def delete(self, kind: Kind, name: str) -> operations_pb2.Operation:
        """Remove a finished job; the answer is an already-done long-running operation."""
        with self._lock:
            record = self._record(kind, name)
            if record.job.state not in TERMINAL_STATES:
                raise RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                               f"{kind.label} {name} is in state {record.job.state.name}; "
                               "cancel it and wait for it to end before deleting it.")
            del self._records[name]
        return _done_operation(f"{name}/operations/{10**18 + secrets.randbelow(9 * 10**18)}")

    # -- internals --

    def _new_id(self) -> int:
        """A unique decimal id shaped like Vertex's (19 digits)."""
        while True:
            candidate = 10**18 + secrets.randbelow(9 * 10**18)
            if not any(n.endswith(f"/{candidate}") for n in self._records):
                return candidate

    def _record(self, kind: Kind, name: str) -> Record:
        pattern = rf"^projects/[^/]+/locations/[^/]+/{kind.collection}/\d+$"
        if not re.match(pattern, name or ""):
            raise RpcError(grpc.StatusCode.INVALID_ARGUMENT,
                           f"Invalid {kind.label} name {name!r}: expected "
                           f"projects/{{project}}/locations/{{location}}/{kind.collection}/{{id}}.")
        record = self._records.get(name)
        if record is None or record.kind is not kind:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"The {kind.label} {name} does not exist.")
        return record

    def _set_state(self, record: Record, state: JobState, *, created: bool = False) -> None:
        now = _now()
        job = record.job
        job.state = state
        job.update_time = now
        record.history.append(state)
        if created:
            job.create_time = now
        if state == RUNNING:
            job.start_time = now

    def _advance(self, record: Record, state: JobState) -> bool:
        """Move to ``state`` unless a cancel came first; False when cancelled."""
        with self._lock:
            if record.stop.is_set():
                return False
            self._set_state(record, state)
            return True

    def _finish(self, record: Record, outcome: Outcome) -> None:
        with self._lock:
            self._set_state(record, outcome.state)
            record.job.end_time = record.job.update_time
            if outcome.state != SUCCEEDED:
                record.job.error = status_pb2.Status(code=outcome.code, message=outcome.message)

    def _start(self, record: Record) -> None:
        thread = threading.Thread(target=self._lifecycle, args=(record,), daemon=True,
                                  name=f"vxtrain-emulator-{record.job.name.rsplit('/', 1)[-1]}")
        record.thread = thread
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def _lifecycle(self, record: Record) -> None:
        """QUEUED → PENDING → RUNNING → (run or simulate) → terminal state."""
        step = (self.simulate_seconds or 0) / 4 if self.simulate_seconds else STEP_SECONDS
        for state in (PENDING, RUNNING):
            if record.stop.wait(step) or not self._advance(record, state):
                self._finish(record, _cancelled(record.kind))
                return
        try:
            outcome = self._execute(record, step)
        except Exception as exc:  # noqa: BLE001 - a job thread must always end its job
            outcome = Outcome(FAILED, 13, f"The emulator could not run the job: {exc}")
        self._finish(record, outcome)

    def _execute(self, record: Record, step: float) -> Outcome:
        if self.simulate_seconds is not None:
            return self._simulate(record, step * 2)
        try:
            model, spec = job_model(record.job, self._local_for(record.job))
        except NotRunnable as exc:
            return Outcome(FAILED, 9, str(exc))  # 9: FAILED_PRECONDITION
        if record.kind is HPT:
            return self._run_trials(record, model, spec)
        return self._run(record, model, spec)

    def _simulate(self, record: Record, seconds: float) -> Outcome:
        """Run nothing; after ``seconds`` succeed (a study gets its trials, all succeeded)."""
        if record.stop.wait(seconds):
            return _cancelled(record.kind)
        if record.kind is HPT:
            from vxtrain.runtime import study

            with self._lock:
                config = study.StudyConfig.from_hpt_json(_study_json(record.job))
                points = study.suggest(config.study_spec, config.max_trials, seed=self.seed).points
                for number, params in enumerate(points, 1):
                    record.job.trials.append(_trial(str(number), params, study_types.Trial.State.SUCCEEDED))
        return Outcome(SUCCEEDED)

    def _local_for(self, job: Any) -> LocalSpec | None:
        with self._lock:
            for labels, local in self._locals:
                if all(job.labels.get(k) == v for k, v in labels.items()):
                    return local
        return None

    def _run(self, record: Record, model: Job, spec: dict[str, Any], *, trial: str | None = None,
             extra_args: Sequence[str] = ()) -> Outcome:
        """One run of the job's replicas with the local runner."""
        from vxtrain.runtime import runner

        # Job output goes to stderr by default: with --target local stdout
        # carries the command's JSON document only.
        try:
            result = runner.run_job(model, spec, trial=trial, extra_args=tuple(extra_args), stop=record.stop,
                                    out=self.out or sys.stderr, base_dir=self.workdir,
                                    job_id=record.job.name.rsplit("/", 1)[-1])
        except LocalRunError as exc:  # a replica could not start: nothing is left running
            return Outcome(FAILED, 9, f"The job could not start on this host: {exc}")
        if record.stop.is_set():
            return _cancelled(record.kind)
        if result.succeeded:
            return Outcome(SUCCEEDED)
        return Outcome(FAILED, 3, _failure_message(result))

    def _run_trials(self, record: Record, model: Job, spec: dict[str, Any]) -> Outcome:
        """The study's trials with the local runner (vxtrain.runtime.study), ``parallel_trial_count`` at once."""
        from vxtrain.runtime import study

        with self._lock:
            config = study.StudyConfig.from_hpt_json(_study_json(record.job))
        result = study.run_study(model, spec, config, seed=self.seed, stop=record.stop, out=self.out or sys.stderr,
                                 base_dir=self.workdir, job_id=record.job.name.rsplit("/", 1)[-1],
                                 on_start=lambda t: self._trial_started(record, t),
                                 on_end=lambda t: self._trial_ended(record, t))
        if result.cancelled:
            return _cancelled(record.kind)
        if not result.succeeded:
            return Outcome(FAILED, 3, result.message)
        return Outcome(SUCCEEDED)

    def _trial_started(self, record: Record, trial: Any) -> None:
        with self._lock:
            record.job.trials.append(_trial(trial.id, trial.parameters, study_types.Trial.State.ACTIVE))

    def _trial_ended(self, record: Record, trial: Any) -> None:
        """Record a trial's end: SUCCEEDED, or INFEASIBLE with the reason; its final measurement."""
        with self._lock:
            stored = next(t for t in record.job.trials if t.id == trial.id)
            stored.state = study_types.Trial.State.__members__[trial.state]
            stored.end_time = _now()
            if trial.metrics:
                stored.final_measurement = study_types.Measurement(
                    step_count=trial.step or 0,
                    metrics=[{"metric_id": k, "value": v} for k, v in trial.metrics.items()])
            if trial.state != "SUCCEEDED":
                stored.infeasible_reason = trial.message


def _trial(number: str, params: Mapping[str, Any], state: Any) -> study_types.Trial:
    trial = study_types.Trial(id=number, state=state, start_time=_now(),
                              parameters=[{"parameter_id": k, "value": v} for k, v in params.items()])
    if state == study_types.Trial.State.SUCCEEDED:
        trial.end_time = trial.start_time
    return trial


def _study_json(job: hpt.HyperparameterTuningJob) -> dict[str, Any]:
    """The REST JSON of what vxtrain.runtime.study reads: studySpec and the trial counts."""
    return {"studySpec": json_format.MessageToDict(study_types.StudySpec.pb(job.study_spec)),
            "maxTrialCount": job.max_trial_count, "parallelTrialCount": job.parallel_trial_count,
            "maxFailedTrialCount": job.max_failed_trial_count}


def _failure_message(result: Any) -> str:
    """Vertex's wording for a failed replica ("The replica workerpool0-0 exited
    with a non-zero status of 1."), then the runner's own account."""
    replica = result.failed_replica or "workerpool0-0"
    head = f"The replica {replica} exited with a non-zero status of {result.exit_code}."
    return f"{head} ({result.message})" if result.message else head


def _done_operation(name: str) -> operations_pb2.Operation:
    """A finished google.longrunning Operation whose response is Empty (what delete returns)."""
    metadata = any_pb2.Any()
    now = _now()
    meta = op_types.DeleteOperationMetadata(generic_metadata={"create_time": now, "update_time": now})
    metadata.Pack(op_types.DeleteOperationMetadata.pb(meta))
    response = any_pb2.Any()
    response.Pack(empty_pb2.Empty())
    return operations_pb2.Operation(name=name, done=True, metadata=metadata, response=response)


# --- gRPC wiring ------------------------------------------------------------

def _pb_serialize(message: Any) -> bytes:
    return message.SerializeToString()


@dataclass(frozen=True)
class Method:
    """One served RPC: its fault key, request class, response serializer and action."""

    fault: str
    request: Any
    serialize: Callable[[Any], bytes]
    action: Callable[[Emulator, Any], Any]
    job: Callable[[Any], Any] = lambda request: None


def _list_custom(emu: Emulator, req: Any) -> js.ListCustomJobsResponse:
    jobs, token = emu.list(CUSTOM, req.parent, req.filter, req.page_size, req.page_token)
    return js.ListCustomJobsResponse(custom_jobs=jobs, next_page_token=token)


def _list_hpt(emu: Emulator, req: Any) -> js.ListHyperparameterTuningJobsResponse:
    jobs, token = emu.list(HPT, req.parent, req.filter, req.page_size, req.page_token)
    return js.ListHyperparameterTuningJobsResponse(hyperparameter_tuning_jobs=jobs, next_page_token=token)


def _cancel(kind: Kind) -> Callable[[Emulator, Any], empty_pb2.Empty]:
    """The Cancel RPC of ``kind``: it answers google.protobuf.Empty."""
    def action(emu: Emulator, req: Any) -> empty_pb2.Empty:
        emu.cancel(kind, req.name)
        return empty_pb2.Empty()
    return action


METHODS: dict[str, Method] = {
    "CreateCustomJob": Method("create", js.CreateCustomJobRequest, cj.CustomJob.serialize,
                              lambda e, r: e.create(CUSTOM, r.parent, r.custom_job), lambda r: r.custom_job),
    "GetCustomJob": Method("get", js.GetCustomJobRequest, cj.CustomJob.serialize,
                           lambda e, r: e.get(CUSTOM, r.name)),
    "ListCustomJobs": Method("list", js.ListCustomJobsRequest, js.ListCustomJobsResponse.serialize, _list_custom),
    "CancelCustomJob": Method("cancel", js.CancelCustomJobRequest, _pb_serialize,
                              _cancel(CUSTOM)),
    "DeleteCustomJob": Method("delete", js.DeleteCustomJobRequest, _pb_serialize,
                              lambda e, r: e.delete(CUSTOM, r.name)),
    "CreateHyperparameterTuningJob": Method(
        "create", js.CreateHyperparameterTuningJobRequest, hpt.HyperparameterTuningJob.serialize,
        lambda e, r: e.create(HPT, r.parent, r.hyperparameter_tuning_job), lambda r: r.hyperparameter_tuning_job),
    "GetHyperparameterTuningJob": Method("get", js.GetHyperparameterTuningJobRequest,
                                         hpt.HyperparameterTuningJob.serialize, lambda e, r: e.get(HPT, r.name)),
    "ListHyperparameterTuningJobs": Method("list", js.ListHyperparameterTuningJobsRequest,
                                           js.ListHyperparameterTuningJobsResponse.serialize, _list_hpt),
    "CancelHyperparameterTuningJob": Method("cancel", js.CancelHyperparameterTuningJobRequest, _pb_serialize,
                                            _cancel(HPT)),
    "DeleteHyperparameterTuningJob": Method("delete", js.DeleteHyperparameterTuningJobRequest, _pb_serialize,
                                            lambda e, r: e.delete(HPT, r.name)),
}


def _handler(emulator: Emulator, method: Method) -> Callable[[Any, grpc.ServicerContext], Any]:
    def handle(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return emulator.call(method.fault, lambda: method.action(emulator, request), method.job(request))
        except RpcError as exc:
            context.abort(exc.code, exc.message)
    return handle


def generic_handler(emulator: Emulator) -> grpc.GenericRpcHandler:
    """The JobService handlers; methods not in METHODS answer UNIMPLEMENTED."""
    handlers = {
        name: grpc.unary_unary_rpc_method_handler(
            _handler(emulator, m), request_deserializer=m.request.deserialize, response_serializer=m.serialize)
        for name, m in METHODS.items()
    }
    return grpc.method_handlers_generic_handler(SERVICE, handlers)


class EmulatorHandle:
    """A running emulator: its address, its jobs, and how to stop it."""

    def __init__(self, server: grpc.Server, emulator: Emulator, host: str, port: int,
                 executor: futures.ThreadPoolExecutor | None = None) -> None:
        self.server = server
        self.emulator = emulator
        self.host = host
        self.port = port
        self._executor = executor

    @property
    def address(self) -> str:
        """``HOST:PORT`` as the client's ``api_endpoint`` takes it."""
        return f"{_host_part(self.host)}:{self.port}"

    def jobs(self, kind: str = "custom") -> list[Any]:
        """Copies of the stored jobs (``"custom"`` or ``"hpt"``)."""
        return self.emulator.jobs(kind)

    def add_fault(self, fault: Fault | str) -> None:
        """Inject a fault at runtime."""
        self.emulator.add_fault(fault)

    def stop(self, grace: float | None = 0.5) -> None:
        """Stop serving, cancel the jobs still running, and wait until no thread
        or process of the emulator is left (idempotent)."""
        self.server.stop(grace).wait()
        if self._executor is not None:
            # grpc never shuts down the executor it was given: its handler
            # threads would outlive the server. Waiting also lets a create still
            # in a handler finish before close() collects the job threads.
            self._executor.shutdown(wait=True)
        self.emulator.close()

    def wait_for_termination(self, timeout: float | None = None) -> bool:
        """Block while the server serves (True when it stopped)."""
        return self.server.wait_for_termination(timeout)

    def __enter__(self) -> EmulatorHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _host_part(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


def start_emulator(host: str = DEFAULT_HOST, port: int = 0, *, faults: Iterable[Fault | str] = (),
                   simulate_seconds: float | None = None, workdir: str | Path | None = None,
                   environ: Mapping[str, str] | None = None, out: TextIO | None = None,
                   max_workers: int = 16, seed: int | None = None) -> EmulatorHandle:
    """Serve the emulated JobService on ``host:port`` (0: any free port).

    Faults come from ``faults`` plus ``VXTRAIN_EMULATOR_FAULTS`` in ``environ``
    (default ``os.environ``). The port is bound exclusively: a taken port
    raises VxtrainError instead of silently sharing it (gRPC enables
    SO_REUSEPORT by default on Linux).
    """
    env = os.environ if environ is None else environ
    emulator = Emulator(faults=[*faults, *faults_from_env(env)], simulate_seconds=simulate_seconds,
                        workdir=workdir, out=out, seed=seed)
    executor = futures.ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="vxtrain-emulator")
    server = grpc.server(executor, options=[("grpc.so_reuseport", 0)])
    server.add_generic_rpc_handlers((generic_handler(emulator),))
    try:
        bound = _bind(server, host, port)
    except VxtrainError:
        server.stop(None)
        executor.shutdown(wait=True)
        raise
    server.start()
    return EmulatorHandle(server, emulator, host, bound, executor)


def _bind(server: grpc.Server, host: str, port: int) -> int:
    """Bind every address of ``host`` on one port, or raise VxtrainError.

    A name is resolved here, each address bound on its own: given a name,
    grpc binds what it can and only warns, so ``localhost`` with 127.0.0.1's
    port taken would listen on ::1 alone while clients reach the other process.
    """
    bound = port
    for address in _addresses(host):
        try:
            got = server.add_insecure_port(f"{_host_part(address)}:{bound}")
        except RuntimeError:  # grpc returns 0, or raises, when a bind fails
            got = 0
        if not got:
            where = host if address == host else f"{host} ({address})"
            raise VxtrainError(f"port {bound} on {where} is in use (or {host} is not an address of "
                               "this machine); pick another with --port, or --port 0 for any free port")
        bound = got
    return bound


def _addresses(host: str) -> list[str]:
    """The IP addresses of ``host`` (an address is its own), IPv4 first."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise VxtrainError(f"cannot bind {host}: the name does not resolve ({exc}); give an address "
                           "such as 127.0.0.1") from exc
    found = {str(info[4][0]) for info in infos}
    return sorted(found, key=lambda a: (":" in a, a))
