"""Every Python that ``requires-python`` admits installs from the lock by the README's command.

The README tells a new user to make a venv, ``pip install -c requirements/lock.txt -e
'.[test]'`` and run the quickstart. One lock serves every admitted Python, so that
command must work unchanged on each: here it runs, one Python after another, in a fresh
venv per interpreter found on this machine (``python3.X`` on PATH and pyenv's
versions), and the quickstart must succeed. pip must refuse a Python below the floor
naming the Python the project requires.
"""
from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import signal
import subprocess
import time
import tomllib
from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from tests.environment import under_ci

ROOT = Path(__file__).resolve().parent.parent
#: The README's install and quickstart commands, as a reader types them in the venv.
INSTALL = "pip install -c requirements/lock.txt -e '.[test]'"
QUICKSTART = "vxtrain submit configs/examples/quickstart.yaml --target local --wait"
#: Prints the version and the interpreter's real path; fails, and so drops the candidate,
#: inside a venv (its base Python stands for it, found on its own, as a new user has no
#: venv yet) and without venv and ensurepip (Debian's python3 lacks them until
#: python3-venv is installed).
PROBE = ("import sys, venv, ensurepip; assert sys.prefix == sys.base_prefix; "
         "print('%d.%d.%d' % sys.version_info[:3]); print(sys.executable)")
#: Seconds: a cold pip cache downloads ~100 packages; the quickstart takes ~4 s.
INSTALL_TIMEOUT = 600
QUICKSTART_TIMEOUT = 120


def requires_python() -> SpecifierSet:
    """The ``requires-python`` of pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return SpecifierSet(project["requires-python"])


def floor() -> Version:
    """The oldest Python ``requires-python`` admits (its ``>=`` bound)."""
    bounds = [Version(s.version) for s in requires_python() if s.operator == ">="]
    assert len(bounds) == 1, f"requires-python has one >= bound: {requires_python()}"
    return bounds[0]


def _pyenv_root() -> Path:
    """Where pyenv keeps its Pythons, whether or not pyenv is installed."""
    return Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")


def _candidates() -> list[str]:
    """Interpreters a user might make the venv with: ``python3.X`` on PATH, then pyenv's."""
    shims = _pyenv_root() / "shims"
    found: list[str] = []
    # Every PATH entry, not the first match only: a venv first on PATH (CI's) hides the
    # system's python3.X behind its own, which the probe drops. pyenv's shims are
    # skipped (~0.2 s each, and each runs only the version pyenv selects): its versions
    # are searched directly below; without pyenv nothing is found there.
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if folder and Path(folder) != shims:
            found += [str(p) for p in sorted(Path(folder).glob("python3.*"))
                      if re.fullmatch(r"python3\.\d+", p.name) and os.access(p, os.X_OK)]
    found += [str(p) for p in sorted((_pyenv_root() / "versions").glob("*/bin/python3"))]
    return found


