"""The REST JSON of the Vertex AI messages vxtrain writes and reads back, as TypedDicts.

The compiler writes a ``CustomJob`` or ``HyperparameterTuningJob`` in proto3 JSON
(camelCase keys, https://protobuf.dev/programming-guides/json/); the local runtime,
the planners, ``convert`` and submission's views read the same shape, whether it
came from the compiler or back from an API through ``json_format.MessageToDict``.
Field names and cardinalities are those of the installed
``google.cloud.aiplatform_v1`` protos (``custom_job.proto``, ``machine_resources.proto``,
``study.proto``, ...); tests/vocab/test_jobjson.py checks every key here against them.

Every class is ``total=False``: proto3 JSON leaves out a field at its default, so no
key is sure to be there. Enums are their value names (``"SPOT"``, ``"NVIDIA_TESLA_T4"``).

Import it under ``TYPE_CHECKING`` only: the names are for annotations (a dict literal
is a TypedDict without the class), so the validate/plan path pays nothing for them.
"""
from __future__ import annotations

from typing import Any, TypedDict

#: Proto3 JSON's int64: ``MessageToDict`` writes a decimal string (``"4"``), the compiler
#: writes a number; the API's parser accepts both ("Either numbers or strings are accepted",
#: https://protobuf.dev/programming-guides/json/). Read one through ``int()``.
Int64 = int | str
#: ``google.protobuf.Duration``: seconds with an ``s`` suffix (``"3600s"``, ``"1.5s"``).
Duration = str
#: ``google.protobuf.Timestamp``: RFC 3339, UTC (``"2025-05-01T12:00:00.123Z"``).
Timestamp = str
#: A JSON object no one here gives a shape to: what a user writes under ``extra:`` (any
#: CustomJob field, checked field by field by validation, not by a type), the user's YAML
#: document (or a piece of it) before the schema has checked it, JSON read from the
#: environment, a JSON Schema document, a ``google.protobuf.Any`` in an error's details.
#: Use it only there: data vxtrain makes or has checked has a TypedDict or a dataclass.
JsonObject = dict[str, Any]


# --- a pool: custom_job.proto's WorkerPoolSpec and its parts -------------------------------

class EnvVar(TypedDict, total=False):
    """env_var.proto's EnvVar."""

    name: str
    value: str


class ContainerSpec(TypedDict, total=False):
    """custom_job.proto's ContainerSpec: the pool's task when it runs an image."""

    imageUri: str
    command: list[str]
    args: list[str]
    env: list[EnvVar]


class PythonPackageSpec(TypedDict, total=False):
    """custom_job.proto's PythonPackageSpec: the pool's task when it runs a package."""

    executorImageUri: str
    packageUris: list[str]
    pythonModule: str
    args: list[str]
    env: list[EnvVar]


class ReservationAffinity(TypedDict, total=False):
    """reservation_affinity.proto's ReservationAffinity."""

    reservationAffinityType: str
    key: str
    values: list[str]


class MachineSpec(TypedDict, total=False):
    """machine_resources.proto's MachineSpec."""

    machineType: str
    acceleratorType: str
    acceleratorCount: int
    gpuPartitionSize: str
    tpuTopology: str
    reservationAffinity: ReservationAffinity


class DiskSpec(TypedDict, total=False):
    """machine_resources.proto's DiskSpec."""

    bootDiskType: str
    bootDiskSizeGb: int


class NfsMount(TypedDict, total=False):
    """machine_resources.proto's NfsMount."""

    server: str
    path: str
    mountPoint: str


class LustreMount(TypedDict, total=False):
    """machine_resources.proto's LustreMount."""

    instanceIp: str
    volumeHandle: str
    filesystem: str
    mountPoint: str


class WorkerPoolSpec(TypedDict, total=False):
    """custom_job.proto's WorkerPoolSpec; ``{}`` is a slot left empty on purpose."""

    containerSpec: ContainerSpec
    pythonPackageSpec: PythonPackageSpec
    machineSpec: MachineSpec
    replicaCount: Int64
    nfsMounts: list[NfsMount]
    lustreMounts: list[LustreMount]
    diskSpec: DiskSpec


# --- the job: custom_job.proto's CustomJobSpec and CustomJob --------------------------------

class Scheduling(TypedDict, total=False):
    """custom_job.proto's Scheduling."""

    timeout: Duration
    restartJobOnWorkerRestart: bool
    strategy: str
    disableRetries: bool
    maxWaitDuration: Duration


class GcsDestination(TypedDict, total=False):
    """io.proto's GcsDestination (a CustomJobSpec's baseOutputDirectory)."""

    outputUriPrefix: str


class DnsPeeringConfig(TypedDict, total=False):
    """service_networking.proto's DnsPeeringConfig."""

    domain: str
    targetProject: str
    targetNetwork: str


class PscInterfaceConfig(TypedDict, total=False):
    """service_networking.proto's PscInterfaceConfig."""

    networkAttachment: str
    dnsPeeringConfigs: list[DnsPeeringConfig]


