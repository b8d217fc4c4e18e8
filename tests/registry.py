"""A real OCI registry on loopback, and images pushed to it by hand, for the tests and
scripts/bench.py (plain functions: no pytest here).

The registry is the CNCF distribution registry (Debian's ``docker-registry``) run as a
plain process with its own config: 127.0.0.1, a free port, a temporary storage
folder, no auth. Blobs and manifests are pushed with requests, written
independently of vxtrain's own registry code.
"""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from tests.polling import wait_for
from tests.processes import stop

REGISTRY_BINARY = "docker-registry"
DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
ACCEPT = ", ".join((DOCKER_MANIFEST, DOCKER_LIST, OCI_MANIFEST, OCI_INDEX))


def registry_binary() -> str | None:
    """The ``docker-registry`` program, or None when it is not installed."""
    fallback = f"/usr/bin/{REGISTRY_BINARY}"
    return shutil.which(REGISTRY_BINARY) or (fallback if os.path.exists(fallback) else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(url: str) -> bool:
    try:
        return requests.get(url, timeout=1).status_code == 200
    except requests.ConnectionError:
        return False


@contextmanager
def running_registry(binary: str) -> Iterator[str]:
    """``127.0.0.1:PORT`` of a registry started from ``binary``, stopped (and its storage
    removed) when the block ends."""
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
        stop(proc, signal.SIGTERM, timeout=10)  # SIGKILL after 10 s: never left running
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
    with ``index``, behind a manifest list/index that also lists an arm64 image. A tag that
    says a Python (``py310``) gets that Python's standard-library marker,
    ``usr/local/lib/python3.10/os.py``, as submit reads a base without PYTHON_VERSION for it."""
    files = {"opt/base/hello.txt": f"base {tag}\n".encode()}
    named = re.search(r"py3(\d+)", tag)
    if named:
        files[f"usr/local/lib/python3.{named.group(1)}/os.py"] = b"# a test base's standard library\n"
    layer, raw = tar_gz(files)
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
