"""Local source folders as Python packages for Vertex AI's prebuilt training images.

A pool's ``python_package.source`` folder becomes an sdist at a content-addressed
URI, ``<staging_bucket>/vxtrain-packages/<name>-<hash>.tar.gz``:

- ``sdists``: the sdists a job's pools need, their URIs (from the folder's files and
  hash: vxtrain.sources.folder, pure file reading, what ``plan`` shows), and their
  build and upload (``submit`` only);
- ``build``: the sdist, with pypa ``build`` (``submit`` only);
- ``upload``: to Cloud Storage, only when the object is missing (``submit`` only);
- ``install``: ``pip --target`` of a package for local runs.

Nothing is imported here: ``build`` and ``upload`` pull in pypa build and
google-cloud-storage, so callers import what they need.
"""
