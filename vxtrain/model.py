"""The typed job model every input format is normalized into.

``build`` is lenient on purpose: it runs after the schema check and takes what
has the right type, leaving the rest ``None``, so the semantic rules can still
report their own findings on a spec that also has schema errors ("every
mistake at once").
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

# The roles and their pool slots are the one table in vxtrain.slots.
from vxtrain.slots import POOL_INDEX, ROLES

# Annotations only: validate imports this module, and a TypedDict class costs ~15 µs a field
# to create (measured).
if TYPE_CHECKING:
    from vxtrain.vocab.jobjson import JsonObject

    class RecoveryJson(TypedDict):
        """plan's ``recovery`` object (docs/cli.md)."""

        max_recoveries: int | None
        on_exit_codes: list[int]
        strategy: str
        spot_to_standard_after: int | None
DEFAULT_RS_MACHINE = "n1-highcpu-16"
DEFAULT_DISK_TYPE = "pd-ssd"
DEFAULT_DISK_GB = 100

#: The duration syntax, one home for the spec's durations (scheduling.timeout,
#: max_wait: the schema's pattern is built from it by scripts/gen_schema.py) and
#: ``logs --since``: a number with a unit, or (in the spec) seconds as a bare number.
DURATION_UNITS: Mapping[str, int] = {"s": 1, "m": 60, "h": 3600, "d": 86400}
DURATION_PATTERN = r"^\s*\d+(\.\d+)?\s*[" + "".join(DURATION_UNITS) + r"]?\s*$"
DURATION_EXAMPLES = "90s, 30m, 12h or 7d"
#: The longest duration the API can carry: a google.protobuf.Duration is "between
#: -315,576,000,000 and +315,576,000,000 inclusive" seconds ("approximately +-10,000
#: years", https://protobuf.dev/reference/protobuf/google.protobuf/#duration); longer
#: ones pass nothing but fail at submit when the job is converted to protobuf.
DURATION_MAX_SECONDS = 315_576_000_000
_DURATION = re.compile(DURATION_PATTERN)
#: A size (parse_size), compiled on first use (re's own cache): an ordinary spec has none.
_SIZE = r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?i?b?)\s*$"
_SIZE_FACTOR = {"": 1, "b": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12,
                "ki": 2**10, "mi": 2**20, "gi": 2**30, "ti": 2**40}


def duration_seconds(text: str, *, unit_required: bool = False) -> float | None:
    """The seconds of a duration written as text (``1.5h`` → 5400.0), None when it is not one.

    ``unit_required``: a bare number is not a duration (``logs --since``, where
    it would be read as seconds when a user may mean a time). The seconds may be
    past DURATION_MAX_SECONDS (even ``inf`` for hundreds of digits): the callers
    say so (``duration_too_long``).
    """
    if not _DURATION.match(text):
        return None
    text = text.strip()
    unit = text[-1] if text[-1] in DURATION_UNITS else ""
    if unit_required and not unit:
        return None
    return float(text[:len(text) - len(unit)]) * DURATION_UNITS.get(unit, 1)


def duration_too_long(seconds: float) -> str | None:
    """Why a duration of ``seconds`` cannot be sent (None when it can): the one wording."""
    if seconds <= DURATION_MAX_SECONDS:
        return None
    return (f"is longer than a protobuf Duration can carry (at most {DURATION_MAX_SECONDS:,} s, about 10,000 "
            "years: https://protobuf.dev/reference/protobuf/google.protobuf/#duration)")


def parse_duration(value: Any) -> int | None:
    """``90s`` / ``30m`` / ``12h`` / ``7d`` / a number of seconds → seconds (None if not one,
    and None past DURATION_MAX_SECONDS or not finite: validation reports those)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        seconds: float | None = value
    elif isinstance(value, str):
        seconds = duration_seconds(value)
    else:
        return None
    if seconds is None or not 0 <= seconds <= DURATION_MAX_SECONDS:  # also NaN and inf
        return None
    return int(seconds)


def parse_size(value: Any) -> float | None:
    """``1.3GB`` / ``500MiB`` / ``1e9`` → bytes (None if not a size)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if not isinstance(value, str):
        return None
    m = re.match(_SIZE, value, re.IGNORECASE)
    if not m:
        try:
            return float(value)
        except ValueError:
            return None
    unit = m.group(2).lower().rstrip("b")
    return float(m.group(1)) * _SIZE_FACTOR[unit]


