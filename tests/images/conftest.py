"""The tests' registry (tests/registry.py: the CNCF distribution registry, Debian's
``docker-registry``, on loopback, once per session), reading back what was pushed, and
a tiny local wheel for the dependency layer.

Without the registry binary the tests skip saying how to install it; under CI=true
they fail instead (.ci/run installs it). Nothing here needs the network: pip
installs the test's own wheel (PIP_NO_INDEX, PIP_FIND_LINKS).
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import io
import os
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.images.bases import python_base  # noqa: F401 - a fixture: bases with a real Python
from tests.registry import (  # noqa: F401 - the tests import these from here
    ACCEPT, DOCKER_LIST, DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST, BaseImage, digest, push_base, push_blob, put_manifest,
    registry_binary, running_registry, tar_gz,
)


@pytest.fixture(scope="session")
def registry() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a registry started for this session (stopped at its end)."""
    binary = registry_binary()
    if binary is None:
        reason = "no docker-registry binary: apt-get install -y docker-registry (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    with running_registry(binary) as address:
        yield address


def get_manifest(host: str, repo: str, ref: str) -> tuple[dict[str, Any], bytes, requests.Response]:
    r = requests.get(f"http://{host}/v2/{repo}/manifests/{ref}", headers={"Accept": ACCEPT}, timeout=10)
    return (r.json() if r.ok else {}), r.content, r


def get_blob(host: str, repo: str, d: str) -> bytes:
    r = requests.get(f"http://{host}/v2/{repo}/blobs/{d}", timeout=10)
    assert r.status_code == 200, (d, r.status_code)
    return r.content


def layer_entries(blob: bytes) -> dict[str, tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        return {m.name: m for m in tar.getmembers()}


def layer_file(blob: bytes, name: str) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(gzip.decompress(blob))) as tar:
        f = tar.extractfile(name)
        assert f is not None
        return f.read()


def write_wheel(folder: Path, name: str = "tinydep", version: str = "1.0") -> Path:
    """A pure-Python wheel (``py3-none-any``) made by hand, with a console script: what the
    dependency layer installs."""
    folder.mkdir(parents=True, exist_ok=True)
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": f"VALUE = '{name} {version}'\n\n\ndef main() -> None:\n    print(VALUE)\n".encode(),
             f"{dist}/entry_points.txt": f"[console_scripts]\n{name}-cli = {name}:main\n".encode(),
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: vxtrain-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},{len(d)}\n"
                     for n, d in files.items()) + f"{dist}/RECORD,,\n"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for n, d in {**files, f"{dist}/RECORD": record.encode()}.items():
            z.writestr(zipfile.ZipInfo(n, (2020, 1, 1, 0, 0, 0)), d)
    return path


@pytest.fixture
def wheels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local folder pip installs from, with no index: the tests never reach the network."""
    folder = tmp_path / "wheels"
    write_wheel(folder)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(folder))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # the dependency layers' cache: the test's own
    return folder
