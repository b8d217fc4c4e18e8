"""``vxtrain init``: a commented starter spec per shape, each one valid."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from vxtrain.cli import main
from vxtrain.commands.init import Shape, template_text

TEMPLATES = Path(__file__).resolve().parent.parent / "vxtrain" / "templates"


@pytest.mark.parametrize("shape", list(Shape), ids=lambda s: s.value)
def test_every_shape_writes_a_valid_commented_spec(shape: Shape, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "job.yaml"
    assert main(["init", "--shape", shape.value, "--output-file", str(target)]) == 0
    text = target.read_text()
    assert text.startswith("# ") and text == template_text(shape)
    capsys.readouterr()
    assert main(["validate", str(target), "--strict", "--output", "json"]) == 0
    (result,) = json.loads(capsys.readouterr().out)["files"]
    assert result["valid"] and result["diagnostics"] == []


def test_every_template_file_is_a_shape() -> None:
    assert sorted(p.stem for p in TEMPLATES.glob("*.yaml")) == sorted(s.value for s in Shape)


def test_study_template_compiles_to_a_tuning_job(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "study.yaml"
    assert main(["init", "--shape", "study", "--output-file", str(target)]) == 0
    capsys.readouterr()
    assert main(["plan", str(target), "--output", "json"]) == 0
    hpt = json.loads(capsys.readouterr().out)["hyperparameter_tuning_job"]
    assert hpt["maxTrialCount"] == 20 and len(hpt["studySpec"]["parameters"]) == 3


def test_reduction_server_template_sizes_like_googles_example(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--shape", "reduction-server", "--output-file", str(tmp_path / "j.yaml")]) == 0
    capsys.readouterr()
    assert main(["plan", str(tmp_path / "j.yaml"), "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["bandwidth"]["reduction_server"]["replicas"] == 16


def test_refuses_to_overwrite_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "job.yaml"
    target.write_text("mine\n")
    assert main(["init", "--output-file", str(target)]) == 1
    assert "already exists" in capsys.readouterr().err and target.read_text() == "mine\n"
    assert main(["init", "--output-file", str(target), "--force"]) == 0
    assert target.read_text() == template_text(Shape.single)


def test_default_output_file_and_display_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["init", "--shape", "parameter-servers", "--display-name", "wide: deep"]) == 0
    assert yaml.safe_load((tmp_path / "job.yaml").read_text())["display_name"] == "wide: deep"


def test_stdout_and_bad_shape(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--output-file", "-"]) == 0
    assert capsys.readouterr().out == template_text(Shape.single)
    assert main(["init", "--shape", "huge"]) == 2


def test_a_folder_is_no_output_file_even_with_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--output-file", str(tmp_path), "--force"]) == 2
    assert "is a folder: give a file name" in capsys.readouterr().err


def test_an_output_file_that_cannot_be_written_is_an_error_not_a_traceback(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("")
    for target in (tmp_path / "file" / "job.yaml", tmp_path / ("n" * 300 + ".yaml")):  # fails for root too
        assert main(["init", "--output-file", str(target)]) == 1
        err = capsys.readouterr().err
        assert "cannot write" in err and "unexpected" not in err
