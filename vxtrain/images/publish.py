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

import tarfile
import tempfile
import zlib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vxtrain.diagnostics import error
from vxtrain.errors import ApiError, BuildKeyError, NotFoundError
from vxtrain.images import pythons
from vxtrain.images.dependencies import Target, dependency_layer
from vxtrain.images.image import (
    DEFAULT_PATH, INDEXES, MANIFESTS, Built, append, manifest_type, pick_platform, platforms, python_of)
from vxtrain.images.layers import Layer, write_code_layer
from vxtrain.images.pythons import BasePythonError, Shown
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
    with tempfile.TemporaryDirectory(prefix="vxtrain-base-layers-") as folder:
        kept: dict[str, Path] = {}
        # Every base is resolved and checked before anything is pushed: a refusal leaves no image behind.
        checked = [(image, _missing_base(image, say, Path(folder), kept)) for image in images]
        return [publish_one(image, say, progress, found, kept) for image, found in checked]


def _missing_base(image: ImageBuild, say: Say, folder: Path | None = None,
                  kept: dict[str, Path] | None = None) -> tuple[str, Base | None]:
    """(digest, None) when the tag is in the repository already, else ("", the checked base);
    base layers the check read that the push will copy are kept in ``folder`` (``kept``)."""
    target = Repository(parse(image.uri), push=True)
    existing = target.manifest_digest(image.tag)
    if existing is not None:
        say(f"image {image.uri} is already pushed")
        return existing, None
    base = resolve_base(image.base, image.platform, image.roles[0])
    spool = None if folder is None or kept is None else Spool(folder, target, base.ref.host == target.ref.host, kept)
    check_python(image, base, say, spool)
    return "", base


def publish_one(image: ImageBuild, say: Say, progress: UploadProgress | None,
                found: tuple[str, Base | None] | None = None, kept: Mapping[str, Path] | None = None) -> Pushed:
    """One image: skipped when its tag exists, else built and pushed blob by blob (``found``:
    what _missing_base said of it already; ``kept``: base layers it read, by digest)."""
    target = Repository(parse(image.uri), push=True)
    existing, base = found if found is not None else _missing_base(image, say)
    if base is None:
        return Pushed(list(image.roles), image.uri, existing, pushed=False)
    with tempfile.TemporaryDirectory(prefix="vxtrain-image-") as tmp:
        layers = build_layers(image, Path(tmp), say, python_of(base.config))
        check_unchanged(image.source, image.spec_source, f"the tag {image.tag}", built=layers[-1][0].content)
        built = append(base.manifest, base.media_type, base.config, layers, dependencies=len(layers) > 1)
        uploaded = push_blobs(target, base, [layer for layer, _ in layers], built, say, progress, kept or {})
    target.put_manifest(image.tag, built.manifest)
    say(f"pushed {image.uri} ({built.digest})")
    return Pushed(list(image.roles), image.uri, built.digest, pushed=True, blobs=uploaded)


class BasePlatformError(BuildKeyError):
    """The base has no image for the pool's platform (A4X: linux/arm64): a mistake of the spec
    found at push time (exit 1, at ``build.base``), nothing pushed. ``role`` and ``key``: the
    pool key it is about, which the caller locates in the spec (this layer knows no positions)."""

    def __init__(self, message: str, role: str) -> None:
        super().__init__([error("build-base-platform", message, path=f"{role}.build.base")], role, "base")


def resolve_base(text: str, platform: str = "linux/amd64", role: str = "chief") -> Base:
    """The base's manifest and config for ``platform`` (NotFoundError, ApiError: said plainly;
    BasePlatformError, about pool ``role``'s base, when it has no image for the platform)."""
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
            raise BasePlatformError(f"base image {text} has no {platform} image (it has "
                                    f"{', '.join(platforms(manifest))}); {_runs_on(platform)}: choose a base built "
                                    "for it; nothing was pushed", role)
        manifest, content_type = repo.manifest(child)
        media_type = manifest_type(manifest, content_type)
    if media_type not in MANIFESTS:
        raise ApiError(f"base image {text} is a {media_type or 'manifest of unknown type'}; an image can be "
                       "appended to only over a Docker v2 schema 2 or OCI image manifest")
    config = repo.blob_json(manifest["config"]["digest"])
    _check_platform(text, config, platform, role)
    return Base(ref, manifest, media_type, config)


def _runs_on(platform: str) -> str:
    return ("the pool's A4X machines have Arm CPUs (linux/arm64)" if platform == "linux/arm64"
            else f"the pool's machines run {platform}")


def _check_platform(text: str, config: Mapping[str, Any], platform: str, role: str) -> None:
    os_, arch = config.get("os"), config.get("architecture")
    if f"{os_ or 'linux'}/{arch or 'amd64'}" != platform:
        raise BasePlatformError(f"base image {text} is built for {os_}/{arch} only; {_runs_on(platform)}: "
                                "choose a base built for it; nothing was pushed", role)


