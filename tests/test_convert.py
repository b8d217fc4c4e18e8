"""``vxtrain convert``: the YAML it writes reads back to the same data, multi-line strings as blocks;
``--to native`` of every example is a valid spec that compiles to the same job; a study converts to
a HyperparameterTuningJob. (What gcloud does with ``--to gcloud-command``: tests/test_convert_gcloud.py.)"""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import incli
from tests.conftest import CONFIGS
from vxtrain.api import Options
from vxtrain.commands import convert as convert_cmd
from vxtrain.commands.convert import ConvertTarget

EXAMPLES = sorted((CONFIGS / "examples").glob("*.yaml"))
VARIABLES = ("--var", "IMAGE_TAG=v1")  # fallback-ladder.yaml's ${IMAGE_TAG}

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


@pytest.mark.parametrize("to", [ConvertTarget.gcloud, ConvertTarget.gcloud_command])
def test_gcloud_output_warns_that_it_drops_what_only_submit_does(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  to: ConvertTarget) -> None:
    source = tmp_path / "watched.yaml"
    source.write_text("chief:\n  machine_type: n1-standard-4\n  image: us-docker.pkg.dev/p/r/t:1\n"
                      "base_output_dir: gs://b/out\nrecovery:\n  max_recoveries: 2\n"
                      "notify: [https://hooks.example.com/x]\n")
    assert convert_cmd.convert(str(source), to, Options(display_name="job")) == 0
    out, err = capsys.readouterr()
    assert f"watched.yaml:5:1: warning: --to {to.value} leaves out `recovery:`" in err
    assert f"watched.yaml:7:1: warning: --to {to.value} leaves out `notify:`" in err
    assert err.count("[submit-only-dropped]") == 2 and "hooks.example.com" not in out
    assert convert_cmd.convert(str(source), ConvertTarget.native, Options(display_name="job")) == 0
    out, err = capsys.readouterr()
    assert "submit-only-dropped" not in err and "max_recoveries: 2" in out


_TEXT = st.text(st.sampled_from(list("ab -:#'\"\\\t\n\r{}[]|>&*!%@`é") + ["\u2028", "\x85", "\x07"]),
                max_size=30)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.one_of(_TEXT, st.lists(_TEXT, max_size=3)),
                       max_size=3))
def test_any_text_loads_back_the_same(data: dict[str, Any]) -> None:
    """Block scalars only where they hold the text exactly; PyYAML quotes the rest."""
    assert yaml.safe_load(convert_cmd._yaml(data)) == data


