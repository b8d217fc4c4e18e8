"""Google's images for Vertex AI training: where they live and what their names look like.

Vertex AI's images (prebuilt training containers, the Reduction Server) live in
one Artifact Registry multi-region per continent; regions elsewhere use ``us``:
https://cloud.google.com/vertex-ai/docs/training/pre-built-containers. This is
the one home of the prebuilt training images' name pattern: the legacy
converter builds names with :func:`prebuilt_image`, the package rules check
``executor_image`` with :func:`is_prebuilt_image`.
"""
from __future__ import annotations

import re
from functools import cache

from vxtrain import slots
from vxtrain.catalog.machines import series
from vxtrain.catalog.tables import rows

PREBUILT_DOC = "https://cloud.google.com/vertex-ai/docs/training/pre-built-containers"

#: Region prefixes → their Artifact Registry multi-region (everything else: ``us``).
_MULTI_REGIONS = (
    (("europe-", "me-", "africa-"), "europe"),
    (("asia-", "australia-"), "asia"),
)
_DEFAULT_MULTI_REGION = "us"
#: Every multi-region Google publishes its training images in.
MULTI_REGIONS: tuple[str, ...] = (_DEFAULT_MULTI_REGION, *(multi for _, multi in _MULTI_REGIONS))

#: The prebuilt training images' repository, per multi-region, and the older gcr.io mirror (PREBUILT_DOC).
_PREBUILT_REPOSITORY = "{}-docker.pkg.dev/vertex-ai/training"
_PREBUILT_MIRROR = "gcr.io/cloud-aiplatform/training"
#: FRAMEWORK-ACCELERATOR.MAJOR-MINOR[.pyXYZ] (tf-cpu.2-14.py310, pytorch-gpu.2-1.py310, sklearn-cpu.1-0,
#: xgboost-cpu.1-1, …): a pattern rather than a list, as new framework versions keep the shape.
_PREBUILT_NAME = r"[a-z0-9]+(?:-[a-z0-9]+)*\.\d+-\d+(?:\.py\d+)?"
_PREBUILT_TAG = ":latest"
#: The shape of those names, for messages: ``{us,europe,asia}-docker.pkg.dev/vertex-ai/training/NAME:latest``.
PREBUILT_SHAPE = "{" + ",".join(MULTI_REGIONS) + "}-docker.pkg.dev/vertex-ai/training/NAME" + _PREBUILT_TAG
#: Those images' names as a regex, compiled on first use (re's own cache): ~0.4 ms of every
#: cold start, and only ``python_package`` specs match it.
_PREBUILT_IMAGE = ("^(?:" + "|".join(re.escape(_PREBUILT_REPOSITORY.format(m)) for m in MULTI_REGIONS)
                   + "|" + re.escape(_PREBUILT_MIRROR) + ")/" + _PREBUILT_NAME + re.escape(_PREBUILT_TAG) + "$")


def multi_region(region: str | None) -> str:
    """The Artifact Registry multi-region nearest a Vertex region: europe, asia or us (also when unknown)."""
    region = (region or "").lower()
    for prefixes, multi in _MULTI_REGIONS:
        if region.startswith(prefixes):
            return multi
    return _DEFAULT_MULTI_REGION


def prebuilt_image(framework: str, gpu: bool, major: str, minor: str, region: str | None) -> str:
    """Google's prebuilt training image ``FRAMEWORK-{cpu|gpu}.MAJOR-MINOR:latest`` nearest ``region``.

    E.g. ``prebuilt_image("tf", False, "2", "11", "us-central1")`` →
    ``us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-11:latest``.
    """
    repository = _PREBUILT_REPOSITORY.format(multi_region(region))
    return f"{repository}/{framework}-{'gpu' if gpu else 'cpu'}.{major}-{minor}{_PREBUILT_TAG}"


def is_prebuilt_image(image: str) -> bool:
    """Whether ``image`` names one of Google's prebuilt training images (any multi-region, or the gcr.io mirror)."""
    return re.match(_PREBUILT_IMAGE, image) is not None


def in_prebuilt_repository(image: str) -> bool:
    """Whether ``image`` is in a repository of Google's prebuilt training images, whatever its
    name, tag or digest (``is_prebuilt_image`` also asks for a listed name with ``:latest``)."""
    repositories = (*(_PREBUILT_REPOSITORY.format(m) for m in MULTI_REGIONS), _PREBUILT_MIRROR)
    return image.startswith(tuple(f"{repository}/" for repository in repositories))


def reduction_server_image(region: str | None) -> str:
    """Google's Reduction Server image in the multi-region nearest ``region`` (us when unknown).

    https://cloud.google.com/vertex-ai/docs/training/distributed-training#reduction_server
    """
    return slots.RS_IMAGE_TEMPLATE.format(multi_region(region))


#: The platform of every machine series image_platforms.csv does not list (x86-64).
DEFAULT_PLATFORM = "linux/amd64"


@cache
def _platforms() -> dict[str, str]:
    return {r["series"]: r["platform"] for r in rows("image_platforms.csv")}


def image_platform(machine_type: str | None) -> str:
    """The ``os/architecture`` an image must be built for to run on ``machine_type`` (image_platforms.csv):
    ``linux/arm64`` for A4X (Grace CPUs), ``linux/amd64`` for every other machine (and an unknown one)."""
    return _platforms().get(series(machine_type or ""), DEFAULT_PLATFORM)
