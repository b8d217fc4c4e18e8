"""The package type-checks: ``mypy --strict`` over vxtrain/ (pyproject.toml's [tool.mypy]
says ``strict = true`` too, so a bare ``mypy`` in an editor checks the same)."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_mypy_strict_finds_no_issues() -> None:
    pytest.importorskip("mypy", reason="pip install mypy (the test extra)")
    res = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--cache-dir", "/dev/null"],
                         cwd=ROOT, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def _all_of(tree: ast.Module) -> ast.expr | None:
    """The value assigned to ``__all__`` at the module's top, if any."""
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            return node.value
    return None


def test_every_all_is_a_literal_sorted_list() -> None:
    """mypy (and a reader) sees a module's exports only in a literal ``__all__``; sorted, it has
    one place for each new name."""
    wrong = []
    for path in sorted((ROOT / "vxtrain").rglob("*.py")):
        value = _all_of(ast.parse(path.read_text(encoding="utf-8")))
        if value is None:
            continue
        names = [e.value for e in value.elts if isinstance(e, ast.Constant)] if isinstance(value, ast.List) else None
        if names is None or len(names) != len(value.elts):
            wrong.append(f"{path.relative_to(ROOT)}: __all__ is not a literal list of strings")
        elif names != sorted(names):
            wrong.append(f"{path.relative_to(ROOT)}: __all__ is not sorted")
    assert wrong == []