@dataclass
class Accelerator:
    """GPUs/TPUs attached to every node of a pool."""

    type: str | None
    count: int | None
    #: machineSpec.gpuPartitionSize: the NVIDIA MIG partition size (``1g.10gb``), with count 1.
    partition_size: str | None = None


@dataclass
class NfsMount:
    """An NFS share mounted on every node of a pool at ``/mnt/nfs/<mount_point>`` (WorkerPoolSpec.nfsMounts)."""

    server: str | None
    path: str | None
    mount_point: str | None


@dataclass
class LustreMount:
    """A Lustre file system mounted at ``/mnt/lustre/<mount_point>`` (WorkerPoolSpec.lustreMounts)."""

    instance_ip: str | None
    volume_handle: str | None
    filesystem: str | None
    mount_point: str | None


@dataclass
class DnsPeering:
    """A DNS zone of another network the job resolves (PscInterfaceConfig.dnsPeeringConfigs)."""

    domain: str | None
    target_project: str | None
    target_network: str | None


@dataclass
class PscInterface:
    """Private Service Connect interface of the job (jobSpec.pscInterfaceConfig)."""

    network_attachment: str | None
    dns_peering: list[DnsPeering] = field(default_factory=list)


@dataclass
class Disk:
    """Boot disk of every node of a pool."""

    type: str = DEFAULT_DISK_TYPE
    size_gb: int = DEFAULT_DISK_GB


#: The spec's ``reservation.affinity`` → machineSpec.reservationAffinity.reservationAffinityType.
#: https://cloud.google.com/vertex-ai/docs/training/use-reservations
RESERVATION_AFFINITY = {"specific": "SPECIFIC_RESERVATION", "any": "ANY_RESERVATION", "none": "NO_RESERVATION"}
#: The key that names a reservation: "To target a SPECIFIC_RESERVATION by name, use
#: `compute.googleapis.com/reservation-name` as the key" (google/cloud/aiplatform/v1/reservation_affinity.proto).
RESERVATION_NAME_KEY = "compute.googleapis.com/reservation-name"
#: The labels ``submit`` puts on every job it creates (vxtrain.submission.names): the
#: idempotency key, and in a ``fallback:`` ladder the rung's number (0: the spec). A
#: spec's own label of either name would be overwritten, so validation refuses it.
#: Underscores, not hyphens: the keys appear bare in list filters (`labels.KEY="value"`),
#: where a hyphen is not an identifier character (AIP-160).
IDEMPOTENCY_LABEL = "vxtrain_idempotency_key"
RUNG_LABEL = "vxtrain_fallback_rung"
#: With ``recovery:``, each attempt's number (0: the first job; each recovery one more),
#: beside the key on every job of the submit, and ``VXTRAIN_ATTEMPT`` its env in every pool.
ATTEMPT_LABEL = "vxtrain_attempt"
ATTEMPT_ENV = "VXTRAIN_ATTEMPT"
#: The W3C trace context of submit's environment (OpenTelemetry's environment carrier:
#: https://opentelemetry.io/docs/specs/otel/context/env-carriers/), passed on in every
#: pool's env, and its trace id as a label (vxtrain.submission.trace).
TRACEPARENT_ENV = "TRACEPARENT"
TRACESTATE_ENV = "TRACESTATE"
TRACE_LABEL = "vxtrain_trace"


@dataclass
class Reservation:
    """Which Compute Engine reservation a pool's machines consume (machineSpec.reservationAffinity)."""

    #: ``specific``, ``any`` or ``none`` (RESERVATION_AFFINITY: the API's types).
    affinity: str | None
    #: ``projects/P/zones/Z/reservations/R``; with ``specific`` only.
    name: str | None = None
    #: The label key naming it, as ``extra:`` wrote it (None: the native key, compiled
    #: to RESERVATION_NAME_KEY).
    key: str | None = None


@dataclass
class PythonPackage:
    """A Python package run in a prebuilt executor image (instead of ``image``)."""

    executor_image: str | None
    package_uris: list[str]
    module: str | None
    #: A local folder built and uploaded at submit (vxtrain.packaging), instead of package_uris.
    source: str | None = None


