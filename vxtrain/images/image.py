"""The new image over the base's: its config and manifest, as bytes to push.

What ``crane append`` does (ggcr ``mutate``): the base's layers, then ours; the
config's ``rootfs.diff_ids`` and ``history`` grow by one entry per layer; the
media types stay in the base's family (Docker v2 schema 2 or OCI: a registry or
runtime that took the base takes the image). Then the edits that make the code
run as ``python_package.source`` runs locally: ``WorkingDir`` is the code
folder and ``PYTHONPATH`` starts with the code and the dependency folders (and, with a
dependency layer, the folder of its ``sitecustomize`` that processes the dependencies'
``.pth`` files; ``PATH`` starts with their console scripts' folder).
``Entrypoint`` and ``Cmd`` stay the base's: the CustomJob's command and args run.

Every history entry has a fixed ``created`` time (umoci's text ``stat`` crashes
on entries without one) so the same layers give the same config digest.
"""
from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from vxtrain.images.layers import Layer, digest_of
from vxtrain.images.recipe import BIN_DIR, CODE_DIR, DEPS_DIR, SITE_DIR

DOCKER_MANIFEST = "application/vnd.docker.distribution.manifest.v2+json"
DOCKER_LIST = "application/vnd.docker.distribution.manifest.list.v2+json"
DOCKER_CONFIG = "application/vnd.docker.container.image.v1+json"
DOCKER_LAYER = "application/vnd.docker.image.rootfs.diff.tar.gzip"
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
OCI_INDEX = "application/vnd.oci.image.index.v1+json"
OCI_CONFIG = "application/vnd.oci.image.config.v1+json"
OCI_LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
#: Manifest lists / indexes: resolved to the image of the platform the pools run on.
INDEXES = frozenset({DOCKER_LIST, OCI_INDEX})
#: Image manifests this builder can append to.
MANIFESTS = frozenset({DOCKER_MANIFEST, OCI_MANIFEST})
#: The ``created`` time of our history entries: fixed, for reproducible configs.
EPOCH = "1970-01-01T00:00:00Z"
#: PATH in a container whose image sets none (runc's and containerd's default).
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True)
class Built:
    """The new config and manifest, exactly as they are pushed."""

    config: bytes
    config_digest: str
    manifest: bytes
    media_type: str

    @property
    def digest(self) -> str:
        """The manifest's digest: the image's identity in the registry."""
        return digest_of(self.manifest)


def manifest_type(manifest: Mapping[str, Any], content_type: str = "") -> str:
    """A manifest's media type: its ``mediaType`` field, else the response's Content-Type
    (an OCI manifest may leave the field out)."""
    return str(manifest.get("mediaType") or content_type.split(";")[0].strip())


def append(manifest: Mapping[str, Any], media_type: str, config: Mapping[str, Any],
           layers: Sequence[tuple[Layer, str]], dependencies: bool = False) -> Built:
    """The base (``manifest`` of ``media_type``, its ``config``) with ``layers`` (layer,
    what made it) on top; ``dependencies``: one of them is the dependency layer."""
    oci = media_type == OCI_MANIFEST
    new_config = _config(config, layers, dependencies)
    config_bytes = _dump(new_config)
    base_config = manifest.get("config", {})
    out: dict[str, Any] = {"schemaVersion": 2, "mediaType": media_type, "config": {
        "mediaType": base_config.get("mediaType") or (OCI_CONFIG if oci else DOCKER_CONFIG),
        "size": len(config_bytes), "digest": digest_of(config_bytes)}}
    layer_type = OCI_LAYER if oci else DOCKER_LAYER
    out["layers"] = list(manifest.get("layers", [])) + [
        {"mediaType": layer_type, "size": layer.size, "digest": layer.digest} for layer, _ in layers]
    if manifest.get("annotations"):
        out["annotations"] = manifest["annotations"]
    return Built(config_bytes, digest_of(config_bytes), _dump(out), media_type)


def _config(config: Mapping[str, Any], layers: Sequence[tuple[Layer, str]], dependencies: bool) -> dict[str, Any]:
    """The base's config with our layers' diff_ids and history, WorkingDir, PYTHONPATH (and PATH)."""
    new = json.loads(json.dumps(config))  # a deep copy of plain JSON
    rootfs = new.setdefault("rootfs", {"type": "layers", "diff_ids": []})
    rootfs.setdefault("diff_ids", []).extend(layer.diff_id for layer, _ in layers)
    new.setdefault("history", []).extend(
        {"created": EPOCH, "created_by": f"vxtrain: {what}", "comment": "vxtrain build"} for _, what in layers)
    inner = new.setdefault("config", {})
    inner["WorkingDir"] = str(CODE_DIR)
    # SITE_DIR first: it holds only our sitecustomize, which then runs the next one on sys.path
    # (the code folder's or the base's), so none is shadowed.
    folders = [str(SITE_DIR), str(CODE_DIR), str(DEPS_DIR)] if dependencies else [str(CODE_DIR), str(DEPS_DIR)]
    inner["Env"] = with_pythonpath(inner.get("Env") or [], folders)
    if dependencies:
        inner["Env"] = with_path(inner["Env"], str(BIN_DIR))
    return new  # type: ignore[no-any-return]


def with_pythonpath(env: Sequence[str], folders: Sequence[str]) -> list[str]:
    """``env`` (``NAME=value`` strings) with ``folders`` in front of its PYTHONPATH."""
    out, found = [], False
    for item in env:
        name, _, value = item.partition("=")
        if name == "PYTHONPATH":
            found = True
            item = "PYTHONPATH=" + ":".join([*folders, *([value] if value else [])])
        out.append(item)
    return out if found else [*out, "PYTHONPATH=" + ":".join(folders)]


def with_path(env: Sequence[str], folder: str) -> list[str]:
    """``env`` with ``folder`` in front of its PATH (a config without PATH gets the runtime's
    default after it: runc and containerd use that when the image sets none)."""
    out, found = [], False
    for item in env:
        name, _, value = item.partition("=")
        if name == "PATH":
            found = True
            item = f"PATH={folder}:{value}" if value else f"PATH={folder}"
        out.append(item)
    return out if found else [*out, f"PATH={folder}:{DEFAULT_PATH}"]


def python_of(config: Mapping[str, Any]) -> str | None:
    """The base's Python as its config says it: ``PYTHON_VERSION=3.11.7`` (the official python
    images' variable, https://github.com/docker-library/python) → ``3.11.7``; None when unsaid."""
    for item in (config.get("config") or {}).get("Env") or []:
        name, _, value = str(item).partition("=")
        if name == "PYTHON_VERSION" and re.fullmatch(r"3\.\d+(\.\d+)?\S*", value):
            return value
    return None


def _dump(data: Mapping[str, Any]) -> bytes:
    """Compact JSON with sorted keys: the same data, the same bytes (the digest is over them)."""
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def pick_platform(index: Mapping[str, Any], os_: str = "linux", arch: str = "amd64") -> str | None:
    """The digest of the ``os_/arch`` image in a manifest list or index (None: there is none)."""
    for entry in index.get("manifests", []):
        platform = entry.get("platform") or {}
        if platform.get("os") == os_ and platform.get("architecture") == arch:
            return str(entry["digest"])
    return None


def platforms(index: Mapping[str, Any]) -> list[str]:
    """The ``os/arch`` of each image in a manifest list or index."""
    return [f"{(e.get('platform') or {}).get('os', '?')}/{(e.get('platform') or {}).get('architecture', '?')}"
            for e in index.get("manifests", [])]
