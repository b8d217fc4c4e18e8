"""The spec's folder (vxtrain.loading.document.spec_folder): relative paths in a spec
(``python_package.source``, ``local.workdir``, ``--package-path``) resolve against the
spec file's folder, or the current directory for a spec read from standard input
(``-``). Every user asks the one function, so they agree.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import vxtrain
from vxtrain import api, jobplan
from vxtrain.formats import package_flags
from vxtrain.loading.document import STDIN, Document, spec_folder

ROOT = Path(__file__).resolve().parent.parent
IMAGE = "us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-17.py310:latest"
SPEC = f"""display_name: t
chief:
  machine_type: n1-standard-4
  python_package: {{executor_image: "{IMAGE}", module: trainer.task, source: pkg}}
local:
  workdir: run
"""


def test_a_file_resolves_against_its_folder_and_stdin_against_the_current_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert spec_folder("specs/job.yaml") == tmp_path / "specs"
    assert spec_folder(str(tmp_path / "a" / "job.yaml")) == tmp_path / "a"
    assert spec_folder(STDIN) == spec_folder("") == tmp_path
    assert Document({}, STDIN).folder == tmp_path


@pytest.fixture
def stdin_spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The current directory (returned) holds ``pkg/`` and ``run/``, and a ``-`` that is a
    link to a spec file elsewhere: a path that resolves somewhere else than the current
    directory, which ``-`` stands for. Each user of the spec's folder must take the
    current directory."""
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    (here / "pkg" / "trainer").mkdir(parents=True)
    (here / "pkg" / "trainer" / "__init__.py").write_text("")
    (here / "pkg" / "trainer" / "task.py").write_text("import os; print('task in', os.getcwd())\n")
    (here / "run").mkdir()
    elsewhere.mkdir()
    (elsewhere / "job.yaml").write_text(SPEC)
    (here / STDIN).symlink_to(elsewhere / "job.yaml")
    monkeypatch.chdir(here)
    return here


def test_validation_and_packaging_resolve_source_against_the_current_directory(stdin_spec: Path) -> None:
    result = vxtrain.plan(STDIN)
    assert result.valid, [d.message for d in result.diagnostics]  # package_rules found pkg/trainer/task.py
    assert [p.source.path for p in result.packages] == [stdin_spec / "pkg"]


def test_a_local_submit_runs_in_the_current_directory(stdin_spec: Path) -> None:
    assert jobplan.local_run(vxtrain.plan(STDIN)).base_dir == str(stdin_spec)


@pytest.mark.slow
def test_local_run_works_in_the_current_directory(stdin_spec: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "vxtrain", "local-run", STDIN], cwd=stdin_spec,
                          capture_output=True, text=True, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                                             "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"task in {stdin_spec / 'run'}" in done.stdout


def test_package_path_is_made_relative_to_the_current_directory(stdin_spec: Path) -> None:
    document = Document({"trainingInput": {"scaleTier": "BASIC"}}, STDIN)
    flags = package_flags.from_flags(document, str(stdin_spec / "pkg"), "trainer.task")
    assert flags == package_flags.PackageFlags("pkg", "trainer.task")
