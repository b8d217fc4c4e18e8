"""vocab.jobjson's TypedDicts say what the installed aiplatform_v1 protos say: every key is a
field of its message under the field's JSON name, with the JSON type proto3 gives that field
(a list for a repeated field, an object for a map, the message's own TypedDict for a message)."""
from __future__ import annotations

import typing

import pytest

from vxtrain import protos
from vxtrain.vocab import jobjson

#: Each TypedDict and the aiplatform_v1 message it is: (types/ module, qualified name).
MESSAGES: dict[str, tuple[str, str]] = {
    "EnvVar": ("env_var", "EnvVar"),
    "ContainerSpec": ("custom_job", "ContainerSpec"),
    "PythonPackageSpec": ("custom_job", "PythonPackageSpec"),
    "ReservationAffinity": ("reservation_affinity", "ReservationAffinity"),
    "MachineSpec": ("machine_resources", "MachineSpec"),
    "DiskSpec": ("machine_resources", "DiskSpec"),
    "NfsMount": ("machine_resources", "NfsMount"),
    "LustreMount": ("machine_resources", "LustreMount"),
    "WorkerPoolSpec": ("custom_job", "WorkerPoolSpec"),
    "Scheduling": ("custom_job", "Scheduling"),
    "GcsDestination": ("io", "GcsDestination"),
    "DnsPeeringConfig": ("service_networking", "DnsPeeringConfig"),
    "PscInterfaceConfig": ("service_networking", "PscInterfaceConfig"),
    "CustomJobSpec": ("custom_job", "CustomJobSpec"),
    "EncryptionSpec": ("encryption_spec", "EncryptionSpec"),
    "CustomJob": ("custom_job", "CustomJob"),
    "MetricSpec": ("study", "StudySpec.MetricSpec"),
    "DoubleValueSpec": ("study", "StudySpec.ParameterSpec.DoubleValueSpec"),
    "IntegerValueSpec": ("study", "StudySpec.ParameterSpec.IntegerValueSpec"),
    "DiscreteValueSpec": ("study", "StudySpec.ParameterSpec.DiscreteValueSpec"),
    "CategoricalValueSpec": ("study", "StudySpec.ParameterSpec.CategoricalValueSpec"),
    "ParameterSpec": ("study", "StudySpec.ParameterSpec"),
    "StudySpec": ("study", "StudySpec"),
    "TrialParameter": ("study", "Trial.Parameter"),
    "Metric": ("study", "Measurement.Metric"),
    "Measurement": ("study", "Measurement"),
    "Trial": ("study", "Trial"),
    "HyperparameterTuningJob": ("hyperparameter_tuning_job", "HyperparameterTuningJob"),
}
#: Types from outside aiplatform_v1 (google.protobuf, google.rpc) and how jobjson spells them.
WELL_KNOWN = {"duration_pb2.Duration": "Duration", "timestamp_pb2.Timestamp": "Timestamp",
              "status_pb2.Status": "Status", "struct_pb2.Value": "float | str"}
#: Scalar proto types in proto3 JSON (https://protobuf.dev/programming-guides/json/).
SCALARS = {"STRING": "str", "ENUM": "str", "BOOL": "bool", "INT32": "int", "INT64": "Int64", "DOUBLE": "float"}


def typed_dicts() -> dict[str, type]:
    return {name: value for name, value in vars(jobjson).items()
            if isinstance(value, type) and typing.is_typeddict(value)}


def expected(field: protos.ProtoField) -> str:
    """The annotation jobjson should give ``field``, as source text."""
    if field.message is not None:
        value = next(name for name, ref in MESSAGES.items() if ref == field.message)
    elif field.ref in WELL_KNOWN:
        value = WELL_KNOWN[field.ref]
    else:
        value = SCALARS[str(field.type)]
    if field.repeated:
        return f"list[{value}]"
    return f"dict[str, {value}]" if field.kind == "map" else value


def test_every_typed_dict_is_mapped_to_its_message() -> None:
    assert set(typed_dicts()) - {"Status"} == set(MESSAGES)


@pytest.mark.skipif(not protos.installed(), reason="google-cloud-aiplatform is not installed")
@pytest.mark.parametrize("name", sorted(MESSAGES))
def test_each_key_is_a_field_of_the_message_with_its_json_type(name: str) -> None:
    cls = typed_dicts()[name]
    fields = protos.message_fields(*MESSAGES[name])
    assert fields is not None
    written = {key: getattr(value, "__forward_arg__", value) for key, value in cls.__annotations__.items()}
    wrong = {key: (annotation, expected(fields[key]) if key in fields else "no such field")
             for key, annotation in written.items()
             if key not in fields or annotation != expected(fields[key])}
    assert wrong == {}
    assert cls.__total__ is False  # proto3 JSON leaves out a field at its default

