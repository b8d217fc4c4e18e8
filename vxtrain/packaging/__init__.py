"""Local source folders as Python packages for Vertex AI's prebuilt training images.

A pool's ``python_package.source`` folder becomes an sdist at a content-addressed
URI, ``<staging_bucket>/vxtrain-packages/<name>-<hash>.tar.gz``:

- ``source``: which files count, the content hash, the name and the URI (pure
  file reading: what ``plan`` shows);
- ``build``: the sdist, with pypa ``build`` (``submit`` only);
- ``upload``: to Cloud Storage, only when the object is missing (``submit`` only).

Only ``source`` is imported here; ``build`` and ``upload`` pull in pypa build and
google-cloud-storage, so callers import them when they need them.
"""
from __future__ import annotations

from vxtrain.packaging.source import Source, describe, module_file, package_uri

__all__ = ["Source", "describe", "module_file", "package_uri"]
