"""A job's ``python_package.source`` folders as sdists: their URIs before compile, their uploads at submit.

``resolve`` runs before the (pure) compiler: it hashes each source folder and
returns a new job whose pools carry the content-addressed URI in ``package_uris``,
so the compiled CustomJob carries ``packageUris: [URI]``. Without a staging bucket
the URI starts with ``UNSET_BUCKET``: ``plan`` still shows what would be built, and
``submit`` refuses before any upload (vxtrain.submission.publish).

``publish`` (submit only) builds each distinct source once and uploads it only
when its URI is not in the bucket yet. It prints nothing: its steps go to the
``say`` and ``progress`` its caller gives (vxtrain.render lays out both, and
what ``plan`` shows about the packages).
"""
from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from vxtrain.model import Job
from vxtrain.packaging.upload import UploadProgress, existing_generation, storage_client, upload_if_missing
from vxtrain.sources.folder import Source, check_unchanged, describe_once, source_folder

#: Stands for the bucket in URIs planned without one (never a valid gs:// URI).
UNSET_BUCKET = "<staging_bucket>"
#: Where packages go under the staging bucket.
PACKAGES_PREFIX = "vxtrain-packages"


def package_uri(staging_bucket: str, name: str, digest: str) -> str:
    """``<staging_bucket>/vxtrain-packages/<name>-<digest>.tar.gz``: the sdist of the source folder
    named ``name`` whose files hash to ``digest`` (vxtrain.sources.folder.Source)."""
    return f"{staging_bucket.rstrip('/')}/{PACKAGES_PREFIX}/{name}-{digest}.tar.gz"


@dataclass
class Package:
    """One source folder of a job and where its sdist goes."""

    source: Source
    uri: str
    roles: list[str] = field(default_factory=list)
    spec_source: str = ""  # the folder as the spec wrote it
    module: str | None = None

    @property
    def build(self) -> str:
        """How the sdist is made, in words."""
        if self.source.kind == "project":
            return "pypa build of the project"
        return "pypa build of a generated setup.py (a bare package folder)"

    @property
    def bucket_set(self) -> bool:
        """Whether a staging bucket was given (else the URI only shows where one goes)."""
        return not self.uri.startswith(UNSET_BUCKET)

    def to_json(self) -> dict[str, Any]:
        """The ``packages`` entry of ``plan --output json``."""
        return {"source": self.spec_source, "path": str(self.source.path), "pools": self.roles,
                "name": self.source.name, "hash": self.source.digest, "files": self.source.files,
                "build": self.source.kind, "uri": self.uri,
                "bucket_set": self.bucket_set}


def resolve(job: Job, base: Path, staging_bucket: str | None,
            described: dict[Path, Source] | None = None) -> tuple[Job, list[Package]]:
    """Hash every pool's ``source`` folder (relative to ``base``): a new job whose pools
    carry the content-addressed URI in ``package_uris``, and the packages to publish.
    ``job`` itself is left as it is (the model the rules checked).

    A folder used by several pools is hashed once and gets one URI. ``described``: the
    folders hashed already (see describe_once).
    """
    described = {} if described is None else described
    by_folder: dict[Path, Package] = {}
    pools = dict(job.pools)
    for pool in job.ordered_pools():
        pkg = pool.python_package
        if pkg is None or pkg.source is None or pkg.package_uris:
            continue
        folder = source_folder(base, pkg.source)
        package = by_folder.get(folder)
        if package is None:
            src = describe_once(folder, described)
            package = Package(src, package_uri(staging_bucket or UNSET_BUCKET, src.name, src.digest),
                              spec_source=pkg.source,
                              module=pkg.module)
            by_folder[folder] = package
        package.roles.append(pool.role)
        pools[pool.role] = replace(pool, python_package=replace(pkg, package_uris=[package.uri]))
    return replace(job, pools=pools), list(by_folder.values())


@dataclass(frozen=True)
class Published:
    """A package after ``publish``: its URI, generation, and whether this submit uploaded it."""

    uri: str
    generation: int
    uploaded: bool


def publish(packages: list[Package], project: str | None = None,
            say: Callable[[str], object] | None = None,
            progress: UploadProgress | None = None) -> list[Published]:
    """Build and upload each package whose URI is missing; nothing for those already there.

    ``say`` gets each step in words; ``progress`` watches each large upload."""
    from vxtrain.packaging.build import build_sdist  # lazy: pypa build, for submit only (plan resolves)

    if not packages:
        return []
    say = say or (lambda message: None)
    client = storage_client(project)
    out = []
    try:
        for p in packages:
            generation = existing_generation(p.uri, client)
            if generation is not None:  # this very content is there: no build, no upload
                say(f"package {p.uri} is already uploaded")
                out.append(Published(p.uri, generation, uploaded=False))
                continue
            say(f"building {p.spec_source} ({p.build})")
            with tempfile.TemporaryDirectory(prefix="vxtrain-sdist-") as tmp:
                sdist = build_sdist(p.source, tmp)
                check_unchanged(p.source, p.spec_source, p.uri)
                result = upload_if_missing(sdist, p.uri, client, progress)
            say(f"{'uploaded' if result.uploaded else 'already uploaded'}: {p.uri}")
            out.append(Published(result.uri, result.generation, result.uploaded))
    finally:
        client.close()
    return out
