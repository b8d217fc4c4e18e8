"""Image references as text: ``[HOST[:PORT]/]PATH[:TAG][@sha256:HEX]``, nothing fetched.

The grammar is the distribution project's reference grammar
(https://github.com/distribution/reference/blob/main/reference.go): the first
component is a host when it has a ``.`` or a ``:`` or is ``localhost``; else the
image is on Docker Hub (``library/`` in front of a one-component name).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vxtrain.model import Build

#: Docker Hub's registry host, for references without one.
DOCKER_HUB = "registry-1.docker.io"
#: Docker Hub's names in references; its registry API answers only at DOCKER_HUB (as
#: docker and ggcr map them: ``docker.io/library/python`` is ``python``).
DOCKER_HUB_ALIASES = frozenset({"docker.io", "index.docker.io"})
#: Hosts spoken to over plain HTTP without auth: a registry on this machine (how tests
#: run a real registry). Nothing else ever goes without TLS.
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "[::1]"})
#: Google's registries, where Application Default Credentials' token is the password
#: (username ``oauth2accesstoken``: https://cloud.google.com/artifact-registry/docs/docker/authentication).
GOOGLE_HOST = re.compile(r"^(?:[a-z0-9-]+-docker\.pkg\.dev|(?:[a-z]+\.)?gcr\.io)$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
_COMPONENT = re.compile(r"^[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*$")
_TAG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")
#: ``py310`` in a prebuilt image's name or tag (pytorch-gpu.2-4.py310): the image's Python.
_PY_IN_NAME = re.compile(r"(?:^|[^a-z0-9])py3(\d{1,2})(?:$|[^0-9])")
#: ``python:3.10-slim``: the official Python images name their version in the tag.
_PY_TAG = re.compile(r"^3\.(\d{1,2})(?:$|[^0-9])")


@dataclass(frozen=True)
class Reference:
    """A parsed image reference."""

    host: str
    repository: str
    tag: str | None = None
    digest: str | None = None

    @property
    def alias(self) -> str:
        """What to fetch the manifest by: the digest when given (it wins over a tag), else the tag."""
        return self.digest or self.tag or "latest"

    @property
    def loopback(self) -> bool:
        """True for a registry on this machine (plain HTTP, no auth)."""
        return self.host.rsplit(":", 1)[0] in LOOPBACK_HOSTS or self.host in LOOPBACK_HOSTS

    @property
    def google(self) -> bool:
        """True for Artifact Registry and Container Registry hosts."""
        return bool(GOOGLE_HOST.match(self.host))

    def __str__(self) -> str:
        tail = (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")
        return f"{self.host}/{self.repository}{tail}"


def parse(text: str) -> Reference:
    """``text`` as a Reference; ValueError saying what is wrong."""
    if "://" in text:  # a URL pasted from a console: references are written without a scheme
        raise ValueError(f"write it without a scheme, e.g. {text.split('://', 1)[1].rstrip('/')}")
    rest, _, digest = text.partition("@")
    if digest and not _DIGEST.match(digest):
        raise ValueError(f"digest {digest!r} is not sha256:<64 hex digits>")
    head, _, path = rest.partition("/")
    if path and ("." in head or ":" in head or head == "localhost") and head not in DOCKER_HUB_ALIASES:
        host = head
    else:
        host, path = DOCKER_HUB, path if head in DOCKER_HUB_ALIASES and path else rest
        path = path if "/" in path else f"library/{path}"
    path, tag = _split_tag(path)
    for part in path.split("/"):
        if not _COMPONENT.match(part):
            raise ValueError(f"{part!r} is not a repository name component: lowercase letters, digits and "
                             "separators (. _ __ -), starting and ending with a letter or digit")
    if tag is not None and not _TAG.match(tag):
        raise ValueError(f"tag {tag!r} is not valid: letters, digits, '_', '.', '-', at most 128")
    return Reference(host, path, tag, digest or None)


def _split_tag(path: str) -> tuple[str, str | None]:
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        name, _, tag = path.rpartition(":")
        return name, tag
    return path, None


def parse_repository(text: str) -> Reference:
    """An ``image_repository`` (``HOST/PATH``, no tag or digest) as a Reference; ValueError otherwise."""
    ref = parse(text.rstrip("/"))
    if ref.tag or ref.digest or ref.host == DOCKER_HUB and not text.startswith(DOCKER_HUB):
        raise ValueError("give HOST/PATH with no tag or digest, e.g. us-central1-docker.pkg.dev/PROJECT/REPO")
    return ref


def python_version(ref: Reference) -> str | None:
    """The image's Python (``3.10``) from ``pyNNN`` in its name or tag, or a ``python:3.N`` tag."""
    name = ref.repository.rsplit("/", 1)[-1]
    for text in (name, ref.tag or ""):
        found = _PY_IN_NAME.search(text)
        if found:
            return f"3.{found.group(1)}"
    found = _PY_TAG.match(ref.tag or "") if name == "python" else None
    return f"3.{found.group(1)}" if found else None


def image_python(build: Build) -> str | None:
    """The image's Python: ``build.python``, else the base reference's ``pyNNN`` (None: unknown).
    What the image's tag hashes (vxtrain.images.recipe) and validation checks wheels need."""
    if build.python:
        return build.python
    try:
        return python_version(parse(build.base or ""))
    except ValueError:
        return None
