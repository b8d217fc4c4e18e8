"""Build and push each image a job needs, pushing only what the registry lacks (submit only).

For each image: nothing at all when its tag is already there (a manifest HEAD:
the tag names the content). Else the base is resolved (a manifest list or
index → its image for the pools' platform: linux/arm64 on A4X, else linux/amd64)
and checked against what the image needs (that platform; the Python of
``build.python`` when its config says its own, ``PYTHON_VERSION``) for every image
before any is pushed. Then the dependency layer (from the cache when the
requirements and the files they name are unchanged: vxtrain.images.dependencies)
and the code layer are written, and
every blob the target repository lacks is pushed: base layers mounted from the
base's repository when both are on one host, else copied once, streamed; then
the config, then the manifest (layers before config before manifest: a
registry may refuse a manifest naming a blob it lacks, MANIFEST_BLOB_UNKNOWN).

Two submits of the same content push the same bytes: blobs are
content-addressed and the manifest is the same bytes under the same tag, so
the second writer changes nothing.

Nothing here prints: steps go to ``say`` and each large blob's upload to the
``progress`` display the caller gives (vxtrain.render draws a bar).
"""
from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vxtrain.errors import ApiError, NotFoundError
from vxtrain.images.dependencies import Target, dependency_layer
from vxtrain.images.image import (
    INDEXES, MANIFESTS, Built, append, manifest_type, pick_platform, platforms, python_of)
from vxtrain.images.layers import Layer, write_code_layer
from vxtrain.images.recipe import DEPS_DIR, ImageBuild
from vxtrain.images.reference import Reference, parse
from vxtrain.images.registry import Repository
from vxtrain.packaging.upload import UploadProgress
from vxtrain.sources.folder import check_unchanged
from vxtrain.vocab.callbacks import Say


@dataclass
class Pushed:
    """An image after ``publish``: where it is, its manifest digest, what this submit uploaded."""

    roles: list[str]
    uri: str
    digest: str
    pushed: bool  # False: the tag was there already (nothing was built or uploaded)
    blobs: list[str] = field(default_factory=list)  # digests uploaded (not mounted, not skipped)

    def to_json(self) -> list[dict[str, Any]]:
        """submit's ``images`` entries: one per pool."""
        return [{"pool": role, "uri": self.uri, "digest": self.digest, "pushed": self.pushed} for role in self.roles]


@dataclass(frozen=True)
class Base:
    """The base image, resolved to its image of one platform."""

    ref: Reference
    manifest: Mapping[str, Any]
    media_type: str
    config: Mapping[str, Any]


def publish(images: list[ImageBuild], say: Say | None = None,
            progress: UploadProgress | None = None) -> list[Pushed]:
    """Build and push each image whose tag is not in its repository yet."""
    say = say or (lambda message: None)
    # Every base is resolved and checked before anything is pushed: a refusal leaves no image behind.
    checked = [(image, _missing_base(image, say)) for image in images]
    return [publish_one(image, say, progress, found) for image, found in checked]


def _missing_base(image: ImageBuild, say: Say) -> tuple[str, Base | None]:
    """(digest, None) when the tag is in the repository already, else ("", the checked base)."""
    existing = Repository(parse(image.uri), push=True).manifest_digest(image.tag)
    if existing is not None:
        say(f"image {image.uri} is already pushed")
        return existing, None
    base = resolve_base(image.base, image.platform)
    check_python(image, base)
    return "", base


def publish_one(image: ImageBuild, say: Say, progress: UploadProgress | None,
                found: tuple[str, Base | None] | None = None) -> Pushed:
    """One image: skipped when its tag exists, else built and pushed blob by blob (``found``:
    what _missing_base said of it already)."""
    target = Repository(parse(image.uri), push=True)
    existing, base = found if found is not None else _missing_base(image, lambda message: None)
    if base is None:
        return Pushed(list(image.roles), image.uri, existing, pushed=False)
    with tempfile.TemporaryDirectory(prefix="vxtrain-image-") as tmp:
        layers = build_layers(image, Path(tmp), say, python_of(base.config))
        check_unchanged(image.source, image.spec_source, f"the tag {image.tag}", built=layers[-1][0].content)
        built = append(base.manifest, base.media_type, base.config, layers, dependencies=len(layers) > 1)
        uploaded = push_blobs(target, base, [layer for layer, _ in layers], built, say, progress)
    target.put_manifest(image.tag, built.manifest)
    say(f"pushed {image.uri} ({built.digest})")
    return Pushed(list(image.roles), image.uri, built.digest, pushed=True, blobs=uploaded)