def check_python(image: ImageBuild, base: Base, say: Say | None = None, spool: Spool | None = None) -> None:
    """BasePythonError when the base's Python is not the one the wheels are picked for: their
    extension modules would not import there (``cp310`` modules under Python 3.11). The base's
    config says it (PYTHON_VERSION), else its layers show it (vxtrain.images.pythons: read from
    the top down to the layer that installed Python; what a base showed is remembered by its
    layers' digests); one that shows none, or several, is refused too."""
    if image.python is None:
        return
    given = "build.python" if image.spec_python else f"the base's name ({image.base})"
    said = python_of(base.config)
    if said is not None:
        if ".".join(said.split(".")[:2]) != image.python:
            raise BasePythonError("build-python-mismatch", f"base image {image.base} has Python {said} (its config's "
                                  f"PYTHON_VERSION), but {given} says {image.python}: wheels for {image.python} would "
                                  f"not import there; {_fix(image, said)}; nothing was pushed", *_at(image))
        return
    shown = shown_python(base, say or (lambda message: None), spool)
    if shown is None or shown.version is None:
        found = "shows no Python in its layers" if shown is None else f"has several Pythons ({shown.evidence})"
        raise BasePythonError("build-python-unconfirmed", f"base image {image.base} does not say its Python "
                              f"(no PYTHON_VERSION in its config) and {found}, so the Python {given} says "
                              f"({image.python}) cannot be confirmed: wheels for another would not import; choose "
                              f"a base that sets PYTHON_VERSION (ENV PYTHON_VERSION={image.python}.N in its "
                              "Dockerfile), or one with one Python; nothing was pushed", *_at(image))
    if shown.version != image.python:
        raise BasePythonError("build-python-mismatch", f"base image {image.base} has Python {shown.version} (its "
                              f"layers: {shown.evidence}; its config has no PYTHON_VERSION), but {given} says "
                              f"{image.python}: wheels for {image.python} would not import there; "
                              f"{_fix(image, shown.version)}; nothing was pushed", *_at(image))


def _at(image: ImageBuild) -> tuple[str, str]:
    """The pool key a refusal of the image's Python is about: build.python, else build.base (its pyNNN)."""
    return image.roles[0], "python" if image.spec_python else "base"


def _fix(image: ImageBuild, found: str) -> str:
    """How to mend it: build.python to the base's Python, or another base."""
    minor = ".".join(found.split(".")[:2])
    if image.spec_python:
        return f"set build.python to '{minor}' or choose a base with Python {image.python}"
    return f"choose a base with Python {image.python} (this one's name says it, its files do not)"


def shown_python(base: Base, say: Say, spool: Spool | None = None) -> Shown | None:
    """The Python the base's layers show (pythons.decide), top layer first, stopping at the
    first that shows one; remembered in the user's cache by the layers' digests (and PATH).
    ``spool``: where a layer read here that the push will copy anyway is kept, so it is
    pulled once."""
    layers = [(str(blob["digest"]), int(blob["size"])) for blob in base.manifest.get("layers", [])]
    path_dirs = _path_of(base.config).split(":")
    key = pythons.base_key([d for d, _ in layers], path_dirs)
    known = pythons.remembered(key)
    if known is not None:
        return known.shown
    source = Repository(base.ref, push=False)
    shown = None
    for digest, size in reversed(layers):
        say(f"reading base layer {digest[:19]} ({_size(size)}) for its Python (the base has no PYTHON_VERSION)")
        keep = spool.path(digest) if spool is not None else None
        stream = _Kept(source.pull(digest), keep)
        try:
            scan = pythons.scan_layer(stream, path_dirs)
            stream.finish()
        except (tarfile.TarError, zlib.error, EOFError, OSError) as exc:  # zstd, or not a tar: it shows nothing
            say(f"base layer {digest[:19]} cannot be listed ({exc}): passed over")
            stream.finish()
            continue
        if keep is not None and spool is not None:
            spool.kept[digest] = keep
        shown = pythons.decide(scan, path_dirs)
        if shown is not None:
            break
    pythons.remember(key, shown)
    return shown


class _Kept:
    """A blob's chunks as they come, also written to ``keep`` when given; :meth:`finish` writes
    the rest (the tar reader stops at the archive's end marker, before the blob's last bytes)."""

    def __init__(self, chunks: Iterable[bytes], keep: Path | None) -> None:
        self._chunks = iter(chunks)
        self._out = keep.open("wb") if keep is not None else None

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self._chunks:
            if self._out is not None:
                self._out.write(chunk)
            yield chunk

    def finish(self) -> None:
        """Write what the reader left, and close the file."""
        if self._out is not None:
            with self._out:
                for chunk in self._chunks:
                    self._out.write(chunk)


@dataclass
class Spool:
    """Base layers the Python check reads that the push then copies to another registry: kept
    in ``folder`` while the submit runs, so each is pulled once."""

    folder: Path
    target: Repository
    same_host: bool  # layers are mounted there, not copied
    kept: dict[str, Path]

    def path(self, digest: str) -> Path | None:
        """Where to keep ``digest`` as it is read, or None when the push will not copy it."""
        if self.same_host or self.target.has_blob(digest):
            return None
        return self.folder / digest.replace(":", "-")


def _path_of(config: Mapping[str, Any]) -> str:
    """The image's PATH: its config's, else a runtime's default."""
    for item in (config.get("config") or {}).get("Env") or []:
        name, _, value = str(item).partition("=")
        if name == "PATH":
            return value
    return DEFAULT_PATH


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
               progress: UploadProgress | None, kept: Mapping[str, Path] | None = None) -> list[str]:
    """Every blob the target lacks: base layers (mounted, or copied: from ``kept`` when the
    Python check read it already), ours, the config."""
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
        if kept and digest in kept:  # read once already, for the base's Python
            target.push_file(kept[digest], digest, size, progress)
        else:
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
