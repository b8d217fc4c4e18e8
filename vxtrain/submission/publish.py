"""What a job needs in place before its create: its ``build:`` images pushed and its
``python_package.source`` packages uploaded, each only where it is missing.

A ``Publication`` is plain data, made from a checked spec (vxtrain.jobplan) and carried
by each rung of the ladder: the images and packages, and the refusal to give when a
repository or bucket is not set. ``publish`` runs once a job is to be created, after
the checks that can still refuse it (the persistent resource, the quota): nothing is
pushed for a job that is not created, nor for a re-submit that adopts its job.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from vxtrain.diagnostics import Diagnostic
from vxtrain.errors import SpecError
from vxtrain.submission.session import Session

# Annotations only: the recipe and sdist modules (the source folder's walk, hashlib: ~6 ms)
# are for a spec with images or packages, which brings them itself (vxtrain.jobplan).
if TYPE_CHECKING:
    from vxtrain.images.publish import Pushed
    from vxtrain.images.recipe import ImageBuild
    from vxtrain.packaging.sdists import Package


@dataclass(frozen=True)
class Publication:
    """What one job needs published before its create."""

    images: tuple[ImageBuild, ...] = ()
    packages: tuple[Package, ...] = ()
    #: Given instead of pushing when the images have no repository (at the key that needs one).
    no_repository: Diagnostic | None = None
    #: Given instead of uploading when the packages have no staging bucket.
    no_bucket: Diagnostic | None = None


def publish(session: Session, publication: Publication | None, project: str) -> list[Pushed]:
    """Push the images, then upload the packages, where they are missing; the images as
    pushed (or found already there). Their steps go to the session's logger, large uploads
    to its ``upload`` hook. Raises SpecError, with nothing pushed, when the images have no
    repository; with the images pushed, when the packages have no bucket."""
    if publication is None:
        return []
    say = _say(session)
    progress = session.hooks.upload
    pushed: list[Pushed] = []
    if publication.images:
        _refuse(publication.no_repository)
        # lazy: images.publish brings requests and dxf, ~100 ms of imports (-X importtime) that
        # only a submit with build: images needs (status, wait, logs never do)
        from vxtrain.images.publish import publish as push

        pushed = push(list(publication.images), say=say, progress=progress)
    if publication.packages:
        _refuse(publication.no_bucket)
        from vxtrain.packaging import sdists  # lazy: as the images' push above

        sdists.publish(list(publication.packages), project, say=say, progress=progress)
    return pushed


def _say(session: Session) -> Callable[[str], None]:
    """The images' and packages' line sink: the session's logger."""
    return lambda line: session.log.warning("%s", line)


def _refuse(refusal: Diagnostic | None) -> None:
    if refusal is not None:
        raise SpecError([refusal])


def images_json(pushed: Sequence[Pushed]) -> list[dict[str, Any]]:
    """submit's ``images``: one entry per pool of each image."""
    return [entry for image in pushed for entry in image.to_json()]