def resolve_base(text: str, platform: str = "linux/amd64") -> Base:
    """The base's manifest and config for ``platform`` (NotFoundError, ApiError: said plainly)."""
    ref = parse(text)
    repo = Repository(ref, push=False)
    try:
        manifest, content_type = repo.manifest(ref.alias)
    except NotFoundError as exc:  # the registry's 404 (mapped_error), said for the base
        raise NotFoundError(f"base image {text} does not exist (no manifest {ref.alias} in "
                            f"{ref.host}/{ref.repository}): check the name and tag, or push it first") from exc
    media_type = manifest_type(manifest, content_type)
    if media_type in INDEXES:
        os_, _, arch = platform.partition("/")
        child = pick_platform(manifest, os_, arch)
        if child is None:
            raise ApiError(f"base image {text} has no {platform} image (it has {', '.join(platforms(manifest))}); "
                           f"{_runs_on(platform)}: choose a base built for it; nothing was pushed")
        manifest, content_type = repo.manifest(child)
        media_type = manifest_type(manifest, content_type)
    if media_type not in MANIFESTS:
        raise ApiError(f"base image {text} is a {media_type or 'manifest of unknown type'}; an image can be "
                       "appended to only over a Docker v2 schema 2 or OCI image manifest")
    config = repo.blob_json(manifest["config"]["digest"])
    _check_platform(text, config, platform)
    return Base(ref, manifest, media_type, config)


def _runs_on(platform: str) -> str:
    return ("the pool's A4X machines have Arm CPUs (linux/arm64)" if platform == "linux/arm64"
            else f"the pool's machines run {platform}")


def _check_platform(text: str, config: Mapping[str, Any], platform: str) -> None:
    os_, arch = config.get("os"), config.get("architecture")
    if f"{os_ or 'linux'}/{arch or 'amd64'}" != platform:
        raise ApiError(f"base image {text} is built for {os_}/{arch} only; {_runs_on(platform)}: "
                       "choose a base built for it; nothing was pushed")


def check_python(image: ImageBuild, base: Base) -> None:
    """ApiError (exit 4) when the base's config says a Python (PYTHON_VERSION) other than the one
    the wheels are picked for: their extension modules would not import there (``cp310`` modules
    under Python 3.11). A base that says nothing is taken at its word (its layers are not read:
    that would pull gigabytes to find a file name; docs/decisions.md)."""
    said = python_of(base.config)
    if image.python is None or said is None or ".".join(said.split(".")[:2]) == image.python:
        return
    given = "build.python" if image.spec_python else f"the base's name ({image.base})"
    raise ApiError(f"base image {image.base} has Python {said} (its config's PYTHON_VERSION), but {given} says "
                   f"{image.python}: wheels for {image.python} would not import there; set build.python to "
                   f"'{'.'.join(said.split('.')[:2])}' (or leave it out) or choose a base with Python {image.python}; "
                   "nothing was pushed")


def build_layers(image: ImageBuild, tmp: Path, say: Say, full_version: str | None = None) -> list[tuple[Layer, str]]:
    """The dependency layer (with requirements; from the cache when its inputs are unchanged)
    and the code layer, written under ``tmp``. ``full_version``: the base's Python (``3.10.13``)."""
    layers = []
    if image.requirements is not None:
        assert image.python is not None  # validation refuses requirements with an unknown Python
        same = full_version is not None and ".".join(full_version.split(".")[:2]) == image.python
        target = Target(image.python, image.platform, full_version if same else None)
        layer = dependency_layer(image.requirements, image.folders, target, tmp, say,
                                 image.spec_requirements or str(image.requirements))
        layers.append((layer, f"pip install --target {DEPS_DIR} -r {image.spec_requirements}"))
    code = write_code_layer(image.source, tmp / "code.tar.gz")  # its content: the files as read, for check_unchanged
    layers.append((code, f"copy {image.spec_source} ({code.files} files)"))
    return layers


def push_blobs(target: Repository, base: Base, layers: list[Layer], built: Built, say: Say,
               progress: UploadProgress | None) -> list[str]:
    """Every blob the target lacks: base layers (mounted or copied), ours, the config."""
    uploaded: list[str] = []
    source = Repository(base.ref, push=False)
    same_host = base.ref.host == target.ref.host  # the spec's mount works within one registry only
    for blob in base.manifest.get("layers", []):
        digest, size = str(blob["digest"]), int(blob["size"])
        if target.has_blob(digest):
            continue
        if same_host and target.mount(digest, base.ref):
            say(f"mounted base layer {digest[:19]} from {base.ref.repository}")
            continue
        say(f"copying base layer {digest[:19]} ({_size(size)}) from {base.ref.host}")
        target.push_stream(source.pull(digest), digest, size, progress)
        uploaded.append(digest)
    for layer in layers:
        if not target.has_blob(layer.digest):
            say(f"pushing layer {layer.digest[:19]} ({_size(layer.size)})")
            target.push_file(layer.path, layer.digest, layer.size, progress)
            uploaded.append(layer.digest)
    if not target.has_blob(built.config_digest):
        target.push_bytes(built.config, built.config_digest)
        uploaded.append(built.config_digest)
    return uploaded


def _size(size: int) -> str:
    """Bytes in words: ``12.3 MB``, ``4.5 kB``."""
    return f"{size / 1e6:.1f} MB" if size >= 1e6 else f"{size / 1e3:.1f} kB"
