"""Rules for ``python_package`` pools and ``staging_bucket``.

A Python package pool runs ``module`` from either ``package_uris`` (archives
already built) or ``source`` (a local folder vxtrain builds and uploads at
submit), never both, in a prebuilt executor image:
https://cloud.google.com/vertex-ai/docs/training/create-python-pre-built-container.
PythonPackageSpec.executor_image_uri (google/cloud/aiplatform/v1/custom_job.proto): "See
the list of pre-built containers for training. You must use an image from this list."
So an executor image outside Google's prebuilt training repositories is an error
(``package-executor-image``); one inside them by another tag than the list's ``:latest``,
or by digest, is a warning (whether the service takes it is unverified).
That ``source`` needs a ``staging_bucket`` is checked where an upload is
needed (``submit`` to Vertex AI or an emulator endpoint), not here: ``plan``
and local runs do without one.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from vxtrain.catalog import PREBUILT_DOC, PREBUILT_SHAPE, in_prebuilt_repository, is_prebuilt_image
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import KeyPath, NativeSpec
from vxtrain.model import Job, Pool, key_path_of
from vxtrain.validation._common import source_folder_checked

#: ``gs://BUCKET`` or ``gs://BUCKET/PREFIX``; bucket names per
#: https://cloud.google.com/storage/docs/buckets#naming (3-63 characters here; dotted names up to 222).
STAGING_BUCKET = re.compile(r"^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](?:/[^\s]*)?$")


def check(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """Every python_package and staging_bucket diagnostic of ``job``."""
    yield from _staging_bucket(job, native)
    base: Path | None = None  # resolved only for a spec with a package: validate's hot path
    for pool in job.ordered_pools():
        if pool.python_package is not None and pool.role != "reduction_server":
            base = base or native.source.folder
            yield from _package(pool, native, base)


def _staging_bucket(job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    bucket = job.staging_bucket
    if bucket is not None and not STAGING_BUCKET.match(bucket):
        yield error("staging-bucket", f"staging_bucket {bucket!r} is not a Cloud Storage location: give "
                    "gs://BUCKET or gs://BUCKET/PREFIX (bucket names: lowercase letters, digits, '-', '_', '.')",
                    **native.where(("staging_bucket",)))


def _path(native: NativeSpec, role: str, *keys: str) -> KeyPath:
    """Where the pool's python_package (or a key in it) was written: the pool, else ``defaults``."""
    return key_path_of(native.data, role, "python_package", *keys)


def _package(pool: Pool, native: NativeSpec, base: Path) -> Iterator[Diagnostic]:
    pkg = pool.python_package
    assert pkg is not None
    if pkg.source is not None and pkg.package_uris:
        yield error("package-source-and-uris", f"{pool.role}.python_package gives both source ({pkg.source}) "
                    "and package_uris: give source (a local folder vxtrain builds and uploads) or "
                    "package_uris (archives already in Cloud Storage), not both",
                    **native.where(_path(native, pool.role, "source")))
    elif pkg.source is None and not pkg.package_uris:
        yield error("package-no-code", f"{pool.role}.python_package has no code: give source (a local folder "
                    "with the package, e.g. source: .) or package_uris (gs:// archives)",
                    **native.where(_path(native, pool.role)))
    if pkg.source is not None:
        yield from _source(pkg.source, pkg.module, pool.role, native, base)
    if pkg.executor_image and not is_prebuilt_image(pkg.executor_image):
        yield _executor_image(pkg.executor_image, native.where(_path(native, pool.role, "executor_image")))


def _executor_image(image: str, where: dict[str, Any]) -> Diagnostic:
    if in_prebuilt_repository(image):
        return warning("package-executor-image", f"executor_image {image} is in Google's prebuilt training "
                       f"images but not as listed ({PREBUILT_SHAPE}, at {PREBUILT_DOC}): the API takes \"an image "
                       "from this list\"; use the listed NAME:latest", **where)
    return error("package-executor-image", f"executor_image {image} is not one of Google's prebuilt training "
                 f"images ({PREBUILT_SHAPE}, listed at {PREBUILT_DOC}): PythonPackageSpec.executorImageUri \"You "
                 "must use an image from this list\"; pick the list's image for your framework, or run your own "
                 "image as a container: image: (or build:) with command: [python, -m, MODULE]", **where)


def _source(source: str, module: str | None, role: str, native: NativeSpec, base: Path) -> Iterator[Diagnostic]:
    folder = yield from source_folder_checked(source, base, "python_package.source", "package-source-missing",
                                              "the package", native, _path(native, role, "source"))
    if folder is None:
        return
    from vxtrain.sources.folder import module_file  # a python_package.source spec's only (cold start)

    if module and module_file(folder, module) is None:
        rel = module.replace(".", "/")
        yield error("package-module-missing", f"module {module} is not in source {source!r}: looked for "
                    f"{rel}.py and {rel}/__main__.py under {folder} (and its src/); source is the folder "
                    "that holds the package, e.g. DIR with DIR/trainer/task.py for trainer.task",
                    **native.where(_path(native, role, "module")))
