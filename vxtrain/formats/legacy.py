"""AI Platform Training ``trainingInput`` documents → the native shape.

Accepted: the TrainingInput keys at the top level, under ``trainingInput:``
(the file ``gcloud ai-platform jobs submit training --config`` took), or a whole
Job (``{jobId, labels, trainingInput}``). Field reference:
https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#TrainingInput

How each key maps:

- ``scaleTier: CUSTOM`` maps exactly: ``masterType`` → chief,
  ``workerType``/``workerCount`` → workers, ``parameterServerType``/
  ``parameterServerCount`` → parameter_servers, ``evaluatorType``/
  ``evaluatorCount`` → evaluators; ``*Config.acceleratorConfig`` → accelerator,
  ``*Config.diskConfig`` → disk.
- Predefined tiers (BASIC, STANDARD_1, PREMIUM_1, BASIC_GPU) map through the
  catalog's scale tiers (``catalog/legacy_scale_tiers.csv``) and warn
  ``legacy-scale-tier`` (approximate). BASIC_TPU is refused: it ran on a TPU
  *node* beside the master, which Vertex AI custom training no longer offers
  in that form. A missing ``scaleTier`` is BASIC, AI Platform's default.
- Legacy GPU machine names that meant K80s (``standard_gpu``,
  ``complex_model_m_gpu``, ``complex_model_l_gpu``, and so ``BASIC_GPU``) map to
  GPUs Vertex AI training offers, with the same count, and warn
  ``legacy-gpu-replaced``: Vertex AI refuses K80 ("400 Accelerator
  "NVIDIA_TESLA_K80" is not supported for machine type ..."), so a faithful
  K80 mapping could never run.
- Counts or machine types without ``scaleTier: CUSTOM`` are errors
  (docs/validation.md).
- ``*Config.imageUri`` → image; worker, parameter server and evaluator configs
  inherit ``masterConfig.imageUri`` as AI Platform did. ``containerCommand`` →
  command, ``containerArgs`` → args (else the job's ``args``).
- ``packageUris`` + ``pythonModule`` (no image) → ``python_package`` with a
  Vertex AI prebuilt TensorFlow executor image derived from ``runtimeVersion``
  (see :func:`executor_image`; warning ``legacy-executor-image``).
  gcloud's ``--package-path``/``--module-name`` (``convert``'s ``package``
  argument, :mod:`vxtrain.formats.package_flags`) stand for these two keys and
  give ``python_package.source``/``module`` instead.
  ``pythonVersion`` is not used: each prebuilt image has its own Python.
- ``region``, ``serviceAccount``, ``network``, ``enableWebAccess`` map by name;
  ``jobDir`` → base_output_dir (Vertex sets AIP_MODEL_DIR from it; it does not
  pass ``--job-dir`` to the trainer as AI Platform did);
  ``scheduling.maxRunningTime`` → scheduling.timeout; ``encryptionConfig`` →
  ``extra.encryptionSpec``; ``hyperparameters`` → ``study``.
- ``useChiefInTfConfig`` is accepted and ignored: Vertex AI always names pool 0
  ``chief`` in TF_CONFIG (the flag existed to opt into that on AI Platform).
- ``scheduling.maxWaitTime`` / ``priority``, ``hyperparameters.enableTrialEarlyStopping``
  / ``resumePreviousJobId`` have no Vertex AI custom-job equivalent: dropped
  with a warning ``legacy-dropped``.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from vxtrain import catalog
from vxtrain.catalog import LegacyMachine, TierPool
from vxtrain.diagnostics import Diagnostic
from vxtrain.loading.document import Document, KeyPath, NativeSpec, format_path
from vxtrain.formats import package_flags
from vxtrain.formats.common import Conversion, as_int, describe, int_or_same, proto_duration
from vxtrain.formats.package_flags import PackageFlags

SCALE_TIER_SOURCE = "https://cloud.google.com/ai-platform/training/docs/machine-types#scale_tiers"
LEGACY_MACHINE_SOURCE = "https://cloud.google.com/ai-platform/training/docs/machine-types#legacy-machine-types"

# The legacy machine names (standard, complex_model_m_gpu, …) and the predefined scale
# tiers (BASIC, STANDARD_1, PREMIUM_1, BASIC_GPU) are catalog data, each row with its
# source: vxtrain/catalog/legacy_machines.csv and legacy_scale_tiers.csv
# (catalog.legacy_machine, catalog.scale_tier). Why K80 names get T4s (8 × K80: V100s)
# and complex_model_s an n1-standard-8: that file's header and docs/decisions.md.
UNSUPPORTED_TIERS: dict[str, str] = {
    "BASIC_TPU": "it ran the master beside a Cloud TPU v2 node, which this mapping does not cover; "
                 "use scaleTier: CUSTOM, or write a native spec for a Vertex AI TPU VM machine type",
}

#: Legacy role stems: chief ← master, workers ← worker, ...
ROLE_STEMS: dict[str, str] = {"chief": "master", "workers": "worker",
                              "parameter_servers": "parameterServer", "evaluators": "evaluator"}

TRAINING_INPUT_FIELDS: tuple[str, ...] = (
    "scaleTier", "masterType", "masterConfig", "workerType", "workerConfig", "parameterServerType",
    "parameterServerConfig", "evaluatorType", "evaluatorConfig", "workerCount", "parameterServerCount",
    "evaluatorCount", "packageUris", "pythonModule", "args", "hyperparameters", "region", "jobDir",
    "runtimeVersion", "pythonVersion", "encryptionConfig", "scheduling", "network", "serviceAccount",
    "useChiefInTfConfig", "enableWebAccess",
)
JOB_FIELDS: tuple[str, ...] = ("jobId", "labels", "trainingInput", "etag")
JOB_OUTPUT_ONLY: tuple[str, ...] = ("createTime", "startTime", "endTime", "state", "errorMessage", "trainingOutput")
REPLICA_CONFIG_FIELDS: tuple[str, ...] = ("acceleratorConfig", "imageUri", "tpuTfVersion", "containerCommand",
                                          "containerArgs", "diskConfig")
ACCELERATOR_FIELDS: tuple[str, ...] = ("count", "type")
DISK_FIELDS: tuple[str, ...] = ("bootDiskType", "bootDiskSizeGb")
SCHEDULING_FIELDS: tuple[str, ...] = ("maxRunningTime", "maxWaitTime", "priority")
ENCRYPTION_FIELDS: tuple[str, ...] = ("kmsKeyName",)
HYPERPARAMETER_FIELDS: tuple[str, ...] = (
    "goal", "params", "maxTrials", "maxParallelTrials", "maxFailedTrials", "hyperparameterMetricTag",
    "resumePreviousJobId", "enableTrialEarlyStopping", "algorithm",
)
PARAMETER_FIELDS: tuple[str, ...] = ("parameterName", "type", "minValue", "maxValue", "categoricalValues",
                                     "discreteValues", "scaleType")
#: ParameterSpec.scaleType → native scale; NONE (no scaling) means no ``scale`` key.
SCALE_TYPES: dict[str, str | None] = {"NONE": None, "UNIT_LINEAR_SCALE": "linear", "UNIT_LOG_SCALE": "log",
                                      "UNIT_REVERSE_LOG_SCALE": "reverse_log"}
#: HyperparameterSpec defaults (https://cloud.google.com/ai-platform/training/docs/reference/rest/v1/projects.jobs#HyperparameterSpec):
#: goal "Defaults to MAXIMIZE"; maxTrials and maxParallelTrials "Defaults to one".
#: Vertex AI requires maxTrialCount and parallelTrialCount, so the defaults are written out.
DEFAULT_GOAL = "MAXIMIZE"
STUDY_COUNTS: tuple[tuple[str, str, int | None], ...] = (
    ("maxTrials", "max_trials", 1), ("maxParallelTrials", "parallel_trials", 1),
    ("maxFailedTrials", "max_failed_trials", None))
ALGORITHMS: dict[str, str] = {"ALGORITHM_UNSPECIFIED": "default", "GRID_SEARCH": "grid", "RANDOM_SEARCH": "random"}

#: AI Platform runtime versions (TensorFlow versions) → Vertex AI's prebuilt TensorFlow
#: training images (catalog.prebuilt_image: ``tf-cpu.2-8:latest``-style names; versions
#: past their end of availability are refused by Vertex AI, which the warning says).
_PREBUILT_FRAMEWORK = "tf"
_RUNTIME = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


def executor_image(runtime_version: Any, region: str | None, gpu: bool) -> str | None:
    """The prebuilt TensorFlow training image for an AI Platform runtime version (None if malformed)."""
    m = _RUNTIME.match(str(runtime_version)) if isinstance(runtime_version, (str, float)) else None
    if not m:
        return None
    return catalog.prebuilt_image(_PREBUILT_FRAMEWORK, gpu, m.group(1), m.group(2), region)


def convert(document: Document, *, display_name: str | None = None,
            package: PackageFlags | None = None) -> tuple[NativeSpec, list[Diagnostic]]:
    """An AI Platform Training document in the native shape, with its origin map.

    ``package``: gcloud's ``--package-path``/``--module-name``, which stand for the
    TrainingInput's ``packageUris``/``pythonModule``: Python-package pools get
    ``python_package.source``/``module`` from them.
    """
    conv = Conversion(document)
    root = document.data
    ti, prefix = _unwrap(conv, root)
    _job_fields(conv, root, display_name)
    if ti is not None:
        _Legacy(conv, ti, prefix, package).run()
    return conv.result("legacy")


def _unwrap(conv: Conversion, root: Mapping[str, Any]) -> tuple[Mapping[str, Any] | None, KeyPath]:
    if "trainingInput" not in root:
        return {k: v for k, v in root.items() if k not in ("jobId", "labels")}, ()
    conv.check_keys({k: v for k, v in root.items() if k not in JOB_OUTPUT_ONLY}, JOB_FIELDS, ())
    ignored = [k for k in root if k in JOB_OUTPUT_ONLY]
    if ignored:
        conv.warning("output-only-ignored", "ignored fields set by the server, not by a job config: "
                     + ", ".join(ignored), (ignored[0],))
    return conv.mapping(root["trainingInput"], ("trainingInput",), "trainingInput"), ("trainingInput",)


def _job_fields(conv: Conversion, root: Mapping[str, Any], display_name: str | None) -> None:
    if "jobId" in root:
        conv.put(("display_name",), root["jobId"], ("jobId",))
    elif display_name:
        conv.put(("display_name",), display_name, ())
    if "labels" in root:
        conv.put(("labels",), root["labels"], ("labels",))


class _Legacy:
    """The conversion of one TrainingInput mapping (state shared by the small steps)."""

    def __init__(self, conv: Conversion, ti: Mapping[str, Any], prefix: KeyPath,
                 package: PackageFlags | None = None) -> None:
        self.conv = conv
        self.ti = ti
        self.prefix = prefix
        self.package = package
        self.image_warned = False
        if package is not None:
            # The flags stand for these keys: diagnostics about their values keep the keys'
            # paths and point at the flags, as --region's do (api._apply_overrides).
            positions = conv.document.positions
            positions[self.src("packageUris")] = package_flags.PATH_POSITION
            positions[self.src("pythonModule")] = package_flags.MODULE_POSITION

    def src(self, *keys: str | int) -> KeyPath:
        """Source key path of keys inside the TrainingInput."""
        return self.prefix + keys

    def config(self, role: str) -> Mapping[str, Any]:
        """The ``*Config`` mapping of a role (empty when absent or malformed)."""
        key = ROLE_STEMS[role] + "Config"
        raw = self.ti.get(key)
        return raw if isinstance(raw, Mapping) else {}

    def run(self) -> None:
        """Convert every part of the TrainingInput."""
        self.conv.check_keys(self.ti, TRAINING_INPUT_FIELDS, self.prefix)
        self._check_configs()
        # Until a pool says better, a "missing-chief" error points at the tier that gave no chief.
        self.conv.link(("chief",), self.src("scaleTier") if "scaleTier" in self.ti else self.prefix)
        tier = self._tier()
        if tier == "CUSTOM":
            self._custom_pools()
        elif tier is not None:
            self._tier_pools(tier)
        for role in ROLE_STEMS:
            if role in self.conv.data:
                self._task(role)
        self._job_settings()
        self._scheduling()
        if "hyperparameters" in self.ti:
            _Study(self.conv, self.ti["hyperparameters"], self.src("hyperparameters")).run()

    # --- pools ---------------------------------------------------------------------

    def _check_configs(self) -> None:
        for role, stem in ROLE_STEMS.items():
            key = stem + "Config"
            raw = self.conv.mapping(self.ti.get(key), self.src(key), key)
            if raw is None:
                continue
            self.conv.check_keys(raw, REPLICA_CONFIG_FIELDS, self.src(key))
            if "tpuTfVersion" in raw:
                self.conv.error("legacy-tpu-unsupported", "tpuTfVersion configures a Cloud TPU node, which this "
                                "mapping does not cover; use a native spec with a Vertex AI TPU VM machine type",
                                self.src(key, "tpuTfVersion"))

    def _tier(self) -> str | None:
        raw = self.ti.get("scaleTier", "BASIC")  # AI Platform's default tier
        tier = raw.upper() if isinstance(raw, str) else ""
        if tier == "CUSTOM" or catalog.scale_tier(tier) is not None:
            return tier
        if tier in UNSUPPORTED_TIERS:
            self.conv.error("legacy-tpu-unsupported", f"scaleTier {raw} is not supported: {UNSUPPORTED_TIERS[tier]}",
                            self.src("scaleTier"))
            return None
        accepted = ", ".join(["CUSTOM", *catalog.scale_tiers()])
        self.conv.error("bad-value", f"scaleTier {raw!r} is not a scale tier; expected one of {accepted}",
                        self.src("scaleTier"))
        return None

    def _custom_pools(self) -> None:
        if "masterType" not in self.ti:
            self.conv.error("missing-key", "scaleTier CUSTOM needs masterType (the chief's machine type), "
                            "e.g. masterType: n1-standard-8", self.src("scaleTier"))
        else:
            self.conv.link(("chief",), self.src("masterType"))
            self._machine("chief", self.ti["masterType"], self.src("masterType"))
        for role, stem in ROLE_STEMS.items():
            if role != "chief":
                self._custom_pool(role, stem)

    def _custom_pool(self, role: str, stem: str) -> None:
        count_key, type_key = stem + "Count", stem + "Type"
        if count_key not in self.ti:
            if type_key in self.ti:
                self.conv.warning("legacy-unused", f"{type_key} is set but {count_key} is not: no {role} pool "
                                  f"(set {count_key} to add one)", self.src(type_key))
            return
        count = as_int(self.ti[count_key])
        if count is None or count < 0:
            self.conv.error("wrong-type", f"{count_key} must be a whole number, got {self.ti[count_key]!r}",
                            self.src(count_key))
            return
        if count == 0:
            return
        self.conv.link((role,), self.src(count_key))
        self.conv.put((role, "replicas"), count, self.src(count_key))
        if type_key not in self.ti:
            self.conv.error("missing-key", f"{count_key} is {count} but {type_key} is not set; "
                            f"add {type_key}: <machine type>", self.src(count_key))
            return
        self._machine(role, self.ti[type_key], self.src(type_key))

    def _machine(self, role: str, machine: Any, src: KeyPath) -> None:
        legacy = catalog.legacy_machine(machine) if isinstance(machine, str) else None
        if legacy is None:
            self.conv.put((role, "machine_type"), machine, src)
        else:
            self._put_machine(role, legacy, src)
            self.conv.warning("legacy-machine-type", f"legacy machine type {machine!r} mapped to "
                              f"{_describe_machine(legacy)} (approximate; {LEGACY_MACHINE_SOURCE})", src)
            self._warn_replaced(machine, legacy, src)
        accel = self.config(role).get("acceleratorConfig")
        if accel is not None:
            self._accelerator(role, accel, self.src(ROLE_STEMS[role] + "Config", "acceleratorConfig"))

    def _put_machine(self, role: str, machine: LegacyMachine, src: KeyPath) -> None:
        self.conv.put((role, "machine_type"), machine.machine_type, src)
        if machine.accelerator_type:
            self.conv.link((role, "accelerator"), src)
            self.conv.put((role, "accelerator", "type"), machine.accelerator_type, src)
            self.conv.put((role, "accelerator", "count"), machine.accelerator_count, src)

    def _accelerator(self, role: str, value: Any, src: KeyPath) -> None:
        raw = self.conv.mapping(value, src, "acceleratorConfig")
        if raw is None:
            return
        self.conv.check_keys(raw, ACCELERATOR_FIELDS, src)
        self.conv.data[role].pop("accelerator", None)  # an explicit config beats a legacy machine's GPUs
        self.conv.link((role, "accelerator"), src)
        if "type" in raw:
            self.conv.put((role, "accelerator", "type"), raw["type"], src + ("type",))
        if "count" in raw:
            self.conv.put((role, "accelerator", "count"), int_or_same(raw["count"]), src + ("count",))

    def _tier_pools(self, tier: str) -> None:
        custom_only = [k for stem in ROLE_STEMS.values() for k in (stem + "Type", stem + "Count") if k in self.ti]
        custom_only += [f"{stem}Config" for role, stem in ROLE_STEMS.items()
                        if "acceleratorConfig" in self.config(role)]
        for key in custom_only:
            at = self.src(key, "acceleratorConfig") if key.endswith("Config") else self.src(key)
            self.conv.error("legacy-needs-custom", f"{format_path(at)} needs scaleTier: CUSTOM (scaleTier is {tier}); "
                            "set scaleTier: CUSTOM with masterType, or remove it", at)
        tier_src = self.src("scaleTier") if "scaleTier" in self.ti else self.prefix
        pools = [(pool, _tier_machine(pool)) for pool in catalog.scale_tier(tier) or ()]
        for pool, machine in pools:
            self.conv.link((pool.role,), tier_src)
            if pool.role != "chief":
                self.conv.put((pool.role, "replicas"), pool.replicas, tier_src)
            self._put_machine(pool.role, machine, tier_src)
        shape = "; ".join(f"{pool.role} {pool.replicas} × {_describe_machine(machine)}" for pool, machine in pools)
        self.conv.warning("legacy-scale-tier", f"scale tier {tier} has no Vertex AI equivalent; mapped "
                          f"approximately to {shape} ({SCALE_TIER_SOURCE}); use scaleTier: CUSTOM to choose "
                          "machines yourself", tier_src)
        for _, machine in pools:
            self._warn_replaced(f"scale tier {tier}", machine, tier_src)

    def _warn_replaced(self, what: str, machine: LegacyMachine, src: KeyPath) -> None:
        """Say which GPUs a legacy name meant when vxtrain maps it to others (K80 → T4/V100)."""
        if machine.replaces is None:
            return
        name = what if what.startswith("scale tier") else repr(what)
        self.conv.warning("legacy-gpu-replaced", f"{name} meant {machine.replaces}, which Vertex AI training "
                          f"does not offer (https://cloud.google.com/compute/docs/eol/k80-eol); vxtrain uses "
                          f"{machine.accelerator_count} × {machine.accelerator_type} on {machine.machine_type} "
                          "instead: check the trainer and the price, or choose GPUs with scaleTier: CUSTOM and "
                          "masterConfig.acceleratorConfig", src)

    # --- what each replica runs --------------------------------------------------------

    def _task(self, role: str) -> None:
        stem = ROLE_STEMS[role]
        config = self.config(role)
        cfg_src = self.src(stem + "Config")
        image_src = cfg_src + ("imageUri",)
        image = config.get("imageUri")
        if image is None and role != "chief":
            image, image_src = self.config("chief").get("imageUri"), self.src("masterConfig", "imageUri")
        if image is not None:
            self.conv.put((role, "image"), image, image_src)
            self._warn_package_ignored(role)
            if "containerCommand" in config:
                self.conv.put((role, "command"), config["containerCommand"], cfg_src + ("containerCommand",))
        else:
            self._python_package(role)
        if "containerArgs" in config:
            self.conv.put((role, "args"), config["containerArgs"], cfg_src + ("containerArgs",))
        elif "args" in self.ti:
            self.conv.put((role, "args"), self.ti["args"], self.src("args"))
        if "diskConfig" in config:
            self._disk(role, config["diskConfig"], cfg_src + ("diskConfig",))

    def _warn_package_ignored(self, role: str) -> None:
        # A custom container runs its own code, so the converted pool has no place for
        # the package fields: say so rather than drop them silently.
        given = [k for k in ("packageUris", "pythonModule") if k in self.ti or self.package is not None]
        if role == "chief" and given:
            self.conv.warning("legacy-package-ignored",
                              f"{' and '.join(given)} (here or from --package-path/--module-name) are not used: "
                              "masterConfig.imageUri runs a custom container; drop them, or drop imageUri to "
                              "run the package in a prebuilt image (runtimeVersion)", self.src(given[-1]))

    def _python_package(self, role: str) -> None:
        if self.package is None and not ("packageUris" in self.ti and "pythonModule" in self.ti):
            if role == "chief":
                self.conv.error("missing-key", "nothing to run: set masterConfig.imageUri (a custom container) "
                                "or packageUris and pythonModule (a Python package)", self.prefix)
            return
        pool = self.conv.data[role]
        gpu = bool(pool.get("accelerator"))
        image = executor_image(self.ti.get("runtimeVersion"), _str(self.ti.get("region")), gpu)
        self.conv.link((role, "python_package"), self.src("pythonModule"))
        if image is None:
            if role == "chief":
                got = f" (got {self.ti['runtimeVersion']!r})" if "runtimeVersion" in self.ti else ""
                self.conv.error("legacy-no-executor-image", "a Python package needs an executor image: set "
                                "runtimeVersion (e.g. \"2.11\") or use a custom container with masterConfig.imageUri"
                                + got, self.src("runtimeVersion") if got else self.src("pythonModule"))
        else:
            self.conv.put((role, "python_package", "executor_image"), image, self.src("runtimeVersion"))
            self._warn_image(role, image)
        if self.package is not None:
            self.conv.put((role, "python_package", "module"), self.package.module, self.src("pythonModule"))
            self.conv.put((role, "python_package", "source"), self.package.source, self.src("packageUris"))
            return
        uris = self.ti["packageUris"]
        self.conv.put((role, "python_package", "package_uris"), [uris] if isinstance(uris, str) else uris,
                      self.src("packageUris"))
        self.conv.put((role, "python_package", "module"), self.ti["pythonModule"], self.src("pythonModule"))

    def _warn_image(self, role: str, image: str) -> None:
        if self.image_warned:
            return
        self.image_warned = True
        self.conv.warning("legacy-executor-image", f"runtimeVersion {self.ti['runtimeVersion']} maps to Vertex AI "
                          f"prebuilt images like {image}; check it is still available ({catalog.PREBUILT_DOC})",
                          self.src("runtimeVersion"))

    def _disk(self, role: str, value: Any, src: KeyPath) -> None:
        raw = self.conv.mapping(value, src, "diskConfig")
        if raw is None:
            return
        self.conv.check_keys(raw, DISK_FIELDS, src)
        self.conv.link((role, "disk"), src)
        if "bootDiskType" in raw:
            self.conv.put((role, "disk", "type"), raw["bootDiskType"], src + ("bootDiskType",))
        if "bootDiskSizeGb" in raw:
            self.conv.put((role, "disk", "size_gb"), int_or_same(raw["bootDiskSizeGb"]),
                          src + ("bootDiskSizeGb",))

    # --- job-level settings ------------------------------------------------------------

    def _job_settings(self) -> None:
        simple = {"region": "region", "serviceAccount": "service_account", "network": "network",
                  "jobDir": "base_output_dir", "enableWebAccess": "enable_web_access"}
        for key, native in simple.items():
            if key in self.ti:
                self.conv.put((native,), self.ti[key], self.src(key))
        raw = self.conv.mapping(self.ti.get("encryptionConfig"), self.src("encryptionConfig"), "encryptionConfig")
        if raw is not None:
            self.conv.check_keys(raw, ENCRYPTION_FIELDS, self.src("encryptionConfig"))
            if "kmsKeyName" in raw:
                self.conv.put(("extra", "encryptionSpec", "kmsKeyName"), raw["kmsKeyName"],
                              self.src("encryptionConfig", "kmsKeyName"))

    def _scheduling(self) -> None:
        src = self.src("scheduling")
        raw = self.conv.mapping(self.ti.get("scheduling"), src, "scheduling")
        if raw is None:
            return
        self.conv.check_keys(raw, SCHEDULING_FIELDS, src)
        if "maxRunningTime" in raw:
            timeout = proto_duration(raw["maxRunningTime"])
            if timeout is None:
                self.conv.error("bad-value", f"maxRunningTime {raw['maxRunningTime']!r} is not a duration; "
                                "write seconds like \"7200s\"", src + ("maxRunningTime",))
            else:
                self.conv.link(("scheduling",), src)
                self.conv.put(("scheduling", "timeout"), timeout, src + ("maxRunningTime",))
        for key in ("maxWaitTime", "priority"):
            if key in raw:
                self.conv.warning("legacy-dropped", f"scheduling.{key} has no Vertex AI custom-job equivalent "
                                  "and is dropped", src + (key,))


class _Study:
    """``hyperparameters`` (AI Platform HyperparameterSpec) → native ``study``."""

    def __init__(self, conv: Conversion, value: Any, src: KeyPath) -> None:
        self.conv = conv
        self.raw = conv.mapping(value, src, "hyperparameters")
        self.src = src

    def run(self) -> None:
        """Convert the metric, the limits, the algorithm and every parameter."""
        if self.raw is None:
            return
        raw, src = self.raw, self.src
        self.conv.check_keys(raw, HYPERPARAMETER_FIELDS, src)
        self.conv.link(("study",), src)
        goal = raw.get("goal", DEFAULT_GOAL)
        if goal == "GOAL_TYPE_UNSPECIFIED":
            goal = DEFAULT_GOAL
        metric_src = src + ("hyperparameterMetricTag",) if "hyperparameterMetricTag" in raw else src
        self.conv.link(("study", "metric"), metric_src)
        # AI Platform's default metric tag is "training/hptuning/metric".
        self.conv.put(("study", "metric", "id"), raw.get("hyperparameterMetricTag", "training/hptuning/metric"),
                      metric_src)
        self.conv.put(("study", "metric", "goal"), goal.lower() if isinstance(goal, str) else goal,
                      src + ("goal",) if "goal" in raw else src)
        for key, native, default in STUDY_COUNTS:
            if key in raw:
                self.conv.put(("study", native), int_or_same(raw[key]), src + (key,))
            elif default is not None:
                self.conv.put(("study", native), default, src)
        if "algorithm" in raw:
            algo = raw["algorithm"]
            self.conv.put(("study", "algorithm"), ALGORITHMS.get(algo, algo) if isinstance(algo, str) else algo,
                          src + ("algorithm",))
        for key in ("enableTrialEarlyStopping", "resumePreviousJobId"):
            if key in raw:
                self.conv.warning("legacy-dropped", f"hyperparameters.{key} is not converted; dropped", src + (key,))
        self._params(raw.get("params"), src + ("params",))

    def _params(self, value: Any, src: KeyPath) -> None:
        if not isinstance(value, list):
            if value is not None:
                self.conv.error("wrong-type", "hyperparameters.params must be a list of parameter specs, "
                                f"got {describe(value)}", src)
            return
        for i, item in enumerate(value):
            raw = self.conv.mapping(item, src + (i,), f"params[{i}]")
            if raw is not None:
                self._param(raw, src + (i,))

    def _param(self, raw: Mapping[str, Any], src: KeyPath) -> None:
        self.conv.check_keys(raw, PARAMETER_FIELDS, src)
        name = raw.get("parameterName")
        if not isinstance(name, str) or not name:
            self.conv.error("missing-key", "a hyperparameter needs a parameterName", src)
            return
        base = ("study", "parameters", name)
        self.conv.link(base, src + ("parameterName",))
        kind = raw.get("type")
        self.conv.put(base + ("type",), kind.lower() if isinstance(kind, str) else kind, src + ("type",))
        for key, native in (("minValue", "min"), ("maxValue", "max"), ("categoricalValues", "values"),
                            ("discreteValues", "values")):
            if key in raw:
                self.conv.put(base + (native,), raw[key], src + (key,))
        if "scaleType" in raw:
            scale = raw["scaleType"]
            mapped = SCALE_TYPES.get(scale, scale) if isinstance(scale, str) else scale
            if mapped is not None:
                self.conv.put(base + ("scale",), mapped, src + ("scaleType",))


def _tier_machine(pool: TierPool) -> LegacyMachine:
    """The machine of a scale tier's pool (every tier names a legacy machine: tests/test_catalog.py)."""
    machine = catalog.legacy_machine(pool.legacy_machine)
    assert machine is not None, pool
    return machine


def _describe_machine(machine: LegacyMachine) -> str:
    if machine.accelerator_type:
        return f"{machine.machine_type} + {machine.accelerator_count} × {machine.accelerator_type}"
    return machine.machine_type


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None

