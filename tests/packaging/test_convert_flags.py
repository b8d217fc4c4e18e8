"""``convert --package-path DIR --module-name M``: gcloud's code pointer for legacy configs."""
from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.sources.folders import write_bare
from vxtrain import formats
from vxtrain.errors import UsageError
from vxtrain.formats.package_flags import PackageFlags
from vxtrain.loading import load_text

LEGACY = """\
trainingInput:
  scaleTier: CUSTOM
  masterType: n1-standard-8
  runtimeVersion: "2.11"
  pythonVersion: "3.7"
  region: us-central1
"""


def _convert(spec: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vxtrain", "convert", str(spec), "--to", "native", *flags],
                          capture_output=True, text=True, cwd=spec.parent.parent)


@pytest.mark.slow
def test_legacy_config_without_code_pointer_gets_source_and_module(tmp_path: Path) -> None:
    write_bare(tmp_path / "code")
    (tmp_path / "cfg").mkdir()
    spec = tmp_path / "cfg" / "config.yaml"
    spec.write_text(LEGACY)
    assert _convert(spec).returncode == 1  # no code pointer: what the flags are for
    res = _convert(spec, "--package-path", "code", "--module-name", "trainer.task")  # DIR relative to the cwd
    assert res.returncode == 0, res.stderr
    native = yaml.safe_load(res.stdout)
    assert native["chief"]["python_package"] == {
        "executor_image": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11:latest",
        "module": "trainer.task", "source": "../code"}  # relative to the spec, as source is read
    converted = tmp_path / "cfg" / "native.yaml"
    converted.write_text(res.stdout)
    check = subprocess.run([sys.executable, "-m", "vxtrain", "validate", str(converted)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_the_flags_are_for_legacy_configs_only(tmp_path: Path) -> None:
    spec = tmp_path / "cfg" / "job.yaml"
    spec.parent.mkdir()
    spec.write_text("display_name: x\nchief: {machine_type: n1-standard-4, image: gcr.io/p/i:1}\n")
    res = _convert(spec, "--package-path", "code", "--module-name", "trainer.task")
    assert res.returncode == 2 and "legacy" in res.stderr


def test_a_bad_folder_or_module_is_reported_at_its_flag(tmp_path: Path) -> None:
    write_bare(tmp_path / "code")
    (tmp_path / "cfg").mkdir()
    spec = tmp_path / "cfg" / "config.yaml"
    spec.write_text(LEGACY)
    res = _convert(spec, "--package-path", "nope", "--module-name", "trainer.task")
    assert res.returncode == 1
    assert "--package-path:1:1: error: python_package.source '../nope' does not exist" in res.stderr
    res = _convert(spec, "--package-path", "code", "--module-name", "trainer.nope")
    assert res.returncode == 1
    assert "--module-name:1:1: error: module trainer.nope is not in source '../code'" in res.stderr


def test_the_conversion_takes_the_flags_as_an_argument() -> None:
    """No stand-in URI passes through the document: it stays as written, the pools get source and module."""
    document, _ = load_text(LEGACY, "cfg/config.yaml", environ={})
    assert document is not None
    written = copy.deepcopy(document.data)
    native, diags = formats.to_native(document, package=PackageFlags("../code", "trainer.task"))
    assert native is not None and not [d for d in diags if d.severity == "error"]
    assert document.data == written
    assert native.data["chief"]["python_package"] == {
        "executor_image": "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11:latest",
        "module": "trainer.task", "source": "../code"}
    source = native.where(("chief", "python_package", "source"))
    assert (source["path"], source["file"], source["line"]) == ("trainingInput.packageUris", "--package-path", 1)
    module = native.where(("chief", "python_package", "module"))
    assert (module["path"], module["file"], module["line"]) == ("trainingInput.pythonModule", "--module-name", 1)


def test_the_flags_refuse_a_native_document() -> None:
    document, _ = load_text("display_name: x\n", "job.yaml", environ={})
    assert document is not None
    with pytest.raises(UsageError, match="legacy"):
        formats.to_native(document, package=PackageFlags("code", "trainer.task"))