@dataclass
class Build:
    """A custom image built from a local folder at submit (vxtrain.images), instead of ``image``."""

    base: str | None
    source: str | None
    requirements: str | None = None
    #: The image's Python as ``3.10``; None: read from the base tag's ``pyNNN``.
    python: str | None = None


@dataclass
class Pool:
    """One worker pool; ``defaults`` are already merged in (except Reduction Server)."""

    role: str
    replicas: int | None  # None: "auto" (Reduction Server) or not given
    machine_type: str | None
    accelerator: Accelerator | None = None
    image: str | None = None
    command: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    disk: Disk | None = None
    python_package: PythonPackage | None = None
    auto_replicas: bool = False
    #: machineSpec.tpuTopology of a TPU VM slice, e.g. ``2x4`` or ``2x2x1``.
    tpu_topology: str | None = None
    reservation: Reservation | None = None
    build: Build | None = None
    nfs_mounts: list[NfsMount] = field(default_factory=list)
    lustre_mounts: list[LustreMount] = field(default_factory=list)

    @property
    def index(self) -> int:
        """The workerPoolSpecs slot of this pool."""
        return POOL_INDEX[self.role]

    @property
    def gpu_count(self) -> int:
        """GPUs per node (0 without accelerators)."""
        return (self.accelerator.count or 0) if self.accelerator else 0


@dataclass
class Scheduling:
    """Scheduling options; durations in seconds."""

    timeout: int | None = None
    restart_job_on_worker_restart: bool | None = None
    strategy: str | None = None
    max_wait: int | None = None
    disable_retries: bool | None = None


@dataclass
class Recovery:
    """``recovery:``: new attempts of a job that lost its machines after it started
    (vxtrain.submission.decide)."""

    max_recoveries: int
    on_exit_codes: list[int] = field(default_factory=list)
    strategy: str = "same"  # same: the rung that ran again | next: on down the fallback ladder
    spot_to_standard_after: int | None = None

    def to_json(self) -> RecoveryJson:
        """plan's ``recovery`` object: the block as submit reads it."""
        return {"max_recoveries": self.max_recoveries, "on_exit_codes": list(self.on_exit_codes),
                "strategy": self.strategy, "spot_to_standard_after": self.spot_to_standard_after}


@dataclass
class LocalSpec:
    """How ``local-run`` / ``--target local`` runs a replica on this host."""

    command: list[str] = field(default_factory=list)
    workdir: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: Image URI → the source folder it is built from (``build:``): local runs run that
    #: folder in place (working directory, PYTHONPATH) instead of building the image.
    image_sources: dict[str, str] = field(default_factory=dict)


@dataclass
class StudyParameter:
    """One hyperparameter of a study."""

    name: str
    type: str | None
    min: float | None = None
    max: float | None = None
    values: list[Any] = field(default_factory=list)
    scale: str | None = None


@dataclass
class StudyMetric:
    """A metric a study optimizes."""

    id: str | None
    goal: str | None


@dataclass
class Study:
    """A hyperparameter study wrapped around the job."""

    metrics: list[StudyMetric]
    parameters: list[StudyParameter]
    max_trials: int | None = None
    parallel_trials: int | None = None
    max_failed_trials: int | None = None
    algorithm: str | None = None


