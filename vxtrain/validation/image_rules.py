"""Rules for ``build:`` pools and ``image_repository`` (docs/container-path.md).

A pool builds its image from a folder (``build: {base, source, requirements?,
python?}``) instead of naming one: never both, nor with ``python_package``.
The base must be a valid reference; one given by tag, not digest, gets a
warning (a moved tag changes the image without changing its URI). A
requirements file needs the image's Python (``build.python`` or ``pyNNN`` in
the base's name or tag) to pick wheels for. That the repository is set is
checked where a push is needed (``submit``), as for ``staging_bucket``.
"""
from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from types import ModuleType

from vxtrain.catalog.images import DEFAULT_PLATFORM, image_platform
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Job, Pool, key_path_of
from vxtrain.validation._common import source_folder_checked


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Every build and image_repository diagnostic of ``job``."""
    if job.image_repository is None and all(pool.build is None for pool in job.ordered_pools()):
        return  # most specs: the image helpers (reference regexes, recipe) stay unloaded
    yield from _repository(job, native)
    for pool in job.ordered_pools():
        if pool.build is not None and pool.role != "reduction_server":
            yield from _build(pool, native)


def _reference() -> ModuleType:
    """vxtrain.images.reference: an image reference's grammar (what the push reads of one, no push code)."""
    # lazy: +1.9 ms on validate's path (measured, -X importtime); only a spec with build: or
    # image_repository needs it
    from vxtrain.images import reference

    return reference


def _requirement_files() -> ModuleType:
    """vxtrain.sources.requirements: the -r/-c includes, the bytes the tag covers, local paths."""
    # lazy: as _reference() (what images.recipe cost before it moved there); only a spec with
    # build.requirements needs it
    from vxtrain.sources import requirements

    return requirements


def _path(native: NativeSpec, role: str, *keys: str) -> KeyPath:
    """Where the pool's build (or a key in it) was written: the pool, else ``defaults``."""
    return key_path_of(native.data, role, "build", *keys)


