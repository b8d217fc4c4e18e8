"""What a ``build:`` pool's image is made of, and its content-addressed URI.

Everything here is pure file reading (no pip, no network), so ``plan`` shows the
exact URI a ``submit`` would push. The tag is a hash over the base reference,
the image's Python, the requirements file's bytes, the source tree (the same
files and hash as ``python_package.source``: vxtrain.sources.folder) and this
recipe (where the layers go, how the config is set): the same inputs always give
the same tag, any change a new one.

A requirements file that does not pin its versions can resolve to other wheels
later under the same tag: the tag says what was asked for, not what pip found
(pin versions, as a lock file does, for an image that never moves). The files it
includes (``-r other.txt``, ``-c constraints.txt``, as pip reads them: relative
to the including file) count as its bytes do: a pin moved to a constraints
file still changes the tag.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from vxtrain.catalog.images import DEFAULT_PLATFORM, image_platform
from vxtrain.images.reference import image_python
from vxtrain.model import Build, Job
from vxtrain.sources.folder import HASH_LENGTH, Source, describe_once, source_folder
from vxtrain.sources.requirements import requirements_bytes

#: Where the code layer puts the source folder's files: the image's working directory.
CODE_DIR = PurePosixPath("/opt/vxtrain/code")
#: Where the dependency layer puts what ``pip install --target`` installed.
DEPS_DIR = PurePosixPath("/opt/vxtrain/deps")
#: Where the dependency layer puts console scripts (on the image's PATH), their shebang the image's Python.
BIN_DIR = PurePosixPath("/opt/vxtrain/bin")
#: Where the dependency layer puts the ``sitecustomize`` that makes DEPS_DIR a site directory
#: (its ``.pth`` files processed: PYTHONPATH folders are not), first on PYTHONPATH.
SITE_DIR = PurePosixPath("/opt/vxtrain/site")
#: Mixed into the tag: bump it when what is built from the same inputs changes
#: (the folders above, the tar normalisation, the config edits, pip's options).
RECIPE_VERSION = "vxtrain-image-2"
#: Stands for the repository in URIs planned without one (never a valid reference).
UNSET_REPOSITORY = "<image_repository>"


@dataclass
class ImageBuild:
    """One image to build: its inputs, its URI, and the pools that run it."""

    base: str
    source: Source
    requirements: Path | None
    python: str | None
    repository: str
    tag: str
    roles: list[str] = field(default_factory=list)
    spec_source: str = ""  # the folder as the spec wrote it
    spec_requirements: str | None = None
    #: ``os/architecture`` the image is built for: the pools' machines' (catalog.image_platform).
    platform: str = DEFAULT_PLATFORM
    #: Where relative paths in the requirements resolve (the spec's folder first), and the
    #: folders local path requirements must stay in (the spec's and the source's).
    folders: tuple[Path, ...] = ()
    spec_python: str | None = None  # build.python as the spec gave it (None: from the base's name)

    @property
    def name(self) -> str:
        """The image's name under the repository: the source folder's (normalized) name."""
        return self.source.name

    @property
    def uri(self) -> str:
        """``<image_repository>/<name>:<tag>``."""
        return f"{self.repository.rstrip('/')}/{self.name}:{self.tag}"

    @property
    def repository_set(self) -> bool:
        """Whether a repository was given (else the URI only shows where one goes)."""
        return not self.repository.startswith(UNSET_REPOSITORY)

    @property
    def base_pinned(self) -> bool:
        """True when the base is given by digest (a moved tag cannot change the image)."""
        return "@sha256:" in self.base

    def to_json(self) -> dict[str, Any]:
        """The ``images`` entry of ``plan --output json``."""
        return {"pools": self.roles, "uri": self.uri, "base": self.base, "base_pinned": self.base_pinned,
                "source": self.spec_source, "path": str(self.source.path), "files": self.source.files,
                "requirements": self.spec_requirements, "python": self.python, "platform": self.platform,
                "tag": self.tag,
                "repository_set": self.repository_set}


def resolve(job: Job, base: Path, repository: str | None,
            described: dict[Path, Source] | None = None) -> tuple[Job, list[ImageBuild]]:
    """Hash every ``build:`` pool's inputs (paths relative to ``base``, the spec's folder):
    a new job whose pools carry the content-addressed URI in ``image``, and the images to
    publish. ``job`` itself is left as it is (the model the rules checked). Pools with the
    same inputs share one image. ``described``: the source folders hashed already (see
    describe_once)."""
    described = {} if described is None else described
    by_inputs: dict[tuple[Any, ...], ImageBuild] = {}
    pools = dict(job.pools)
    for pool in job.ordered_pools():
        build = pool.build
        if build is None or not build.source or not build.base:
            continue
        folder = source_folder(base, build.source)
        requirements = source_folder(base, build.requirements) if build.requirements else None
        platform = image_platform(pool.machine_type)
        key = (build.base, folder, requirements, image_python(build), platform)
        image = by_inputs.get(key)
        if image is None:
            image = _image(build, describe_once(folder, described), requirements, repository or UNSET_REPOSITORY,
                           platform, (base, folder))
            by_inputs[key] = image
        image.roles.append(pool.role)
        pools[pool.role] = replace(pool, image=image.uri)
    return replace(job, pools=pools), list(by_inputs.values())


def _image(build: Build, source: Source, requirements: Path | None, repository: str, platform: str,
           folders: tuple[Path, ...]) -> ImageBuild:
    python = image_python(build)
    assert build.base is not None and build.source is not None  # resolve skips pools without them
    covered = requirements_bytes(requirements, folders) if requirements else None
    tag = image_tag(build.base, python, covered, source.digest, platform)
    return ImageBuild(build.base, source, requirements, python, repository, tag, spec_source=build.source,
                      spec_requirements=build.requirements, platform=platform, folders=folders,
                      spec_python=build.python)


def image_tag(base: str, python: str | None, requirements: bytes | None, source_digest: str,
              platform: str = DEFAULT_PLATFORM) -> str:
    """HASH_LENGTH hex digits over the recipe, the base, the Python, the platform, the requirements
    and the source."""
    h = hashlib.sha256(f"{RECIPE_VERSION}\0{CODE_DIR}\0{DEPS_DIR}\0{base}\0{python or ''}\0{platform}\0".encode())
    h.update(b"no-requirements\0" if requirements is None else b"requirements\0" + requirements + b"\0")
    h.update(source_digest.encode())
    return h.hexdigest()[:HASH_LENGTH]


