"""vxtrain is publishable: the license file and its metadata, the classifiers, and a
source distribution that carries what the tests read and whose tests run.

The sdist test builds from a copy of this tree, offline (``--no-isolation``: this
environment's setuptools, the one the lock pins), unpacks the archive and runs a few
test files there with this interpreter against the unpacked copy of the package.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pytest itself depends on tomli before 3.11
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
#: sha256 of the Apache License 2.0 as https://www.apache.org/licenses/LICENSE-2.0.txt
#: gives it (the appendix's placeholders included).
APACHE_2_SHA256 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
#: What the unpacked sdist runs: the pure core, the bad-input corpus (tests/data), and
#: the README's examples (README.md, configs/). About 20 s.
SDIST_TESTS = ["tests/test_slots.py", "tests/test_compiler.py", "tests/test_bad_corpus.py",
               "tests/test_readme.py"]
#: Paths (relative, '/'-separated) a copy of the tree leaves out: local state, never sources.
_LOCAL = {".git", ".venv", ".ci/venv", "build", "dist", ".pytest_cache", ".hypothesis", ".vxtrain"}


def _pyproject() -> dict[str, dict[str, object]]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def test_the_license_file_is_the_apache_license_2_0() -> None:
    assert hashlib.sha256((ROOT / "LICENSE").read_bytes()).hexdigest() == APACHE_2_SHA256


def test_the_license_is_declared_as_an_spdx_expression() -> None:
    """PEP 639: ``license`` is an SPDX expression and ``license-files`` names the file;
    no License classifier beside it (setuptools refuses both). Only setuptools 77 and
    later read that form."""
    meta = _pyproject()
    project = meta["project"]
    assert project["license"] == "Apache-2.0"
    assert project["license-files"] == ["LICENSE"]
    assert [c for c in project["classifiers"] if c.startswith("License ::")] == []
    (setuptools,) = [Requirement(r) for r in meta["build-system"]["requires"]
                     if Requirement(r).name == "setuptools"]
    floors = [Version(s.version) for s in setuptools.specifier if s.operator == ">="]
    assert floors and floors[0] >= Version("77")


def _copy_ignoring_local_state(src: Path, dst: Path) -> None:
    def ignore(folder: str, names: list[str]) -> set[str]:
        rel = Path(folder).relative_to(src)
        return {n for n in names
                if (rel / n).as_posix().removeprefix("./") in _LOCAL
                or n == "__pycache__" or n.endswith(".egg-info") or n.endswith(".pyc")}
    shutil.copytree(src, dst, ignore=ignore, symlinks=True)


def _tracked() -> set[str] | None:
    """The files git tracks here, or None outside a git checkout."""
    if shutil.which("git") is None:
        return None
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0 or not (ROOT / ".git").exists():
        return None
    return {name for name in listed.stdout.splitlines() if (ROOT / name).is_file()}


@pytest.mark.slow
def test_the_sdist_carries_the_tests_and_they_run(tmp_path: Path) -> None:
    source, out, unpacked = tmp_path / "source", tmp_path / "dist", tmp_path / "unpacked"
    _copy_ignoring_local_state(ROOT, source)
    built = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation",
                            "--outdir", str(out), str(source)],
                           capture_output=True, text=True, timeout=300)
    log = built.stdout + built.stderr
    assert built.returncode == 0, log
    # The old `license = {text = ...}` table made setuptools warn that it stops
    # working in 2027; no deprecation of our packaging configuration is left.
    assert "SetuptoolsDeprecationWarning" not in log, log

    (archive,) = out.glob("vxtrain-*.tar.gz")
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(unpacked, filter="data")
        else:  # Pythons without extraction filters (before 3.11.4)
            tar.extractall(unpacked)  # noqa: S202 (our own archive, just built)
    (top,) = unpacked.iterdir()
    names = {p.relative_to(top).as_posix() for p in top.rglob("*") if p.is_file()}

    info = Parser().parsestr((top / "PKG-INFO").read_text())
    assert info["License-Expression"] == "Apache-2.0"
    assert info.get_all("License-File") == ["LICENSE"]
    assert info.get_all("Classifier") == _pyproject()["project"]["classifiers"]
    assert (top / "LICENSE").read_bytes() == (ROOT / "LICENSE").read_bytes()

    # Everything the repository tracks ships, so every test finds what it reads.
    tracked = _tracked()
    if tracked is not None:
        assert sorted(tracked - names - {".gitignore"}) == []
    else:  # an unpacked sdist: spot checks
        assert {"tests/conftest.py", "configs/examples/quickstart.yaml", "requirements/lock.txt",
                ".ci/run", ".pre-commit-hooks.yaml", "docs/spec-reference.md"} <= names
    assert [n for n in names if "__pycache__" in n or n.endswith(".pyc")] == []

    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(top)
    where = subprocess.run([sys.executable, "-c", "import vxtrain; print(vxtrain.__file__)"],
                           cwd=top, env=env, capture_output=True, text=True, check=True)
    assert Path(where.stdout.strip()).is_relative_to(top), where.stdout
    ran = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          *SDIST_TESTS], cwd=top, env=env, capture_output=True, text=True,
                         timeout=300)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
