"""A real registry (the CNCF distribution registry, Debian's ``docker-registry``) on loopback,
a tiny base image pushed to it, and a tiny local wheel for the dependency layer.

The registry runs as a plain process with its own config (127.0.0.1, a free
port, a temporary storage folder, no auth), once per session. Without the
binary the tests skip saying how to install it; under CI=true they fail
instead (.ci/run installs it). Nothing here needs the network: pip installs
the test's own wheel (PIP_NO_INDEX, PIP_FIND_LINKS).
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import shutil
import socket
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import requests

from tests.polling import wait_for

REGISTRY_BINARY = "docker-registry"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
ACCEPT = ", ".join((DOCKER_MANIFEST, DOCKER_LIST, OCI_MANIFEST, OCI_INDEX))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.ConnectionError:
        return False


@pytest.fixture(scope="session")
def registry() -> Iterator[str]:
    """``127.0.0.1:PORT`` of a registry started for this session (stopped at its end)."""
    binary = shutil.which(REGISTRY_BINARY) or (f"/usr/bin/{REGISTRY_BINARY}" if os.path.exists(
        f"/usr/bin/{REGISTRY_BINARY}") else None)
    if binary is None:
        reason = "no docker-registry binary: apt-get install -y docker-registry (.ci/run does)"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    root = Path(tempfile.mkdtemp(prefix="vxtrain-registry-"))
    port = _free_port()
    config = root / "config.yml"
    config.write_text(f"version: 0.1\nlog: {{level: error}}\nstorage:\n  filesystem: {{rootdirectory: {root / 'data'}}}\n"
                      f"  delete: {{enabled: true}}\nhttp: {{addr: 127.0.0.1:{port}}}\n")
    log = (root / "registry.log").open("wb")
    proc = subprocess.Popen([binary, "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: proc.poll() is not None or _answers(f"http://127.0.0.1:{port}/v2/"), 20,
                 "the registry to answer GET /v2/")
        assert proc.poll() is None, (root / "registry.log").read_text()
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def digest(data: bytes) -> str:
    """``sha256:<hex>``."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def tar_gz(files: dict[str, bytes]) -> tuple[bytes, bytes]:
    """(gzipped, tar) of ``files`` — the base's layer, written independently of vxtrain's code."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(raw.getvalue(), mtime=0), raw.getvalue()


def push_blob(host: str, repo: str, data: bytes) -> str:
    """POST then PUT ?digest= (the spec's monolithic upload), by hand."""
    d = digest(data)
    r = requests.post(f"http://{host}/v2/{repo}/blobs/uploads/", timeout=10)
    assert r.status_code == 202, r.text
    location = r.headers["Location"]
    sep = "&" if "?" in location else "?"
    url = location if location.startswith("http") else f"http://{host}{location}"
    r = requests.put(f"{url}{sep}digest={d}", data=data, headers={"Content-Type": "application/octet-stream"},
                     timeout=10)
    assert r.status_code == 201, r.text
    return d


def put_manifest(host: str, repo: str, ref: str, manifest: dict[str, Any]) -> bytes:
    body = json.dumps(manifest).encode()
    r = requests.put(f"http://{host}/v2/{repo}/manifests/{ref}", data=body,
                     headers={"Content-Type": manifest["mediaType"]}, timeout=10)
    assert r.status_code == 201, r.text
    return body


@dataclass
class BaseImage:
    """A base pushed by a test: its reference and what it is made of."""

    ref: str
    manifest: dict[str, Any]
    config: dict[str, Any]
    layer_digest: str


def push_base(host: str, repo: str, tag: str, *, oci: bool = False, index: bool = False,
              arch: str = "amd64") -> BaseImage:
    """A one-layer base (``opt/base/hello.txt``) with an Entrypoint, an Env and a PYTHONPATH;
    with ``index``, behind a manifest list/index that also lists an arm64 image."""
    layer, raw = tar_gz({"opt/base/hello.txt": f"base {tag}\n".encode()})
    config = {"architecture": arch, "os": "linux", "created": "2026-01-01T00:00:00Z",
              "config": {"Env": ["PATH=/usr/local/bin:/usr/bin", "PYTHONPATH=/opt/base"],
                         "Entrypoint": ["/bin/sh", "-c"], "Cmd": ["echo base"], "WorkingDir": "/"},
              "rootfs": {"type": "layers", "diff_ids": [digest(raw)]},
              "history": [{"created": "2026-01-01T00:00:00Z", "created_by": "test base"}]}
    config_bytes = json.dumps(config).encode()
    layer_digest = push_blob(host, repo, layer)
    push_blob(host, repo, config_bytes)
    manifest = {"schemaVersion": 2, "mediaType": OCI_MANIFEST if oci else DOCKER_MANIFEST,
                "config": {"mediaType": "application/vnd.oci.image.config.v1+json" if oci
                           else "application/vnd.docker.container.image.v1+json",
                           "size": len(config_bytes), "digest": digest(config_bytes)},
                "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip" if oci
                            else "application/vnd.docker.image.rootfs.diff.tar.gzip",
                            "size": len(layer), "digest": layer_digest}]}
    if not index:
        put_manifest(host, repo, tag, manifest)
        return BaseImage(f"{host}/{repo}:{tag}", manifest, config, layer_digest)
    body = put_manifest(host, repo, digest(json.dumps(manifest).encode()), manifest)
    entries = [{"mediaType": manifest["mediaType"], "size": len(body), "digest": digest(body),
                "platform": {"architecture": arch, "os": "linux"}}]
    if arch == "amd64":  # a second platform in front, so picking the first would be wrong
        other = push_base(host, repo, f"{tag}-arm64", oci=oci, arch="arm64")
        other_body = json.dumps(other.manifest).encode()
        entries.insert(0, {"mediaType": manifest["mediaType"], "size": len(other_body),
                           "digest": digest(other_body), "platform": {"architecture": "arm64", "os": "linux"}})
    put_manifest(host, repo, tag, {"schemaVersion": 2, "mediaType": OCI_INDEX if oci else DOCKER_LIST,
                                   "manifests": entries})
    return BaseImage(f"{host}/{repo}:{tag}", manifest, config, layer_digest)


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
    return folder
