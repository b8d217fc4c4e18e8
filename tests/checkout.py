"""This checkout as git would hand it out: for tests that install or package vxtrain from its
own tree (the action's install step, vxtrain's own image, pre-commit's try-repo)."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def snapshot(dest: Path) -> Path:
    """The files of this tree that git would check out (tracked and untracked, not ignored),
    copied under ``dest`` (so uncommitted changes are tested too); ``dest``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=ROOT, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        if (ROOT / rel).is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, dest / rel)
    return dest
