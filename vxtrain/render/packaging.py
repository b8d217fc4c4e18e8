"""Source packages and images for people: what ``plan`` says a submit would build and
upload or push, and the bar a large upload draws on a terminal.

:mod:`vxtrain.packaging` builds and uploads without printing; an upload reports
its progress to the ``UploadProgress`` it is given, and ``upload_bar`` is the
command line's. rich is imported only when a bar is drawn.
"""
from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING

from vxtrain.diagnostics import plural

# Annotations only: submit imports this module for its upload bar, and the recipe and sdist
# modules (the source folder's walk, hashlib) are ~10 ms a submit without images pays for nothing.
if TYPE_CHECKING:
    from vxtrain.images.recipe import ImageBuild
    from vxtrain.packaging.sdists import Package
    from vxtrain.packaging.upload import Position


def package_lines(packages: list[Package]) -> list[str]:
    """What ``plan`` prints about the packages a submit would build and upload."""
    from vxtrain.packaging.sdists import UNSET_BUCKET  # with the packages, as above

    lines = []
    for p in packages:
        lines.append(f"{p.spec_source} ({plural(p.source.files, 'file')}, {p.build}) for {', '.join(p.roles)}")
        lines.append(f"  → {p.uri}")
        if p.uri.startswith(UNSET_BUCKET):
            lines.append("  (no staging_bucket: submit needs --staging-bucket gs://BUCKET[/PREFIX])")
    if packages:
        lines.append("submit builds each package and uploads it only if that URI is not there yet")
    return lines


def image_lines(images: list[ImageBuild]) -> list[str]:
    """What ``plan`` prints about the images a submit would build and push."""
    from vxtrain.images.recipe import UNSET_REPOSITORY  # with the images, as above

    lines = []
    for i in images:
        lines.append(f"{i.spec_source} ({plural(i.source.files, 'file')}) for {', '.join(i.roles)}")
        lines.append(f"  base {i.base}" + ("" if i.base_pinned else " (by tag: pin it by digest)"))
        lines.append(f"  platform {i.platform}" + ("" if i.python is None else f", Python {i.python}"))
        if i.spec_requirements:
            lines.append(f"  requirements {i.spec_requirements} (wheels for {i.platform}, Python {i.python})")
        lines.append(f"  → {i.uri}")
        if i.repository.startswith(UNSET_REPOSITORY):
            lines.append("  (no image_repository: submit needs --image-repository HOST/PATH)")
    if images:
        lines.append("submit builds each image and pushes only what its repository lacks (nothing when the tag is there)")
    return lines


def upload_bar(description: str, size: int) -> AbstractContextManager[Position] | None:
    """An ``UploadProgress``: a transient bar on stderr when it is a terminal (bytes, speed); none otherwise."""
    return _bar(description, size) if sys.stderr.isatty() else None


@contextmanager
def _bar(description: str, size: int) -> Iterator[Position]:
    # lazy: rich.progress adds 6 ms to plan's text (render.plan imports this module); only an upload draws a bar
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    with Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                  TransferSpeedColumn(), console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(description, total=size)
        yield lambda position: progress.update(task, completed=position)
