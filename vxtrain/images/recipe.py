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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

from vxtrain.catalog.images import DEFAULT_PLATFORM, image_platform
from vxtrain.errors import VxtrainError
from vxtrain.images.reference import parse, python_version
from vxtrain.images.safety import includes
from vxtrain.model import Build, Job
from vxtrain.packaging.source import HASH_LENGTH, Source, describe, describe_once, source_folder

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
    def base_pinned(self) -> bool:
        """True when the base is given by digest (a moved tag cannot change the image)."""
        return "@sha256:" in self.base

    def to_json(self) -> dict[str, Any]:
        """The ``images`` entry of ``plan --output json``."""
        return {"pools": self.roles, "uri": self.uri, "base": self.base, "base_pinned": self.base_pinned,
                "source": self.spec_source, "path": str(self.source.path), "files": self.source.files,
                "requirements": self.spec_requirements, "python": self.python, "platform": self.platform,
                "tag": self.tag,
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


#: At most this many bytes of requirements, the file and its includes together (1 MiB):
#: real ones are a few KiB, and a ``-r`` naming a data file must not be read whole.
MAX_REQUIREMENTS_BYTES = 1 << 20


class RequirementsError(VxtrainError):
    """A requirements file (or one it includes) that cannot be read, or past the bound."""


def requirements_bytes(path: Path, folders: Sequence[Path] = ()) -> bytes:
    """The bytes the tag covers for the requirements file ``path``: its own, then each file it
    includes (``-r``/``-c``, recursively, each once) framed by the name it was written as,
    then the content of each local path requirement (a wheel's bytes, a folder's files:
    an edited wheel is a new image). An include that is not a local file (a URL, a missing
    one) counts by its name only. ``folders``: where local paths resolve from (the first) and
    must stay in (see local_requirements; default the file's folder). RequirementsError past
    MAX_REQUIREMENTS_BYTES in all, or for a file it cannot read."""
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
                _no_local_paths(found, body, (folders or (path.parent,))[0])
                todo.append((found, body))
    for local in local_requirements(path, first, folders or (path.parent,)):
        out.append(b"\0local\0" + local.written.encode() + b"\0" + local.content_digest().encode())
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
    """The files a requirements file's ``-r``/``-c`` lines name, in order (vxtrain.images.safety reads them)."""
    return [written for _, written in includes(data)]


def image_tag(base: str, python: str | None, requirements: bytes | None, source_digest: str,
              platform: str = DEFAULT_PLATFORM) -> str:
    """HASH_LENGTH hex digits over the recipe, the base, the Python, the platform, the requirements
    and the source."""
    h = hashlib.sha256(f"{RECIPE_VERSION}\0{CODE_DIR}\0{DEPS_DIR}\0{base}\0{python or ''}\0{platform}\0".encode())
    h.update(b"no-requirements\0" if requirements is None else b"requirements\0" + requirements + b"\0")
    h.update(source_digest.encode())
    return h.hexdigest()[:HASH_LENGTH]


#: A requirement line that is a local path: ``./libs/pkg``, ``../x.whl``, ``/abs``, ``.``, ``file:…``,
#: optionally ``-e``/``--editable``, then extras and markers (``[gpu]; python_version < "3.11"``).
_LOCAL = re.compile(r"^\s*(?P<editable>(?:-e|--editable)(?:\s*=\s*|\s+))?"
                    r"(?:[A-Za-z0-9][A-Za-z0-9._-]*(?:\[[^\]]*\])?\s*@\s*)?"
                    r"(?P<path>(?:\.{1,2}/|/|file:)[^\s;\[]*|\.{1,2}(?=[\s;\[]|$)"
                    # pip takes any name with a slash for a path (req_install._looks_like_path), and an
                    # archive's file name for that file when it exists: a URL (scheme:) or an option is neither
                    r"|(?![A-Za-z][A-Za-z0-9+.-]*:|-)[^\s;\[@=<>!~/]*/[^\s;\[]*"
                    r"|(?!-)[^\s;\[/@=<>!~:]+\.(?:whl|zip|tar\.gz|tgz|tar\.bz2|tbz|tar\.xz|txz|tar)(?=[\s;\[]|$))"
                    r"(?P<rest>.*)$")
#: ``-e NAME``: pip installs the folder NAME (from the working directory) when there is one, else
#: refuses the line (an editable is a path or a VCS URL, never an index name).
_EDITABLE_NAME = re.compile(r"^\s*(?P<editable>(?:-e|--editable)(?:\s*=\s*|\s+))"
                            r"(?P<path>[^\s;\[/:@=<>!~]+)(?P<rest>.*)$")


def _local_match(line: str, spec_folder: Path) -> re.Match[str] | None:
    """The line's local path (pip's reading of it, from ``spec_folder``), or None for an index
    requirement, a URL or an option."""
    found = _LOCAL.match(line)
    if found is not None:
        return found
    editable = _EDITABLE_NAME.match(line)
    if editable is not None and (spec_folder / editable.group("path")).is_dir():
        return editable
    return None


@dataclass(frozen=True)
class LocalRequirement:
    """A requirements line that names a local wheel or project folder (not an index package)."""

    file: Path
    line: int
    written: str  # the path as written (``./wh/x-1.0-py3-none-any.whl``)
    path: Path  # resolved from the spec's folder, links followed
    editable: bool
    rest: str  # extras and markers after the path, as written

    @property
    def wheel(self) -> bool:
        """True for a wheel file (used as it is), False for a project folder (built into a wheel)."""
        return self.path.suffix == ".whl"

    def content_digest(self) -> str:
        """What the tag covers of it: the wheel's bytes, or the folder's files (vxtrain.packaging.source)."""
        if self.wheel:
            h = hashlib.sha256()
            with self.path.open("rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            return h.hexdigest()
        return describe(self.path).digest


def _local_path(written: str, spec_folder: Path) -> Path:
    """A local requirement's path: ``file:`` URLs decoded, relative paths from the spec's folder
    (pip would take them from the working directory: the same spec would build another image
    from elsewhere)."""
    if written.startswith("file:"):
        parsed = urlparse(written)
        written = unquote(parsed.path if parsed.netloc in ("", "localhost") else "//" + parsed.netloc + parsed.path)
    return (spec_folder / written).resolve()


def local_requirements(path: Path, data: bytes, folders: Sequence[Path]) -> list[LocalRequirement]:
    """The local path requirements of the requirements file ``path`` (holding ``data``), resolved
    from ``folders[0]``; RequirementsError for one that is missing or outside every folder of
    ``folders`` (the spec's and the source's: nothing else on this machine goes into an image)."""
    roots = [folder.resolve() for folder in folders]
    out = []
    for number, line in _lines(data):
        found = _local_match(line, roots[0])
        if found is None:
            continue
        written = found.group("path")
        local = LocalRequirement(path, number, written, _local_path(written, roots[0]),
                                 found.group("editable") is not None, found.group("rest").strip())
        where = f"{path}:{number}: {written}"
        if not any(local.path.is_relative_to(root) for root in roots):
            raise RequirementsError(f"{where} is {local.path}, outside the spec's folder and the source folder: "
                                    "a local requirement must be in the project; copy it in")
        if not (local.path.is_dir() if not local.wheel else local.path.is_file()):
            raise RequirementsError(f"{where} is not a {'wheel file' if local.wheel else 'folder'} (looked for "
                                    f"{local.path}; local paths are relative to the spec's folder)")
        out.append(local)
    return out


def _no_local_paths(path: Path, data: bytes, spec_folder: Path) -> None:
    """RequirementsError for a local path in an included file: pip would take it from the working
    directory (``spec_folder``) and build it here; vxtrain handles them in build.requirements itself."""
    for number, line in _lines(data):
        found = _local_match(line, spec_folder)
        if found:
            raise RequirementsError(f"{path}:{number}: {found.group('path')} is a local path in an included "
                                    "requirements file: name local wheels and folders in build.requirements itself")


def _lines(data: bytes) -> Iterator[tuple[int, str]]:
    """(number, text) of each line of a requirements file, its comment cut off."""
    for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
        text = line.split(" #")[0].strip()
        if text and not text.startswith("#"):
            yield number, text