@dataclass
class Job:
    """A whole job: metadata plus pools keyed by role."""

    display_name: str | None
    pools: dict[str, Pool]
    project: str | None = None
    region: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    service_account: str | None = None
    network: str | None = None
    base_output_dir: str | None = None
    tensorboard: str | None = None
    enable_web_access: bool | None = None
    scheduling: Scheduling | None = None
    local: LocalSpec | None = None
    study: Study | None = None
    #: ``extra:`` as written: any CustomJob field, in its REST JSON (validation checks it
    #: field by field against the protos; the compiler merges it over what it compiles).
    extra: JsonObject = field(default_factory=dict)
    staging_bucket: str | None = None
    #: Where images built from ``build:`` are pushed: ``HOST/PATH`` (--image-repository overrides).
    image_repository: str | None = None
    #: jobSpec.persistentResourceId: the ID of a PersistentResource in the job's project and region.
    persistent_resource: str | None = None
    #: jobSpec.pscInterfaceConfig, reservedIpRanges, enableDashboardAccess, experiment,
    #: experimentRun, protectedArtifactLocationId (the job fields of 2025-26).
    psc_interface: PscInterface | None = None
    reserved_ip_ranges: list[str] = field(default_factory=list)
    enable_dashboard_access: bool | None = None
    experiment: str | None = None
    experiment_run: str | None = None
    protected_artifact_location_id: str | None = None
    #: ``recovery:``: what submit --wait does when the job loses its machines after it started.
    recovery: Recovery | None = None
    #: ``notify:``: http(s) URLs that get one JSON object per event while submit follows the job.
    notify: list[str] = field(default_factory=list)
    #: ``notify:``'s hooks given by environment variables: (the URL's, the signing secret's or None).
    notify_env: list[tuple[str, str | None]] = field(default_factory=list)

    @property
    def has_hooks(self) -> bool:
        """Whether ``notify:`` names any hook, by URL or by environment variable."""
        return bool(self.notify or self.notify_env)

    def pool(self, role: str) -> Pool | None:
        """The pool with ``role``, or None."""
        return self.pools.get(role)

    def ordered_pools(self) -> list[Pool]:
        """Present pools in workerPoolSpecs order (ROLES is in that order)."""
        return [self.pools[role] for role in ROLES if role in self.pools]

    @property
    def total_replicas(self) -> int:
        """Replicas of every pool (auto-sized pools count as 0 until planned)."""
        return sum(p.replicas or 0 for p in self.pools.values())


# --- lenient construction --------------------------------------------------
# The input is loaded YAML/JSON, so mappings are plain dicts: isinstance(x, dict)
# is several times cheaper than an ABC check, on the bulk-validation hot path.

def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _int(v: Any) -> int | None:
    # 8.0 is the integer 8, as the schema (JSON Schema's integer) and Vertex AI's proto3
    # JSON parsing of an int64 read it (docs/decisions.md, issue 27): never dropped.
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _strlist(v: Any) -> list[str]:
    if isinstance(v, str):
        return [v]
    if isinstance(v, list):
        return [str(x) for x in v if isinstance(x, (str, int, float)) and not isinstance(x, bool)]
    return []


def _strmap(v: Any) -> dict[str, str]:
    if not isinstance(v, dict):
        return {}
    return {str(k): _scalar_text(x) for k, x in v.items() if not isinstance(x, (dict, list))}


def _scalar_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return "" if v is None else str(v)


def _mapping(v: object) -> Mapping[str, object]:
    """``v`` itself when it is a mapping of the user's YAML (not a copy: for reading only), else ``{}``."""
    return v if isinstance(v, dict) else {}


#: The pool keys whose mappings merge with ``defaults`` name by name (the others replace it whole).
MERGED_BY_NAME: frozenset[str] = frozenset({"env"})
#: The pool keys that say what a container runs; a pool giving one takes none of the others from ``defaults``.
CODE_KEYS: tuple[str, ...] = ("image", "python_package", "build")
#: The one pool that never takes ``defaults`` (a known bug class in peer tools).
NO_DEFAULTS_ROLE = "reduction_server"


def merge_defaults(defaults: Mapping[str, Any], pool: Mapping[str, Any]) -> JsonObject:
    """The pool's YAML mapping over ``defaults``' (a new one): pool keys override ``defaults``;
    ``env`` maps merge key by key."""
    merged = dict(defaults)
    for key, value in pool.items():
        if key in MERGED_BY_NAME and isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    if any(key in pool for key in CODE_KEYS):  # the pool's own code replaces that of defaults
        for key in CODE_KEYS:
            if key not in pool:
                merged.pop(key, None)
    return merged


#: Native pool keys whose machineSpec field ``extra:`` may set instead: the field, and
#: where each part of the native value sits in it. Compile merges ``extra`` last, so the
#: extra's value is the one sent, and the one the rules check (build lifts it).
EXTRA_MACHINE_FIELDS: dict[str, tuple[str, dict[str, tuple[str | int, ...]]]] = {
    "tpu_topology": ("tpuTopology", {}),
    "reservation": ("reservationAffinity", {"affinity": ("reservationAffinityType",),
                                            "name": ("values", 0), "key": ("key",)}),
}
#: Native top-level keys ``extra:`` may set instead: key → its path in ``extra``.
EXTRA_JOB_FIELDS: dict[str, tuple[str, ...]] = {"persistent_resource": ("jobSpec", "persistentResourceId")}