def _compiled(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    """The jobs ``vxtrain plan -o json`` compiles from ``path`` (exit 0: the spec is valid), every rung's."""
    code, plan, err = incli.run(capsys, "plan", str(path), "-o", "json", *VARIABLES)
    assert code == 0, err
    assert not [d for d in plan["diagnostics"] if d["severity"] == "error"]
    return {"custom_job": plan["custom_job"], "hyperparameter_tuning_job": plan.get("hyperparameter_tuning_job"),
            "fallback": [(rung["region"], rung["custom_job"]) for rung in plan.get("fallback", [])]}


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_native_output_of_every_example_compiles_to_the_same_job(example: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """validate → convert → validate → the same compiled job, every rung and a study's tuning job
    included. The examples folder is copied so that what a spec names relative to its folder
    (sources, local workdirs) is there for the converted spec too."""
    folder = tmp_path / "examples"
    shutil.copytree(example.parent, folder)
    source = folder / example.name
    before = _compiled(capsys, source)
    code, text, err = incli.run(capsys, "convert", str(source), "--to", "native", *VARIABLES)
    assert code == 0, err
    converted = folder / f"{example.stem}.native.yaml"
    converted.write_text(text)
    assert _compiled(capsys, converted) == before
    # and the converted spec converts to itself
    assert incli.run(capsys, "convert", str(converted), "--to", "native", *VARIABLES)[1] == text


@pytest.mark.parametrize("ladder", ["", "fallback:\n  - {region: europe-west4}\n"], ids=["spec", "ladder"])
def test_native_output_keeps_a_pool_written_as_an_empty_mapping(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                ladder: str) -> None:
    """``chief: {}`` is a pool taking everything from ``defaults``: dropped, the spec has no chief.
    (Without a ladder the pools get their ``defaults`` written out; with one, they stay as written.)"""
    source = tmp_path / "job.yaml"
    source.write_text("display_name: job\nregion: us-central1\n"
                      "defaults: {machine_type: n1-standard-4, image: us-docker.pkg.dev/p/r/train:1}\n"
                      "chief: {}\nworkers: {replicas: 2}\nevaluators: {}\n" + ladder)
    data = yaml.safe_load(_convert(source, ConvertTarget.native, capsys))
    assert "chief" in data and "evaluators" in data
    if ladder:
        assert data["chief"] == data["evaluators"] == {}
    again = tmp_path / "again.yaml"
    again.write_text(yaml.safe_dump(data))
    assert _rungs(again) == _rungs(source)


def test_native_output_keeps_a_literal_dollar_brace(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """``$${X}`` is the text ``${X}``: written back as ``$${X}``, never as a reference the next load
    fills in (here with the local X, which must not leak into the job)."""
    monkeypatch.setenv("X", "local-value")
    source = tmp_path / "job.yaml"
    source.write_text("display_name: job\nregion: us-central1\n"
                      "chief:\n  machine_type: n1-standard-4\n  image: us-docker.pkg.dev/p/r/train:1\n"
                      "  command: [bash, -c, 'echo $${X} $$${Y} $$ ${X}']\n"
                      "  env: {TEMPLATE: '$${HOME}/runs'}\n"
                      "fallback:\n  - chief: {args: ['--out=$${OUT}']}\n")
    out = _convert(source, ConvertTarget.native, capsys)
    assert "echo $${X} $$${Y} $$ local-value" in out and "$${HOME}/runs" in out and "--out=$${OUT}" in out
    again = tmp_path / "again.yaml"
    again.write_text(out)
    jobs = _rungs(again)
    assert jobs == _rungs(source)
    container = jobs[0]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]
    assert container["command"][2] == "echo ${X} $${Y} $$ local-value"
    assert container["env"] == [{"name": "TEMPLATE", "value": "${HOME}/runs"}]
    assert jobs[1]["jobSpec"]["workerPoolSpecs"][0]["containerSpec"]["args"] == ["--out=${OUT}"]


STUDY = CONFIGS / "examples" / "study.yaml"


def test_gcloud_output_of_a_study_is_the_tuning_job(capsys: pytest.CaptureFixture[str]) -> None:
    """What ``gcloud ai hp-tuning-jobs create --config`` takes, never a lone custom job."""
    code, plan, _ = incli.run(capsys, "plan", str(STUDY), "-o", "json")
    code, text, err = incli.run(capsys, "convert", str(STUDY), "--to", "gcloud")
    assert code == 0, err
    assert yaml.safe_load(text) == plan["hyperparameter_tuning_job"]


def test_gcloud_command_of_a_study_creates_a_tuning_job(capsys: pytest.CaptureFixture[str]) -> None:
    code, plan, _ = incli.run(capsys, "plan", str(STUDY), "-o", "json")
    code, text, err = incli.run(capsys, "convert", str(STUDY), "--to", "gcloud-command")
    assert code == 0, err
    heredoc, _, command = text.rstrip("\n").rpartition("\n")
    assert command == ("gcloud ai hp-tuning-jobs create --display-name=study-example --region=us-central1 "
                       "--config=study.gcloud.yaml")
    assert "custom-jobs" not in text
    first, _, rest = heredoc.partition("\n")
    assert first == "cat > study.gcloud.yaml <<'VXTRAIN_CONFIG_EOF'"
    body, _, marker = rest.rpartition("\n")
    assert marker == "VXTRAIN_CONFIG_EOF"
    assert yaml.safe_load(body) == plan["hyperparameter_tuning_job"]


GAPS_WITH_ENV = """\
display_name: gaps
region: us-central1
defaults: {image: us-docker.pkg.dev/p/r/train:1}
chief: {machine_type: n1-standard-8}
evaluators:
  machine_type: n1-standard-4
  env: {MODE: eval}
"""


def test_gcloud_command_refuses_empty_slots_beside_what_the_flags_cannot_say(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """gcloud's --config refuses an empty slot, and the --worker-pool-spec flags that can leave one
    empty have no env: no command line gcloud would send this job with, so none is printed."""
    source = tmp_path / "gaps.yaml"
    source.write_text(GAPS_WITH_ENV)
    assert convert_cmd.convert(str(source), ConvertTarget.gcloud_command, Options()) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"{source}:5:1: error: --to gcloud-command cannot say this job to gcloud: its worker "
                          "pool slots 1, 2 are empty")
    assert "cannot carry the evaluators pool's `containerSpec.env`" in err and "[gcloud-empty-slot] (at evaluators)" in err


def test_gcloud_output_with_empty_slots_warns_that_gcloud_refuses_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "gaps.yaml"
    source.write_text(GAPS_WITH_ENV)
    assert convert_cmd.convert(str(source), ConvertTarget.gcloud, Options()) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["workerPoolSpecs"][1:3] == [{}, {}]
    assert "warning: --to gcloud writes the job's empty worker pool slots as `{}`" in err
    assert "[gcloud-empty-slot]" in err
