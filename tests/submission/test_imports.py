"""What a submit imports (the submit budget, README "Performance"): a spec without
``build:`` or ``python_package.source`` never loads the push code (vxtrain.images.publish:
dxf and the registry client, ~140 ms), the image recipe, the sdist builder or PyPA's
``build``; a spec with them does (so the check below can fail)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from vxtrain.backends.emulator import EmulatorHandle
from tests.submission.test_ladder import emulator, spec  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[2]

_LOADED = """
import os, sys
from vxtrain.cli import main
code = main(sys.argv[1:])
print(code, " ".join(sorted(m for m in sys.modules if m in os.environ["WATCHED"].split(","))))
"""
PUSH_CODE = ("vxtrain.images.publish", "vxtrain.images.recipe", "vxtrain.packaging.sdists", "dxf", "build")


def _loaded(emulator: EmulatorHandle, *argv: str) -> tuple[str, list[str]]:
    env = {**os.environ, **emulator.gcloud_environment(), "PYTHONPATH": str(ROOT), "WATCHED": ",".join(PUSH_CODE)}
    done = subprocess.run([sys.executable, "-c", _LOADED, *argv], capture_output=True,
                          text=True, env=env, cwd=ROOT, timeout=120, check=False)
    assert done.stdout.strip(), done.stderr[-2000:]
    code, *names = done.stdout.splitlines()[-1].split()
    return code, names


@pytest.mark.slow
def test_a_submit_without_images_or_packages_never_loads_the_push_code(
        emulator: EmulatorHandle, tmp_path: Path) -> None:  # noqa: F811
    path = str(spec(tmp_path, fallback=False))
    code, names = _loaded(emulator, "submit", path, "--endpoint", emulator.address, "--no-quota-check")
    assert code == "0" and names == [], names


@pytest.mark.slow
def test_a_submit_with_a_build_image_loads_it(emulator: EmulatorHandle, tmp_path: Path) -> None:  # noqa: F811
    """The counterpart: with ``build:`` and no image repository, submit stops before any push
    (exit 1) and yet has read the recipe; the check above would see it."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('hi')\n")
    text = json.loads(spec(tmp_path, fallback=False).read_text())
    del text["chief"]["image"]
    text["chief"]["build"] = {"source": "src", "base": "python:3.12-slim@sha256:" + "0" * 64}
    path = tmp_path / "built.yaml"
    path.write_text(json.dumps(text))
    code, names = _loaded(emulator, "submit", str(path), "--endpoint", emulator.address, "--no-quota-check")
    assert "vxtrain.images.recipe" in names, (code, names)
