"""Another local user, for real: commands run as ``nobody`` (uid/gid 65534) under
``setpriv``, in a folder both users can reach. A test that needs one skips, saying why,
where that is impossible (not root, or no setpriv)."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

#: nobody's uid and gid (Debian, Ubuntu, Fedora, Alpine alike).
NOBODY = 65534


def need_another_user() -> None:
    """Skip the test, with the reason, when it cannot act as another user here."""
    if os.geteuid() != 0:
        pytest.skip("acting as another local user (setpriv --reuid) needs root")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")


def as_nobody(argv: list[str], stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """Run ``argv`` as nobody, without root's groups; its result (never raises for its exit)."""
    command = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *argv]
    return subprocess.run(command, input=stdin, capture_output=True, timeout=60, check=False)


def write_as_nobody(path: Path, data: bytes) -> subprocess.CompletedProcess[bytes]:
    """Write ``data`` to ``path`` as nobody would (a file nobody owns; refused where nobody may not)."""
    return as_nobody(["sh", "-c", 'cat > "$1"', "sh", str(path)], data)


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A fresh folder under the system's temporary folder that nobody can reach (mode 0755,
    root's), removed after (whatever nobody left in it)."""
    base = Path(tempfile.mkdtemp(prefix="vxtrain-two-users-", dir="/tmp"))
    base.chmod(0o755)
    try:
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)
