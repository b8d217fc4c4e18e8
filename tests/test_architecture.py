"""Dependencies point one way: the import-linter contracts in pyproject.toml hold.

``[tool.importlinter]`` lists the layers, top (cli) to bottom (diagnostics):
a module imports only from its own layer or below, imports inside functions
included. The second test shows the check is not vacuous: an upward import
slipped into a copy of the package breaks it. Without import-linter the checks
skip on a laptop but fail under CI (``CI`` set), where a skip would hide a broken layer.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.environment import under_ci

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.slow


def require_import_linter() -> None:
    """import-linter is in the test extra: missing, it fails under CI and skips elsewhere."""
    if importlib.util.find_spec("importlinter") is not None:
        return
    reason = "import-linter is not installed (it is in the test extra: pip install -e '.[test]')"
    if under_ci():
        pytest.fail(reason + "; under CI the import contracts must be checked, not skipped")
    pytest.skip(reason)


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """Run ``lint-imports`` on the package under ``root`` with ``root``'s pyproject.toml."""
    require_import_linter()
    code = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"
    return subprocess.run([sys.executable, "-c", code, "--no-cache", "--no-logo"], cwd=root,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})


def test_every_import_contract_is_kept() -> None:
    res = lint_imports(ROOT)
    assert res.returncode == 0, res.stdout + res.stderr


def test_an_upward_import_breaks_the_layers(tmp_path: Path) -> None:
    """A lazy import counts: model (near the bottom) reaching up to api breaks the contract."""
    shutil.copytree(ROOT / "vxtrain", tmp_path / "vxtrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    model = tmp_path / "vxtrain" / "model.py"
    model.write_text(model.read_text() + "\n\ndef _upward() -> None:\n    from vxtrain import api  # noqa\n")
    res = lint_imports(tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "vxtrain.model is not allowed to import vxtrain.api" in res.stdout


def test_validation_importing_push_code_breaks_its_contract(tmp_path: Path) -> None:
    """The layers allow validation (above images and packaging) to import them; the forbidden
    contract does not: a source folder's facts are read from vxtrain.sources."""
    shutil.copytree(ROOT / "vxtrain", tmp_path / "vxtrain",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    rules = tmp_path / "vxtrain" / "validation" / "package_rules.py"
    rules.write_text(rules.read_text() + "\n\ndef _push() -> None:\n    from vxtrain.packaging import sdists  # noqa\n")
    res = lint_imports(tmp_path)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "never the push code BROKEN" in res.stdout.replace("\n", " ")
    assert "vxtrain.validation.package_rules -> vxtrain.packaging.sdists" in res.stdout


def test_a_missing_import_linter_fails_under_ci_and_skips_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "importlinter" else find_spec(name, *args))
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI"):
        require_import_linter()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="import-linter is not installed"):
        require_import_linter()


#: What a user of this repository never has: planning notes kept beside it, and
#: paths of the machine it was written on.
_OUTSIDE = ("DESIGN" + ".md", "../" + "shared/", "shared/" + "reference", "/" + "work/")


def test_nothing_in_the_repository_points_outside_it() -> None:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    offenders = []
    for name in listed.stdout.splitlines():
        path = ROOT / name
        if not path.is_file() or path.suffix in (".png", ".gz"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        offenders += [f"{name}: {needle}" for needle in _OUTSIDE if needle in text]
    assert offenders == []


def _reason_for(lines: list[str], lineno: int) -> bool:
    """A comment on the import's line, or on the line that opens its run of imports
    (the line above it: a comment line, or an ``if``/``else`` that carries one)."""
    index = lineno - 1
    while True:
        if "#" in lines[index]:
            return True
        above = lines[index - 1].strip() if index else ""
        if above.startswith(("from ", "import ")):
            index -= 1
            continue
        return above.startswith("#") or ("#" in above and above.split("#")[0].rstrip().endswith(":"))


def test_every_import_inside_a_function_says_why() -> None:
    """An import inside a function exists to keep a command's start fast (or for an
    optional or version-dependent module), and says so; any other belongs at the top."""
    import ast

    silent = []
    for path in sorted((ROOT / "vxtrain").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines()
        for fn in ast.walk(ast.parse(text)):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and not _reason_for(lines, node.lineno):
                    silent.append(f"{path.relative_to(ROOT)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert silent == []


def test_an_import_without_its_reason_is_found() -> None:
    lines = ["def f():", "    x = 1", "    import json", "    # lazy: why", "    import yaml",
             "    import re", "    if x:  # 3.11 only", "        import tomllib"]
    assert [_reason_for(lines, n) for n in (3, 5, 6, 8)] == [False, True, True, True]
