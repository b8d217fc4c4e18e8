"""What a ``build:`` pool's image is made of, and its content-addressed URI.

Everything here is pure file reading (no pip, no network), so ``plan`` shows the
exact URI a ``submit`` would push. The tag is a hash over the base reference,
the image's Python, the requirements file's bytes, the source tree (the same
files and hash as ``python_package.source``: vxtrain.packaging.source) and this
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
import re
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any

from vxtrain.errors import VxtrainError
from vxtrain.images.reference import parse, python_version
from vxtrain.model import Build, Job
from vxtrain.packaging.source import HASH_LENGTH, Source, describe_once, source_folder

#: Where the code layer puts the source folder's files: the image's working directory.
CODE_DIR = PurePosixPath("/opt/vxtrain/code")
#: Where the dependency layer puts what ``pip install --target`` installed.
DEPS_DIR = PurePosixPath("/opt/vxtrain/deps")
#: Mixed into the tag: bump it when what is built from the same inputs changes
#: (the folders above, the tar normalisation, the config edits, pip's options).
RECIPE_VERSION = "vxtrain-image-1"
#: Stands for the repository in URIs planned without one (never a valid reference).
UNSET_REPOSITORY = "<image_repository>"
#: A line of a requirements file that includes another file: ``-r F``, ``--requirement=F``,
#: ``-c F``, ``--constraint F`` (https://pip.pypa.io/en/stable/reference/requirements-file-format/).
_INCLUDE = re.compile(r"^\s*(?:-[rc]\s*|--(?:requirement|constraint)(?:\s*=\s*|\s+))(\S+)")


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

    @property
    def name(self) -> str:
        """The image's name under the repository: the source folder's (normalized) name."""
        return self.source.name

    @property
    def uri(self) -> str:
        """``<image_repository>/<name>:<tag>``."""
        return f"{self.repository.rstrip('/')}/{self.name}:{self.tag}"

    @property
    def base_pinned(self) -> bool:
        """True when the base is given by digest (a moved tag cannot change the image)."""
        return "@sha256:" in self.base

    def to_json(self) -> dict[str, Any]:
        """The ``images`` entry of ``plan --output json``."""
        return {"pools": self.roles, "uri": self.uri, "base": self.base, "base_pinned": self.base_pinned,
                "source": self.spec_source, "path": str(self.source.path), "files": self.source.files,
                "requirements": self.spec_requirements, "python": self.python, "tag": self.tag,
                "repository_set": not self.repository.startswith(UNSET_REPOSITORY)}


def image_python(build: Build) -> str | None:
    """The image's Python: ``build.python``, else the base reference's ``pyNNN`` (None: unknown)."""
    if build.python:
        return build.python
    try:
        return python_version(parse(build.base or ""))
    except ValueError:
        return None


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
        key = (build.base, folder, requirements, image_python(build))
        image = by_inputs.get(key)
        if image is None:
            image = _image(build, describe_once(folder, described), requirements, repository or UNSET_REPOSITORY)
            by_inputs[key] = image
        image.roles.append(pool.role)
        pools[pool.role] = replace(pool, image=image.uri)
    return replace(job, pools=pools), list(by_inputs.values())


def _image(build: Build, source: Source, requirements: Path | None, repository: str) -> ImageBuild:
    python = image_python(build)
    assert build.base is not None and build.source is not None  # resolve skips pools without them
    tag = image_tag(build.base, python, requirements_bytes(requirements) if requirements else None, source.digest)
    return ImageBuild(build.base, source, requirements, python, repository, tag, spec_source=build.source,
                      spec_requirements=build.requirements)


#: At most this many bytes of requirements, the file and its includes together (1 MiB):
#: real ones are a few KiB, and a ``-r`` naming a data file must not be read whole.
MAX_REQUIREMENTS_BYTES = 1 << 20


class RequirementsError(VxtrainError):
    """A requirements file (or one it includes) that cannot be read, or past the bound."""


def requirements_bytes(path: Path) -> bytes:
    """The bytes the tag covers for the requirements file ``path``: its own, then each file it
    includes (``-r``/``-c``, recursively, each once) framed by the name it was written as.
    An include that is not a local file (a URL, a missing one) counts by its name only.
    RequirementsError past MAX_REQUIREMENTS_BYTES in all, or for a file it cannot read."""
    first = _read_bounded(path, MAX_REQUIREMENTS_BYTES, path)
    out, seen, todo = [first], {path.resolve()}, [(path, first)]
    left = MAX_REQUIREMENTS_BYTES - len(first)
    while todo:
        current, data = todo.pop(0)
        for written in _includes(data):
            found = (current.parent / written).resolve()
            if found in seen:
                continue
            seen.add(found)
            is_file = _is_file(found)
            body = _read_bounded(found, left, path) if is_file else b""
            left -= len(body)
            out.append(b"\0include\0" + written.encode() + b"\0" + str(len(body)).encode() + b"\0" + body)
            if is_file:
                todo.append((found, body))
    return b"".join(out)


def _is_file(path: Path) -> bool:
    try:
        return path.is_file()
    except OSError:  # a name part past 255 bytes: no such file
        return False


def _read_bounded(path: Path, budget: int, top: Path) -> bytes:
    """At most ``budget`` bytes of ``path`` (RequirementsError when it holds more, or cannot be read)."""
    try:
        with path.open("rb") as f:
            data = f.read(budget + 1)
    except OSError as exc:
        raise RequirementsError(f"cannot read {path} ({exc.strerror or exc}): make it readable") from exc
    if len(data) > budget:
        named = "" if path == top else f" (included by {top.name})"
        raise RequirementsError(f"{path}{named} passes the {MAX_REQUIREMENTS_BYTES // 1024:,} KiB that "
                                "requirements (the file and its -r/-c includes) may take: a requirements file "
                                "lists packages; name data files nowhere in it")
    return data


def _includes(data: bytes) -> list[str]:
    """The files a requirements file's ``-r``/``-c`` lines name, in order."""
    text = data.decode("utf-8", "replace")
    return [m.group(1) for line in text.splitlines() if (m := _INCLUDE.match(line.split(" #")[0]))]


def image_tag(base: str, python: str | None, requirements: bytes | None, source_digest: str) -> str:
    """HASH_LENGTH hex digits over the recipe, the base, the Python, the requirements and the source."""
    h = hashlib.sha256(f"{RECIPE_VERSION}\0{CODE_DIR}\0{DEPS_DIR}\0{base}\0{python or ''}\0".encode())
    h.update(b"no-requirements\0" if requirements is None else b"requirements\0" + requirements + b"\0")
    h.update(source_digest.encode())
    return h.hexdigest()[:HASH_LENGTH]
