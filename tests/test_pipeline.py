"""The check pipeline (vxtrain/pipeline.py): the model the rules checked is never changed
by what comes after them (sizing the Reduction Server, resolving package and image URIs,
compiling, submitting); each of those makes a new model."""
from __future__ import annotations

import copy
import shutil
from pathlib import Path
from typing import Any

import pytest

import vxtrain
from vxtrain import model, pipeline
from vxtrain.validation import rules

ROOT = Path(__file__).resolve().parent.parent
LAPTOP = ROOT / "configs" / "examples" / "laptop"

#: A job every resolver touches: an auto-sized Reduction Server (bandwidth.resolve), a
#: source package (packaging.sdists.resolve) and an image built from a folder (images.recipe.resolve).
SPEC = """\
display_name: untouched
image_repository: registry.example/team/train
staging_bucket: gs://bucket/staging
chief:
  machine_type: a2-highgpu-8g
  accelerator: {type: NVIDIA_TESLA_A100, count: 8}
  python_package:
    executor_image: us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310:latest
    module: trainer.task
    source: laptop
workers:
  replicas: 1
  machine_type: a2-highgpu-8g
  accelerator: {type: NVIDIA_TESLA_A100, count: 8}
  build:
    base: us-docker.pkg.dev/vertex-ai/training/pytorch-gpu.2-4.py310@sha256:%s
    source: laptop
  command: [python, -m, trainer.task]
reduction_server:
  replicas: auto
"""


def _spec(tmp_path: Path) -> Path:
    shutil.copytree(LAPTOP, tmp_path / "laptop")
    path = tmp_path / "job.yaml"
    path.write_text(SPEC % ("0" * 64))
    return path


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> list[tuple[model.Job, model.Job]]:
    """Each model the (real) rules check, beside a deep copy of it made right then."""
    seen: list[tuple[model.Job, model.Job]] = []
    real = rules.check

    def spy(job: model.Job, *args: Any, **kwargs: Any) -> Any:
        seen.append((job, copy.deepcopy(job)))
        return real(job, *args, **kwargs)

    monkeypatch.setattr(rules, "check", spy)
    return seen


def test_every_resolver_makes_a_new_model(tmp_path: Path, checked: list[tuple[model.Job, model.Job]]) -> None:
    result = pipeline.load_job(_spec(tmp_path), vxtrain.Options(environ={}))
    [(job, before)] = checked
    assert job == before  # nothing after the rules changed what they checked
    assert result.job is not job and result.job is not None
    # ... while the compiled model carries what was resolved
    assert result.job.pools["reduction_server"].replicas and not job.pools["reduction_server"].replicas
    assert result.job.pools["chief"].python_package.package_uris == [result.packages[0].uri]
    assert job.pools["chief"].python_package.package_uris == []
    assert result.job.pools["workers"].image == result.images[0].uri and job.pools["workers"].image is None


def test_a_submit_leaves_the_checked_model_as_it_was(tmp_path: Path,
                                                      checked: list[tuple[model.Job, model.Job]]) -> None:
    spec = _spec(tmp_path)
    # A job that runs here: the chief's package alone, no GPUs, no Reduction Server.
    spec.write_text("display_name: untouched\nstaging_bucket: gs://bucket/staging\nchief:\n"
                    "  machine_type: n1-standard-4\n  python_package:\n"
                    "    executor_image: us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-14.py310:latest\n"
                    "    module: trainer.task\n    source: laptop\n  args: [--epochs=1]\n")
    view = vxtrain.submit(spec, vxtrain.Options(environ={}), target="local")
    assert view["state"] == "JOB_STATE_SUCCEEDED"
    [(job, before)] = checked
    assert job == before


def test_a_file_gets_at_most_max_errors_whatever_stage_finds_them(tmp_path: Path) -> None:
    """The cap (docs/decisions.md, "Limits") held for the loader alone: 20,000 bad labels gave
    40,000 errors from the rules."""
    spec = tmp_path / "labels.yaml"
    spec.write_text("display_name: t\nchief: {machine_type: n1-standard-4, image: i}\nlabels:\n"
                    + "".join(f"  BAD{i}: X\n" for i in range(300)))
    found = pipeline.check_file(spec).diagnostics
    errors = [d for d in found if d.severity == "error"]
    assert len(errors) == 101 and errors[-1].code == "too-many-errors"
    assert errors[-1].message.startswith("stopped after 100 errors (501 more and 0 warnings not shown)")
    assert errors[-1].line is not None


TYPO_CHIEF = "chief: {machine_type: n1-standard-8, image: i}\n"


@pytest.mark.parametrize(("spec", "path"), [
    (TYPO_CHIEF + "workers: {replicas: 2, machine_typ: n1-standard-8, image: i}\n", "workers.machine_typ"),
    ("chief: {machine_type: n1-standard-8, imag: i}\n", "chief.imag"),
    ("chief: {machine_type: a2-highgpu-1g, image: i, acelerator: {type: NVIDIA_TESLA_A100}}\n", "chief.acelerator"),
    ("defaults: {imag: i}\nchief: {machine_type: n1-standard-4}\nworkers: {machine_type: n1-standard-4}\n",
     "defaults.imag"),
    ("chif: {machine_type: n1-standard-4, image: i}\n", "chif"),
    ("chief: {machine_type: n1-standard-4, image: i, accelerator: {typ: NVIDIA_TESLA_T4}}\n",
     "chief.accelerator.typ"),
    ("chief: {machine_type: n1-standard-4, python_package: {executor_image: us-docker.pkg.dev/vertex-ai/training/"
     "tf-cpu.2-14.py310:latest, modul: a.b, package_uris: ['gs://a/b.tar.gz']}}\n", "chief.python_package.modul"),
])
def test_a_misspelt_key_is_one_error_not_also_the_key_it_meant_missing(tmp_path: Path, spec: str, path: str) -> None:
    """`machine_typ:` gave "unknown key" and "workers has no machine_type": the second is only the first again."""
    (tmp_path / "job.yaml").write_text("display_name: typo\n" + spec)
    result = pipeline.check_file(tmp_path / "job.yaml", vxtrain.Options(environ={}))
    assert [(d.code, d.path) for d in result.diagnostics if d.severity == "error"] == [("unknown-key", path)]
    assert "did you mean" in result.diagnostics[0].message


def test_a_missing_key_is_still_said_beside_an_unknown_key_that_is_no_typo_of_it(tmp_path: Path) -> None:
    (tmp_path / "job.yaml").write_text("display_name: typo\n" + TYPO_CHIEF +
                                       "workers: {replicas: 2, image: i, colour: red}\n")
    result = pipeline.check_file(tmp_path / "job.yaml", vxtrain.Options(environ={}))
    assert sorted((d.code, d.path) for d in result.diagnostics if d.severity == "error") == [
        ("missing-machine-type", "workers"), ("unknown-key", "workers.colour")]
