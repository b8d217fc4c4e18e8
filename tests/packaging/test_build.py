"""Building a source folder into an sdist that pip installs and that provides the module."""
from __future__ import annotations

import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from vxtrain.packaging.build import PackageBuildError, build_sdist
from vxtrain.sources.folder import describe

pytestmark = pytest.mark.slow


def _install_and_run(sdist: Path, target: Path) -> str:
    """pip install the sdist (offline: no deps, no build isolation) and run trainer.task from it."""
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--disable-pip-version-check", "--no-index", "--target", str(target), str(sdist)],
                   check=True, capture_output=True, text=True)
    res = subprocess.run([sys.executable, "-m", "trainer.task", "--epochs=1"], cwd=target.parent,
                         env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                         check=True, capture_output=True, text=True)
    return res.stdout


@pytest.mark.parametrize("kind", ["bare", "project"])
def test_sdist_installs_and_provides_the_module(kind: str, bare_source: Path, project_source: Path,
                                                tmp_path: Path) -> None:
    folder = bare_source if kind == "bare" else project_source
    before = sorted(p.relative_to(folder) for p in folder.rglob("*"))
    sdist = build_sdist(describe(folder), tmp_path / "out")
    assert sdist.is_file() and sdist.name.endswith(".tar.gz")
    out = _install_and_run(sdist, tmp_path / "site")
    installed = tmp_path / "site" / "trainer" / "task.py"
    assert out.split()[:2] == ["TRAINED", "42"] and out.split()[2] == str(installed)
    if kind == "bare":  # the generated project ships data files; a project decides for itself
        assert (tmp_path / "site" / "trainer" / "config.yaml").read_text() == "lr: 0.1\n"
    assert sorted(p.relative_to(folder) for p in folder.rglob("*")) == before  # the user's folder untouched


def test_sdist_holds_only_the_hashed_files(bare_source: Path, tmp_path: Path) -> None:
    (bare_source / "trainer" / "__pycache__").mkdir()
    (bare_source / "trainer" / "__pycache__" / "task.cpython-311.pyc").write_bytes(b"\0")
    (bare_source / ".venv").mkdir()
    (bare_source / ".venv" / "junk.py").write_text("")
    sdist = build_sdist(describe(bare_source), tmp_path / "out")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert {"trainer/task.py", "trainer/config.yaml", "setup.py"} <= names
    assert not any("__pycache__" in n or ".venv" in n for n in names)


def test_the_exec_bit_the_hash_counts_reaches_the_sdist_and_the_installed_file(bare_source: Path,
                                                                             tmp_path: Path) -> None:
    """The source hash holds the exec bit (a chmod +x is a new package URI): the sdist carries it,
    and pip installs the script executable; a file without it stays 0644 (group/other bits
    and the umask never count)."""
    script = bare_source / "trainer" / "run.sh"
    script.write_text("#!/bin/sh\necho ran\n")
    script.chmod(0o700)
    (bare_source / "trainer" / "config.yaml").chmod(0o600)
    sdist = build_sdist(describe(bare_source), tmp_path / "out")
    with tarfile.open(sdist) as tar:
        modes = {n.split("/", 1)[1]: m.mode & 0o777 for n, m in zip(tar.getnames(), tar.getmembers()) if "/" in n}
    assert (modes["trainer/run.sh"], modes["trainer/config.yaml"]) == (0o755, 0o644)
    _install_and_run(sdist, tmp_path / "site")
    installed = tmp_path / "site" / "trainer" / "run.sh"
    assert installed.stat().st_mode & 0o111
    assert subprocess.run([str(installed)], capture_output=True, text=True, check=True).stdout == "ran\n"


def test_a_broken_project_is_a_build_error_with_the_backend_output(project_source: Path, tmp_path: Path) -> None:
    (project_source / "setup.py").write_text("raise SystemExit('this setup.py is broken on purpose')\n")
    with pytest.raises(PackageBuildError) as err:
        build_sdist(describe(project_source), tmp_path / "out")
    assert "broken on purpose" in str(err.value) and str(project_source) in str(err.value)
