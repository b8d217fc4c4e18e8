"""vxtrain.protos: the installed aiplatform_v1 type sources, read as text (never imported)."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT
from vxtrain import protos

SOURCE = textwrap.dedent('''
    from google.cloud.aiplatform_v1.types import machine_resources as gca_machine
    from google.protobuf import duration_pb2

    class Outer(proto.Message):
        class Inner(proto.Message):
            hidden: int = proto.Field(proto.INT32, number=1)

        class Mode(proto.Enum):
            MODE_UNSPECIFIED = 0
            FAST = 1
            SLOW = 3

        first_field: str = proto.Field(proto.STRING, number=1)
        many_things: MutableSequence[str] = proto.RepeatedField(
            proto.STRING, number=2)
        labels: MutableMapping[str, str] = proto.MapField(proto.STRING, proto.INT64, number=3)
        inner: Inner = proto.Field(proto.MESSAGE, number=4, message=Inner)
        machine: gca_machine.MachineSpec = proto.Field(proto.MESSAGE, number=5, message=gca_machine.MachineSpec)
        mode: Mode = proto.Field(proto.ENUM, number=6, enum=Mode)
        timeout: duration_pb2.Duration = proto.Field(proto.MESSAGE, number=7, message=duration_pb2.Duration)

    __all__ = ()
    ''')


def test_parse_reads_fields_with_their_json_names_kinds_and_types() -> None:
    module = protos.parse(SOURCE, "outer")
    fields = module.messages["Outer"]
    assert list(fields) == ["firstField", "manyThings", "labels", "inner", "machine", "mode", "timeout"]
    first = fields["firstField"]
    assert (first.name, first.json_name, first.kind, first.type) == ("first_field", "firstField", "single", "STRING")
    assert fields["manyThings"].repeated and fields["manyThings"].type == "STRING"
    assert (fields["labels"].kind, fields["labels"].type) == ("map", "INT64")  # the value's type
    assert module.messages["Outer.Inner"] == {"hidden": protos.ProtoField("hidden", "hidden", "single", "INT32")}


def test_parse_resolves_messages_and_enums_nested_or_imported() -> None:
    fields = protos.parse(SOURCE, "outer").messages["Outer"]
    assert fields["inner"].message == ("outer", "Outer.Inner")
    assert fields["machine"].message == ("machine_resources", "MachineSpec")
    assert (fields["mode"].type, fields["mode"].enum, fields["mode"].message) == ("ENUM", ("outer", "Outer.Mode"), None)
    # a well-known type outside aiplatform_v1: no message to look into, but its name is kept
    assert (fields["timeout"].message, fields["timeout"].ref) == (None, "duration_pb2.Duration")


def test_parse_reads_map_key_types_and_oneof_groups() -> None:
    source = textwrap.dedent('''
        class Pool(proto.Message):
            image: str = proto.Field(proto.STRING, number=1, oneof="task")
            module: str = proto.Field(proto.STRING, number=2, oneof="task")
            sizes: MutableMapping[int, str] = proto.MapField(proto.INT64, proto.STRING, number=3)
        ''')
    fields = protos.parse(source, "pool").messages["Pool"]
    assert (fields["image"].oneof, fields["module"].oneof, fields["sizes"].oneof) == ("task", "task", None)
    assert (fields["sizes"].key_type, fields["sizes"].type, fields["image"].key_type) == ("INT64", "STRING", None)
    assert protos.parse(SOURCE, "outer").messages["Outer"]["labels"].key_type == "STRING"


def test_installed_oneofs_match_the_descriptors() -> None:
    from google.cloud.aiplatform_v1.types import WorkerPoolSpec

    fields = protos.message_fields("custom_job", "WorkerPoolSpec") or {}
    ours = {f.name: f.oneof for f in fields.values() if f.oneof}
    real = {f.name: o.name for o in WorkerPoolSpec.pb().DESCRIPTOR.oneofs for f in o.fields}
    assert ours == real and ours


def test_parse_reads_enum_values_in_order() -> None:
    enums = protos.parse(SOURCE, "outer").enums
    assert enums == {"Outer.Mode": {"MODE_UNSPECIFIED": 0, "FAST": 1, "SLOW": 3}}


@pytest.mark.parametrize(("snake", "camel"), [
    ("base_output_directory", "baseOutputDirectory"), ("network", "network"), ("boot_disk_size_gb", "bootDiskSizeGb")])
def test_snake_to_camel(snake: str, camel: str) -> None:
    assert protos.snake_to_camel(snake) == camel


# --- the installed package ------------------------------------------------------

def test_installed_messages_nested_and_imported() -> None:
    assert protos.installed()
    fields = protos.message_fields("custom_job", "WorkerPoolSpec")
    assert fields is not None
    assert fields["machineSpec"].message == ("machine_resources", "MachineSpec")
    assert fields["nfsMounts"].kind == "repeated"
    assert fields["replicaCount"].type == "INT64"
    study_fields = protos.message_fields("study", "StudySpec.ParameterSpec")
    assert study_fields is not None
    assert study_fields["doubleValueSpec"].message == ("study", "StudySpec.ParameterSpec.DoubleValueSpec")
    assert protos.message_fields("custom_job", "NoSuchMessage") is None
    assert protos.message_fields("no_such_module", "CustomJob") is None


def test_installed_fields_match_the_real_messages() -> None:
    """The text reading agrees with the imported classes (drift in proto-plus's source style fails here)."""
    from google.cloud.aiplatform_v1.types import CustomJobSpec, MachineSpec, Scheduling

    for cls, ref in ((CustomJobSpec, ("custom_job", "CustomJobSpec")), (Scheduling, ("custom_job", "Scheduling")),
                     (MachineSpec, ("machine_resources", "MachineSpec"))):
        fields = protos.message_fields(*ref)
        assert fields is not None
        real = {f.json_name for f in cls.pb().DESCRIPTOR.fields}
        assert set(fields) == real, ref


def test_installed_enums_match_the_real_enums() -> None:
    from google.cloud.aiplatform_v1.types import AcceleratorType, Scheduling

    assert protos.enum_values("accelerator_type", "AcceleratorType") == {e.name: e.value for e in AcceleratorType}
    strategy = protos.message_fields("custom_job", "Scheduling")["strategy"]  # type: ignore[index]
    assert strategy.enum == ("custom_job", "Scheduling.Strategy")
    assert protos.enum_values(*strategy.enum) == {e.name: e.value for e in Scheduling.Strategy}


def test_reading_never_imports_aiplatform() -> None:
    code = ("import sys; from vxtrain import protos; "
            "assert protos.message_fields('custom_job', 'CustomJob'); "
            "assert protos.enum_values('accelerator_type', 'AcceleratorType'); "
            "bad = [m for m in sys.modules if m.startswith('google.cloud.aiplatform')]; "
            "assert not bad, bad")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT)}, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_without_the_package_every_lookup_is_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protos, "TYPES_PACKAGE", "no_such_package_for_vxtrain")
    protos.types_dir.cache_clear()
    protos.read_module.cache_clear()
    try:
        assert not protos.installed()
        assert protos.message_fields("custom_job", "CustomJob") is None
        assert protos.enum_values("accelerator_type", "AcceleratorType") is None
    finally:
        monkeypatch.undo()
        protos.types_dir.cache_clear()
        protos.read_module.cache_clear()