def _probe(path: str) -> tuple[Version, str] | None:
    """The version and real executable of ``path``, or None when it is no base Python
    able to make a venv (see ``PROBE``) or does not run at all."""
    try:
        done = subprocess.run([path, "-c", PROBE], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2:
        return None
    return Version(lines[0]), lines[1]


@functools.cache
def interpreters() -> dict[str, str]:
    """One interpreter per ``major.minor`` found here (the first found wins)."""
    by_minor: dict[str, str] = {}
    for path in _candidates():
        probed = _probe(path)
        if probed is not None:
            by_minor.setdefault(f"{probed[0].major}.{probed[0].minor}", probed[1])
    return dict(sorted(by_minor.items(), key=lambda item: Version(item[0])))


def admitted() -> dict[str, str]:
    """The interpreters found here that ``requires-python`` admits."""
    return {minor: path for minor, path in interpreters().items() if requires_python().contains(minor)}


def _run(cmd: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run ``cmd`` from the repository root in its own process group, output captured.

    On a timeout the whole group is killed (the quickstart's replicas and pip's build
    backends are grandchildren that ``subprocess.run`` would leave running), and the
    timeout is raised.
    """
    with subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, start_new_session=True) as proc:
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, None)


def _fresh_venv(python: str, where: Path) -> dict[str, str]:
    """A new venv made by ``python``; returns the environment ``activate`` would give."""
    subprocess.run([python, "-m", "venv", str(where)], check=True, capture_output=True, timeout=120)
    env = {k: v for k, v in os.environ.items()
           # This test's own venv and Python settings must not leak into the new one.
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
    env["VIRTUAL_ENV"] = str(where)
    env["PATH"] = f"{where / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    return env


def _in_venv(command: str, venv: Path, *extra: str) -> list[str]:
    """A README command line as argv, its program taken from the venv (as PATH has it there)."""
    program, *args = shlex.split(command)
    return [str(venv / "bin" / program), *args, *extra]


def test_the_readme_gives_these_commands() -> None:
    """What the slow test below runs is what the README tells a new user to run."""
    readme = (ROOT / "README.md").read_text()
    assert INSTALL in readme and QUICKSTART in readme


def test_requires_python_is_a_floor_only() -> None:
    """No upper cap (a cap blocks the next Python for no reason); mypy checks at the floor."""
    assert [str(s) for s in requires_python()] == [f">={floor()}"]
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["python_version"] == f"{floor().major}.{floor().minor}"


def test_ci_finds_several_pythons() -> None:
    """Under CI the install test below must not pass vacuously: two admitted Pythons at least."""
    found = admitted()
    if len(found) < 2:
        reason = (f"admitted Pythons found here: {sorted(found) or 'none'}; the install "
                  "check needs two at least (python3.X on PATH or pyenv)")
        if under_ci():
            pytest.fail(reason)
        pytest.skip(reason)


@pytest.mark.slow
@pytest.mark.parametrize("minor", list(admitted()))
def test_the_readme_install_runs_the_quickstart(minor: str, tmp_path: Path) -> None:
    """A fresh venv, the README's install command (pip's cache used), then the quickstart."""
    venv = tmp_path / "venv"
    start = time.monotonic()
    env = _fresh_venv(admitted()[minor], venv)
    installed = _run(_in_venv(INSTALL, venv, "--quiet"), env, INSTALL_TIMEOUT)
    install_s = time.monotonic() - start
    assert installed.returncode == 0, f"Python {minor}: {INSTALL}\n{installed.stdout}"
    ran = _run(_in_venv(QUICKSTART, venv), env, QUICKSTART_TIMEOUT)
    print(f"Python {minor}: install {install_s:.0f} s, quickstart {time.monotonic() - start - install_s:.0f} s")
    assert ran.returncode == 0, f"Python {minor}: {QUICKSTART}\n{ran.stdout}"
    assert "JOB_STATE_SUCCEEDED" in ran.stdout


@pytest.mark.slow
def test_a_python_below_the_floor_is_refused_by_name(tmp_path: Path) -> None:
    """pip, as a fresh venv of the newest Python below the floor has it, refuses the project
    saying which Python it requires (a few seconds: ``--dry-run`` builds the metadata only).

    ``--no-deps``: the pip such a venv bundles (23.0 with CPython 3.10.13; Ubuntu 22.04's is
    22.0) resolves the test extra's requirements before the project's Requires-Python, so
    the README's full command reports a ``ResolutionImpossible`` against the lock instead
    (current pip, 26.3, names the Python for the full command too).
    """
    below = {minor: path for minor, path in interpreters().items() if Version(minor) < floor()}
    if not below:
        pytest.skip(f"no Python older than {floor()} found here")
    minor, python = max(below.items(), key=lambda item: Version(item[0]))
    venv = tmp_path / "venv"
    env = _fresh_venv(python, venv)
    start = time.monotonic()
    refused = _run([str(venv / "bin" / "pip"), "install", "--dry-run", "--no-deps", "-e", "."], env, 120)
    print(f"Python {minor}: refused in {time.monotonic() - start:.0f} s")
    assert refused.returncode != 0
    said = rf"requires a different Python: {re.escape(minor)}\.\d+ not in '{re.escape(str(requires_python()))}'"
    assert re.search(said, refused.stdout), refused.stdout