def _repository(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    if not job.image_repository:
        return  # absent, or empty: the schema's minLength says so
    try:
        _reference().parse_repository(job.image_repository)
    except ValueError as exc:
        yield error("image-repository", f"image_repository {job.image_repository!r} is not a repository: {exc}",
                    **native.where(("image_repository",)))


def _build(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    build = pool.build
    assert build is not None  # (a pool that also gives image or python_package: container_rules.code_rules)
    base_ok = (yield from _base(build.base, pool.role, native)) if build.base else False
    if base_ok:
        yield from _platform_and_python(pool, native)
    base = native.source.folder
    if build.source:
        yield from source_folder_checked(build.source, base, "build.source", "build-source-missing", "the image",
                                         native, _path(native, pool.role, "source"))
    if build.requirements:
        yield from _requirements(build.requirements, base, build.source, native,
                                 _path(native, pool.role, "requirements"))
        if _reference().image_python(build) is None and base_ok:  # a bad or missing base has its own error
            yield error("build-python", f"{pool.role}.build has requirements but the image's Python is not known: "
                        f"the base {build.base!r} has no pyNNN in its name or tag; set build.python, e.g. '3.10'",
                        **native.where(_path(native, pool.role)))


def _base(text: str, role: str, native: NativeSpec) -> Generator[Diagnostic, None, bool]:
    """The base's diagnostics; returns whether it is a valid image reference."""
    try:
        ref = _reference().parse(text)
    except ValueError as exc:
        yield error("build-base", f"build.base {text!r} is not an image reference: {exc}",
                    **native.where(_path(native, role, "base")))
        return False
    if ref.digest is None:
        yield warning("base-by-tag", f"build.base {text} is given by tag: a moved tag changes the image without "
                      "changing its URI, and is not noticed; pin it by digest (IMAGE@sha256:...)",
                      **native.where(_path(native, role, "base")))
    return True


def _platform_and_python(pool: Pool, native: NativeSpec) -> Iterator[Diagnostic]:
    """What the base must have that only its registry knows (submit checks it): an image for the
    pool's platform (A4X: linux/arm64; exit 4), the Python of build.python (exit 1, at its line).
    An error when the base's name already says another Python (``py310``)."""
    build = pool.build
    assert build is not None and build.base is not None
    platform = image_platform(pool.machine_type)
    if platform != DEFAULT_PLATFORM:
        yield warning("build-platform", f"{pool.role} runs on {pool.machine_type} ({platform}): its image is built for "
                      f"{platform}, so the base {build.base} needs a {platform} image; submit checks it in the "
                      "registry before anything is pushed", **native.where(_path(native, pool.role, "base")))
    if not build.python:
        return
    named = _reference().python_version(_reference().parse(build.base))
    if named is not None and named != build.python:
        yield error("build-python-base", f"build.python {build.python!r} is not the base's Python ({named}, from "
                    f"its name {build.base}): wheels for {build.python} would not import in it; set build.python "
                    f"to '{named}' or leave it out", **native.where(_path(native, pool.role, "python")))
    elif named is None:
        yield warning("build-python-unchecked", f"build.python {build.python!r}: the base {build.base} does not say "
                      "its Python in its name; submit confirms it from the base (its PYTHON_VERSION, else the Python its "
                      "layers install) and refuses another, or a base that shows none",
                      **native.where(_path(native, pool.role, "python")))


def _requirements(requirements: str, base: Path, source: str | None, native: NativeSpec,
                  path: KeyPath) -> Iterator[Diagnostic]:
    from vxtrain.sources.folder import source_folder  # a build: spec's only (validate's cold start)

    try:
        found = source_folder(base, requirements)
    except (ValueError, RuntimeError) as exc:
        yield error("build-requirements-missing", f"build.requirements {requirements!r} is not a usable path ({exc})",
                    **native.where(path))
        return
    try:
        is_file = found.is_file()
    except OSError as exc:  # a name part past 255 bytes, a folder on the way that cannot be entered
        yield error("build-requirements-missing", f"build.requirements {requirements!r} cannot be looked up "
                    f"({exc.strerror or exc}); give a requirements.txt relative to the spec", **native.where(path))
        return
    if not is_file:
        yield error("build-requirements-missing", f"build.requirements {requirements!r} is not a file (looked for "
                    f"{found}); give a requirements.txt relative to the spec", **native.where(path))
        return
    if (yield from _requirements_inside(requirements, found, base, source, native, path)):
        return  # nothing outside is read, not even to bound it
    reqs = _requirement_files()
    try:
        # bounded: what the image tag covers, local paths from the spec's folder as plan takes them
        reqs.requirements_bytes(found, _requirement_roots(base, source))
    except reqs.RequirementsError as exc:
        yield error("build-requirements-unreadable", f"build.requirements {requirements!r}: {exc}",
                    **native.where(path))


def _requirement_roots(base: Path, source: str | None) -> list[Path]:
    """Where requirements files and their local paths may be: the spec's folder (local paths
    resolve from it), then the source folder (when usable: an unusable one has its own error)."""
    from vxtrain.sources.folder import source_folder  # as in _requirements

    roots = [base]
    try:
        roots += [source_folder(base, source)] if source else []
    except (ValueError, RuntimeError):
        pass
    return roots


def _requirements_inside(requirements: str, found: Path, base: Path, source: str | None, native: NativeSpec,
                         path: KeyPath) -> Generator[Diagnostic, None, bool]:
    """An error for each requirements file or ``-r``/``-c`` line that names a file outside the
    spec's folder and the source folder: pip would read it and quote it in its error. The
    message names the file and line, never what the named file holds. Returns whether any."""
    roots = _requirement_roots(base, source)
    where = " or ".join(dict.fromkeys(str(root.resolve()) for root in roots))
    outside = _requirement_files().outside_includes(found, roots)
    for bad in outside:
        what = (f"build.requirements {requirements!r} is {bad.resolved}" if bad.line == 0
                else f"{bad.file}:{bad.line}: includes {bad.written} ({bad.resolved})")
        yield error("build-requirements-outside", f"{what}, outside the spec's folder and the source folder "
                    f"({where}): requirements files, and those they include with -r/-c, must be in the project; "
                    "copy the file in, or name it relative to a file inside", **native.where(path))
    return bool(outside)
