"""``--set`` obeys the loader's depth limit (vxtrain.loading.limits.MAX_DEPTH), as files do."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.loading.helpers import NO_ENV, write
from vxtrain.loading import load
from vxtrain.loading.limits import MAX_DEPTH

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("arg", [
    "extra." + ".".join(["a"] * 1500) + "=1",           # a deep key path
    "a" + "[0]" * MAX_DEPTH + "=1",                     # indices nest too
    ".".join(["a"] * (MAX_DEPTH - 1)) + "={b: {c: 1}}",  # the path, then the value's own nesting
])
def test_a_set_deeper_than_the_limit_is_a_located_error(tmp_path: Path, arg: str) -> None:
    base = write(tmp_path, "base.yaml", "name: x\n")
    doc, diags = load(base, sets=["ok=1", arg], environ=NO_ENV)
    assert doc is None
    assert [d.code for d in diags] == ["too-deep"]
    assert (diags[0].file, diags[0].line, diags[0].column) == ("--set", 1, 2)
    assert f"deeper than {MAX_DEPTH}" in diags[0].message and len(diags[0].message) < 200


def test_a_set_at_the_limit_is_accepted(tmp_path: Path) -> None:
    base = write(tmp_path, "base.yaml", "name: x\n")
    doc, diags = load(base, sets=[".".join(["a"] * MAX_DEPTH) + "=1"], environ=NO_ENV)
    assert diags == [] and doc is not None


def test_the_cli_says_so_and_exits_1(tmp_path: Path) -> None:
    spec = write(tmp_path, "job.yaml", "display_name: x\nchief: {machine_type: n1-standard-4, image: i}\n")
    done = subprocess.run([sys.executable, "-m", "vxtrain", "validate", str(spec), "--set",
                           "extra." + ".".join(["a"] * 1500) + "=1"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "--set:1:1: error:" in out and "[too-deep]" in out
    assert "unexpected error" not in out and "RecursionError" not in out
