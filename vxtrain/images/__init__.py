"""Container images built from a local folder without a Docker daemon (``build:`` pools).

A pool's ``build: {base, source, requirements?, python?}`` becomes the image
``<image_repository>/<name>:<hash>``: the base plus a dependency layer and a
code layer, appended as ``crane append``, ko and jib do (docs/container-path.md).

- ``reference``: image references (host, repository, tag, digest), pure text;
- ``recipe``: which files and inputs count, the content hash and the URI (pure
  file reading: what ``plan`` shows);
- ``layers``: reproducible layer tarballs (the code; the wheels pip installs);
- ``image``: the new config and manifest over the base's;
- ``registry``: the OCI distribution API through python-dxf (submit only);
- ``publish``: build and push what is missing (submit only).

Only ``recipe`` and ``reference`` are for ``plan``; the others import requests
and dxf, so callers import them when they push.
"""
from __future__ import annotations