class CustomJobSpec(TypedDict, total=False):
    """custom_job.proto's CustomJobSpec: a CustomJob's ``jobSpec``, a tuning job's ``trialJobSpec``."""

    persistentResourceId: str
    workerPoolSpecs: list[WorkerPoolSpec]
    scheduling: Scheduling
    serviceAccount: str
    network: str
    reservedIpRanges: list[str]
    pscInterfaceConfig: PscInterfaceConfig
    baseOutputDirectory: GcsDestination
    protectedArtifactLocationId: str
    tensorboard: str
    enableWebAccess: bool
    enableDashboardAccess: bool
    experiment: str
    experimentRun: str
    models: list[str]


class EncryptionSpec(TypedDict, total=False):
    """encryption_spec.proto's EncryptionSpec."""

    kmsKeyName: str


class Status(TypedDict, total=False):
    """google.rpc.Status (a job's ``error``): https://cloud.google.com/apis/design/errors."""

    code: int
    message: str
    details: list[JsonObject]


class CustomJob(TypedDict, total=False):
    """custom_job.proto's CustomJob: what the compiler writes (displayName, labels, jobSpec)
    and what an API answers (name, state, times, error too)."""

    name: str
    displayName: str
    jobSpec: CustomJobSpec
    state: str
    createTime: Timestamp
    startTime: Timestamp
    endTime: Timestamp
    updateTime: Timestamp
    error: Status
    labels: dict[str, str]
    encryptionSpec: EncryptionSpec
    webAccessUris: dict[str, str]
    satisfiesPzs: bool
    satisfiesPzi: bool


# --- a study: study.proto's StudySpec, Trial and Measurement ----------------------------------

class MetricSpec(TypedDict, total=False):
    """study.proto's StudySpec.MetricSpec."""

    metricId: str
    goal: str


class DoubleValueSpec(TypedDict, total=False):
    """study.proto's StudySpec.ParameterSpec.DoubleValueSpec."""

    minValue: float
    maxValue: float
    defaultValue: float


class IntegerValueSpec(TypedDict, total=False):
    """study.proto's StudySpec.ParameterSpec.IntegerValueSpec (int64 bounds)."""

    minValue: Int64
    maxValue: Int64
    defaultValue: Int64


class DiscreteValueSpec(TypedDict, total=False):
    """study.proto's StudySpec.ParameterSpec.DiscreteValueSpec."""

    values: list[float]
    defaultValue: float


class CategoricalValueSpec(TypedDict, total=False):
    """study.proto's StudySpec.ParameterSpec.CategoricalValueSpec."""

    values: list[str]
    defaultValue: str


class ParameterSpec(TypedDict, total=False):
    """study.proto's StudySpec.ParameterSpec: one value spec of the four (a oneof)."""

    parameterId: str
    doubleValueSpec: DoubleValueSpec
    integerValueSpec: IntegerValueSpec
    discreteValueSpec: DiscreteValueSpec
    categoricalValueSpec: CategoricalValueSpec
    scaleType: str


class StudySpec(TypedDict, total=False):
    """study.proto's StudySpec: the fields vxtrain compiles (no automated stopping)."""

    metrics: list[MetricSpec]
    parameters: list[ParameterSpec]
    algorithm: str
    observationNoise: str
    measurementSelectionType: str


class TrialParameter(TypedDict, total=False):
    """study.proto's Trial.Parameter: ``value`` is a google.protobuf.Value (a number or a string)."""

    parameterId: str
    value: float | str


class Metric(TypedDict, total=False):
    """study.proto's Measurement.Metric."""

    metricId: str
    value: float


class Measurement(TypedDict, total=False):
    """study.proto's Measurement."""

    elapsedDuration: Duration
    stepCount: Int64
    metrics: list[Metric]


class Trial(TypedDict, total=False):
    """study.proto's Trial, as a HyperparameterTuningJob's ``trials`` lists it."""

    name: str
    id: str
    state: str
    parameters: list[TrialParameter]
    finalMeasurement: Measurement
    measurements: list[Measurement]
    startTime: Timestamp
    endTime: Timestamp
    clientId: str
    infeasibleReason: str
    customJob: str
    webAccessUris: dict[str, str]


class HyperparameterTuningJob(TypedDict, total=False):
    """hyperparameter_tuning_job.proto's HyperparameterTuningJob: compiled (studySpec, counts,
    trialJobSpec) and as an API answers (trials, state, times, error too)."""

    name: str
    displayName: str
    studySpec: StudySpec
    maxTrialCount: int
    parallelTrialCount: int
    maxFailedTrialCount: int
    trialJobSpec: CustomJobSpec
    trials: list[Trial]
    state: str
    createTime: Timestamp
    startTime: Timestamp
    endTime: Timestamp
    updateTime: Timestamp
    error: Status
    labels: dict[str, str]
    encryptionSpec: EncryptionSpec
    satisfiesPzs: bool
    satisfiesPzi: bool
