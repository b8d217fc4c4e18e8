"""The lock (requirements/lock.txt) pins what pyproject.toml asks for, and CI installed it.

The package's ranges stay open; the lock holds one exact version of every package the
test extra and the real frameworks pull in (scripts/lock.py writes it). Checked here,
without a network: every line is an exact pin, every requirement of the package and its
test extra is pinned inside its range, and the running environment holds exactly the
locked versions of everything it reaches from those requirements (under CI a mismatch
fails: CI must have installed from the lock).
"""
from __future__ import annotations

import re
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from tests.environment import under_ci

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
LOCK_ARG = "-c requirements/lock.txt"
#: The real-framework packages .ci/run installs from the lock; tf-keras without its dependencies.
FRAMEWORKS = ("torch", "tensorflow-cpu")
NO_DEPS = ("tf-keras",)
_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s=;]+)$")


def locked() -> dict[str, Version]:
    """The lock's pins, by canonical name."""
    pins: dict[str, Version] = {}
    for line in LOCK.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        match = _PIN.match(line)
        assert match, f"not an exact pin (name==version): {line!r}"
        name = canonicalize_name(match[1])
        assert name not in pins, f"{name} pinned twice"
        pins[name] = Version(match[2])
    return pins


def lock_python() -> str:
    """The Python (major.minor) the lock was resolved under, from its header."""
    found = re.search(r"under CPython (\d+\.\d+)", LOCK.read_text())
    assert found, "the lock's header names the Python it was resolved under"
    return found[1]


def declared() -> list[Requirement]:
    """The package's own requirements and its test extra's, from pyproject.toml."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return [Requirement(r) for r in project["dependencies"] + project["optional-dependencies"]["test"]]


def test_every_line_is_an_exact_pin() -> None:
    assert len(locked()) > 50  # the whole tested set, not just the direct requirements


def test_every_requirement_is_pinned_inside_its_range() -> None:
    pins = locked()
    unpinned = [str(r) for r in declared() if canonicalize_name(r.name) not in pins]
    outside = [f"{r} (locked {pins[canonicalize_name(r.name)]})" for r in declared()
               if canonicalize_name(r.name) in pins
               and not r.specifier.contains(pins[canonicalize_name(r.name)], prereleases=True)]
    assert (unpinned, outside) == ([], [])


def test_the_lock_is_resolved_under_the_oldest_admitted_python() -> None:
    """Every pin then supports the floor; newer Pythons install the same lock
    (scripts/lock.py --verify --python ..., and tests/test_installs.py, check that)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    floors = [s.version for s in SpecifierSet(project["requires-python"]) if s.operator == ">="]
    assert floors == [lock_python()]


def test_the_ranges_stay_open() -> None:
    """pyproject.toml gives ranges, never the lock's exact versions (users' installs resolve)."""
    assert [str(r) for r in declared() if any(s.operator in ("==", "===") for s in r.specifier)] == []


def test_readme_and_ci_install_from_the_lock() -> None:
    """The README's install command and .ci/run install the test extra and the frameworks with the lock."""
    pins = locked()
    assert [name for name in FRAMEWORKS + NO_DEPS if name not in pins] == []
    for path in (ROOT / "README.md", ROOT / ".ci" / "run"):
        installs = [line for line in path.read_text().splitlines() if "pip install" in line
                    and any(what in line for what in ("'.[test]'",) + FRAMEWORKS + NO_DEPS)]
        assert [line for line in installs if LOCK_ARG not in line] == [], path.name
        for what in ("'.[test]'",) + FRAMEWORKS + NO_DEPS:
            assert any(what in line for line in installs), f"{path.name} installs {what}"


def _reached() -> tuple[dict[str, str], list[str]]:
    """Every distribution the declared requirements (and installed frameworks) reach here.

    Returns installed versions by canonical name, and the requirements reached but not
    installed. Markers are evaluated for this interpreter; extras are followed.
    """
    found: dict[str, str] = {}
    missing: list[str] = []
    todo: list[tuple[Requirement, str]] = [(r, "") for r in declared()]
    for name in FRAMEWORKS + NO_DEPS:
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        todo.append((Requirement(name), ""))
    followed: set[tuple[str, str]] = set()
    while todo:
        req, extra = todo.pop()
        if req.marker and not req.marker.evaluate({"extra": extra}):
            continue
        name = canonicalize_name(req.name)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(str(req))
            continue
        found[name] = dist.version
        if name in NO_DEPS:
            continue  # installed without its dependencies (they would pull the full tensorflow)
        for wanted in {"", *req.extras} - {e for n, e in followed if n == name}:
            followed.add((name, wanted))
            todo += [(Requirement(sub), wanted) for sub in dist.requires or []]
    return found, missing


def test_this_environment_holds_exactly_the_lock() -> None:
    """Everything reached from pyproject's requirements is installed at its locked version."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    if here != lock_python():
        reason = f"the lock is resolved for Python {lock_python()}, this is {here}"
        if under_ci():
            pytest.fail(reason + " (CI runs the lock's Python)")
        pytest.skip(reason)
    pins = locked()
    found, missing = _reached()
    problems = [f"{req}: not installed" for req in missing]
    for name, version in sorted(found.items()):
        if name not in pins:
            problems.append(f"{name} {version}: not in the lock (run scripts/lock.py)")
        elif Version(version).public != pins[name].public:
            problems.append(f"{name} {version}: the lock has {pins[name]}")
    if problems and not under_ci():
        pytest.skip("this environment was not installed from the lock (CI checks it): " + "; ".join(problems))
    assert problems == []
