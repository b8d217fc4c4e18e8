"""``vxtrain convert``: the YAML it writes reads back to the same data, multi-line strings as blocks."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from vxtrain.api import Options
from vxtrain.commands import convert as convert_cmd
from vxtrain.commands.convert import ConvertTarget

GCLOUD = """\
workerPoolSpecs:
  - machineSpec: {machineType: n1-standard-8}
    replicaCount: 1
    containerSpec:
      imageUri: us-docker.pkg.dev/p/r/train:1
      command: [bash, -c, "set -e\\npip install -r requirements.txt\\npython -m trainer.task \\"$@\\"\\n"]
      args: ["--epochs=3"]
      env: [{name: NOTE, value: "first line\\nsecond line"}]
"""


def _convert(path: Path, to: ConvertTarget, capsys: pytest.CaptureFixture[str]) -> str:
    assert convert_cmd.convert(str(path), to, Options(display_name="job")) == 0
    return capsys.readouterr().out


def test_native_output_writes_a_multi_line_command_as_a_block(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "job.yaml"
    source.write_text(GCLOUD)
    out = _convert(source, ConvertTarget.native, capsys)
    assert "- |\n    set -e\n    pip install -r requirements.txt\n" in out
    assert "\\n" not in out
    data = yaml.safe_load(out)
    assert data["chief"]["command"][2] == 'set -e\npip install -r requirements.txt\npython -m trainer.task "$@"\n'
    assert data["chief"]["env"] == {"NOTE": "first line\nsecond line"}
    # the converted file is a valid spec that converts to itself
    native = tmp_path / "native.yaml"
    native.write_text(out)
    assert _convert(native, ConvertTarget.native, capsys) == out


def test_gcloud_output_round_trips_to_the_same_job_spec(tmp_path: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "job.yaml"
    source.write_text(GCLOUD)
    out = _convert(source, ConvertTarget.gcloud, capsys)
    again = tmp_path / "again.yaml"
    again.write_text(out)
    assert _convert(again, ConvertTarget.gcloud, capsys) == out
    assert yaml.safe_load(out)["workerPoolSpecs"][0]["containerSpec"]["command"][2].startswith("set -e\n")


LADDER = """\
display_name: ladder
project: p
region: us-central1
defaults: {image: us-docker.pkg.dev/p/r/train:1}
chief: {machine_type: a2-highgpu-1g, accelerator: {type: NVIDIA_TESLA_A100, count: 1}}
workers: {replicas: 2, machine_type: a2-highgpu-1g, accelerator: {type: NVIDIA_TESLA_A100, count: 1}}
fallback:
  - {region: europe-west4}
  - {defaults: {image: us-docker.pkg.dev/p/r/train:2}}
  - chief: {machine_type: n1-standard-8, accelerator: null}
    workers: {machine_type: n1-standard-8, accelerator: null}
"""


def _rungs(path: Path) -> list[Any]:
    from vxtrain import api

    result = api.load_job(str(path), Options(display_name="job"))
    return [result.custom_job] + [rung.custom_job for rung in result.fallback]


def test_native_output_keeps_every_rung_of_the_ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A null in an entry deletes a key for that rung, and an entry merges over the pools and
    defaults as written: the converted spec compiles to the same job on every rung."""
    source = tmp_path / "ladder.yaml"
    source.write_text(LADDER)
    out = _convert(source, ConvertTarget.native, capsys)
    assert "accelerator: null" in out
    again = tmp_path / "again.yaml"
    again.write_text(out)
    assert _rungs(again) == _rungs(source)


@pytest.mark.parametrize("to", [ConvertTarget.gcloud, ConvertTarget.gcloud_command])
def test_gcloud_output_warns_that_it_drops_the_ladder(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      to: ConvertTarget) -> None:
    source = tmp_path / "ladder.yaml"
    source.write_text(LADDER)
    assert convert_cmd.convert(str(source), to, Options(display_name="job")) == 0
    err = capsys.readouterr().err
    assert f"ladder.yaml:7:1: warning: --to {to.value} writes the spec itself (rung 0) only" in err
    assert "the 3 `fallback:` entries are left out" in err and "[fallback-dropped]" in err


_TEXT = st.text(st.sampled_from(list("ab -:#'\"\\\t\n\r{}[]|>&*!%@`é") + ["\u2028", "\x85", "\x07"]),
                max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(_TEXT, st.lists(_TEXT, max_size=3)),
                       max_size=3))
def test_any_text_loads_back_the_same(data: dict[str, Any]) -> None:
    """Block scalars only where they hold the text exactly; PyYAML quotes the rest."""
    assert yaml.safe_load(convert_cmd._yaml(data)) == data