def extra_machine_spec(data: Mapping[str, Any], role: str) -> Mapping[str, Any]:
    """``extra.jobSpec.workerPoolSpecs[POOL].machineSpec`` of ``role``'s pool ({} when not written)."""
    pools = _mapping(_mapping(data.get("extra")).get("jobSpec")).get("workerPoolSpecs")
    index = POOL_INDEX.get(role)
    if not isinstance(pools, list) or index is None or index >= len(pools) or not isinstance(pools[index], dict):
        return {}
    return _mapping(pools[index].get("machineSpec"))


def key_path_of(data: Mapping[str, Any], role: str, key: str, *tail: str | int) -> tuple[str | int, ...]:
    """:func:`written_at`, or ``("defaults", key, *tail)`` when neither the pool nor
    ``defaults`` writes it: where a message about a value the pool got points."""
    return written_at(data, role, key, *tail) or ("defaults", key, *tail)


def _extra_path(data: Mapping[str, Any], role: str, key: str, tail: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    """Where ``extra`` sets pool ``role``'s ``key`` (and ``tail``), or None."""
    if key not in EXTRA_MACHINE_FIELDS or EXTRA_MACHINE_FIELDS[key][0] not in extra_machine_spec(data, role):
        return None
    field_name, parts = EXTRA_MACHINE_FIELDS[key]
    inner = parts.get(str(tail[0]), tail[:1]) if tail else ()
    return ("extra", "jobSpec", "workerPoolSpecs", POOL_INDEX[role], "machineSpec", field_name, *inner)


def job_written_at(data: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    """Where the top-level ``key`` was written: in ``extra`` (which wins), else at the top, else None."""
    at = EXTRA_JOB_FIELDS.get(key)
    if at is not None and at[-1] in _mapping(_mapping(data.get("extra")).get(at[0])):
        return ("extra", *at)
    return (key,) if key in data else None


def written_at(data: Mapping[str, Any], role: str, key: str, *tail: str | int) -> tuple[str | int, ...] | None:
    """Where pool ``role``'s ``key`` (and ``tail`` inside it) was written in the native ``data``.

    ``(role, key, *tail)`` when the pool writes it, ``("defaults", key, *tail)``
    when the pool inherits it (never for Reduction Server), None when neither
    does. The rules of :func:`merge_defaults`: a pool key hides the whole
    ``defaults`` value, except in ``env``, where each variable's name decides.
    A key ``extra:`` sets in the pool's machineSpec (EXTRA_MACHINE_FIELDS) is
    where ``extra`` sets it: that value is the one compiled.
    """
    lifted = _extra_path(data, role, key, tail)
    if lifted is not None:
        return lifted
    by_name = key in MERGED_BY_NAME and bool(tail)
    for where in (role, "defaults"):
        if where == "defaults" and role == NO_DEFAULTS_ROLE:
            break
        raw = data.get(where)
        # `type(...) is dict` first: the rules call this thousands of times per batch,
        # on loaded (plain dict) data, and an ABC isinstance check costs several times more.
        if not (type(raw) is dict or isinstance(raw, Mapping)) or key not in raw:
            continue
        if not by_name or ((type(raw[key]) is dict or isinstance(raw[key], Mapping)) and tail[0] in raw[key]):
            return (where, key, *tail)
    return None


def build_pool(role: str, raw: Mapping[str, Any]) -> Pool:
    """A Pool from its (already defaults-merged) native mapping."""
    replicas_raw = raw.get("replicas")
    auto = replicas_raw == "auto"
    replicas = _int(replicas_raw)
    if role == "chief" and replicas_raw is None:
        replicas = 1
    elif role != "reduction_server" and replicas_raw is None:
        replicas = 1
    acc_raw = raw.get("accelerator")
    accelerator = None
    if isinstance(acc_raw, dict):
        accelerator = Accelerator(_str(acc_raw.get("type")), _int(acc_raw.get("count", 1)),
                                  _str(acc_raw.get("partition_size")))
    disk_raw = raw.get("disk")
    disk = None
    if isinstance(disk_raw, dict):
        disk = Disk(_str(disk_raw.get("type")) or DEFAULT_DISK_TYPE,
                    _int(disk_raw.get("size_gb")) or DEFAULT_DISK_GB)
    pkg_raw = raw.get("python_package")
    pkg = None
    if isinstance(pkg_raw, dict):
        pkg = PythonPackage(_str(pkg_raw.get("executor_image")), _strlist(pkg_raw.get("package_uris")),
                            _str(pkg_raw.get("module")), _str(pkg_raw.get("source")))
    res_raw = raw.get("reservation")
    reservation = None
    if isinstance(res_raw, dict):
        reservation = Reservation(_str(res_raw.get("affinity")), _str(res_raw.get("name")))
    build_raw = raw.get("build")
    build = None
    if isinstance(build_raw, dict):
        build = Build(_str(build_raw.get("base")), _str(build_raw.get("source")),
                      _str(build_raw.get("requirements")), _str(build_raw.get("python")))
    machine = _str(raw.get("machine_type"))
    if role == "reduction_server" and "machine_type" not in raw:
        machine = DEFAULT_RS_MACHINE
    return Pool(
        role=role, replicas=replicas, machine_type=machine, accelerator=accelerator,
        image=_str(raw.get("image")), command=_strlist(raw.get("command")),
        args=_strlist(raw.get("args")), env=_strmap(raw.get("env")), disk=disk,
        python_package=pkg, auto_replicas=auto, tpu_topology=_str(raw.get("tpu_topology")),
        reservation=reservation, build=build,
        nfs_mounts=[NfsMount(_str(m.get("server")), _str(m.get("path")), _str(m.get("mount_point")))
                    for m in _dicts(raw.get("nfs_mounts"))],
        lustre_mounts=[LustreMount(_str(m.get("instance_ip")), _str(m.get("volume_handle")),
                                   _str(m.get("filesystem")), _str(m.get("mount_point")))
                       for m in _dicts(raw.get("lustre_mounts"))],
    )


def _dicts(v: object) -> list[Mapping[str, object]]:
    """The mappings of a list (a lenient read of a list of objects)."""
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def _build_psc(raw: Any) -> PscInterface | None:
    if not isinstance(raw, dict):
        return None
    peering = [DnsPeering(_str(d.get("domain")), _str(d.get("target_project")), _str(d.get("target_network")))
               for d in _dicts(raw.get("dns_peering"))]
    return PscInterface(_str(raw.get("network_attachment")), peering)


def _build_study(raw: Mapping[str, Any]) -> Study:
    metric_raw = raw.get("metric", raw.get("metrics"))
    metric_list = metric_raw if isinstance(metric_raw, list) else [metric_raw]
    metrics = [StudyMetric(_str(m.get("id")), _str(m.get("goal")))
               for m in metric_list if isinstance(m, dict)]
    params = []
    for name, p in _mapping(raw.get("parameters")).items():
        if isinstance(p, dict):
            values = p.get("values")
            params.append(StudyParameter(
                str(name), _str(p.get("type")), _num(p.get("min")), _num(p.get("max")),
                list(values) if isinstance(values, list) else [], _str(p.get("scale"))))
    return Study(metrics, params, _int(raw.get("max_trials")), _int(raw.get("parallel_trials")),
                 _int(raw.get("max_failed_trials")), _str(raw.get("algorithm")))


def build(data: Mapping[str, Any]) -> Job:
    """The Job model of a native-shaped mapping; wrong-typed values become None."""
    # Only read here, never kept or changed (merge_defaults and build_pool make new
    # objects): no copies of ``defaults`` or the pools, which every spec would pay for.
    defaults = _mapping(data.get("defaults"))
    # ``extra:`` is rare: without it there is no machineSpec to lift (see _lift_extra).
    has_extra = isinstance(data.get("extra"), dict)
    pools: dict[str, Pool] = {}
    for role in ROLES:
        raw = data.get(role)
        if raw is None:
            continue
        raw = _mapping(raw)
        merged = raw if role == NO_DEFAULTS_ROLE else merge_defaults(defaults, raw)
        pool = build_pool(role, merged)
        pools[role] = _lift_extra(pool, extra_machine_spec(data, role)) if has_extra else pool
    sched_raw = data.get("scheduling")
    scheduling = None
    if isinstance(sched_raw, dict):
        scheduling = Scheduling(
            parse_duration(sched_raw.get("timeout")),
            _bool(sched_raw.get("restart_job_on_worker_restart")),
            _str(sched_raw.get("strategy")), parse_duration(sched_raw.get("max_wait")),
            _bool(sched_raw.get("disable_retries")))
    local_raw = data.get("local")
    local = None
    if isinstance(local_raw, dict):
        local = LocalSpec(_strlist(local_raw.get("command")), _str(local_raw.get("workdir")),
                          _strmap(local_raw.get("env")))
    study_raw = data.get("study")
    return Job(
        display_name=_str(data.get("display_name")), pools=pools,
        project=_str(data.get("project")), region=_str(data.get("region")),
        labels=_strmap(data.get("labels")), service_account=_str(data.get("service_account")),
        network=_str(data.get("network")), base_output_dir=_str(data.get("base_output_dir")),
        tensorboard=_str(data.get("tensorboard")),
        enable_web_access=_bool(data.get("enable_web_access")), scheduling=scheduling,
        local=local, study=_build_study(study_raw) if isinstance(study_raw, dict) else None,
        extra=dict(_mapping(data.get("extra"))), staging_bucket=_str(data.get("staging_bucket")),
        image_repository=_str(data.get("image_repository")),
        persistent_resource=_str(_lifted_job_value(data, "persistent_resource")),
        psc_interface=_build_psc(data.get("psc_interface")),
        reserved_ip_ranges=_strlist(data.get("reserved_ip_ranges")),
        enable_dashboard_access=_bool(data.get("enable_dashboard_access")),
        experiment=_str(data.get("experiment")), experiment_run=_str(data.get("experiment_run")),
        protected_artifact_location_id=_str(data.get("protected_artifact_location_id")),
        recovery=_build_recovery(data.get("recovery")), notify=_strlist(data.get("notify")),
        notify_env=_notify_env(data.get("notify")),
    )


def _notify_env(raw: Any) -> list[tuple[str, str | None]]:
    """``notify:``'s ``{url_env, secret_env}`` entries (the schema checks their names)."""
    if not isinstance(raw, list):
        return []
    return [(str(e["url_env"]), str(e["secret_env"]) if e.get("secret_env") else None)
            for e in raw if isinstance(e, Mapping) and isinstance(e.get("url_env"), str)]


def _build_recovery(raw: Any) -> Recovery | None:
    """The ``recovery:`` block (None when absent, not a mapping, or without its required
    ``max_recoveries``: the schema says so)."""
    if not isinstance(raw, dict):
        return None
    codes = raw.get("on_exit_codes")
    max_recoveries = _int(raw.get("max_recoveries"))
    if max_recoveries is None:
        return None
    return Recovery(max_recoveries,
                    [c for c in map(_int, codes) if c is not None] if isinstance(codes, list) else [],
                    _str(raw.get("strategy")) or "same", _int(raw.get("spot_to_standard_after")))


def _lifted_job_value(data: Mapping[str, Any], key: str) -> Any:
    """The top-level ``key``'s value as compiled: ``extra``'s when it sets the field."""
    at = job_written_at(data, key)
    if at is None or at[0] != "extra":
        return data.get(key)
    return _mapping(_mapping(data.get("extra")).get(at[1])).get(at[2])


def _lift_extra(pool: Pool, machine_spec: Mapping[str, Any]) -> Pool:
    """The pool as compiled: the machineSpec fields ``extra`` sets (EXTRA_MACHINE_FIELDS)
    replace the native ones, so the rules check what is sent."""
    if "tpuTopology" in machine_spec:
        pool.tpu_topology = _str(machine_spec["tpuTopology"])
    affinity = machine_spec.get("reservationAffinity")
    if isinstance(affinity, dict):
        by_api = {api: native for native, api in RESERVATION_AFFINITY.items()}
        kind = affinity.get("reservationAffinityType")
        values = affinity.get("values")
        pool.reservation = Reservation(by_api.get(str(kind), _str(kind)),
                                       _str(values[0]) if isinstance(values, list) and values else None,
                                       _str(affinity.get("key")))
    return pool
