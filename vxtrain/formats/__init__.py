"""Input formats: detect which one a document is written in and normalize it.

Three formats are accepted (docs/spec-reference.md, "Input formats"):

- **native**: vxtrain's role-based YAML, passed through unchanged;
- **gcloud**: the CustomJobSpec file ``gcloud ai custom-jobs create --config``
  takes (or a whole CustomJob), converted by :mod:`vxtrain.formats.gcloud`;
- **legacy**: an AI Platform Training ``trainingInput`` document, converted by
  :mod:`vxtrain.formats.legacy`.

Converters build the native dict through :class:`vxtrain.formats.common.Conversion`,
which records where every native key came from, so diagnostics point at what the
user wrote. Nothing in this package imports google.cloud.aiplatform.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vxtrain.diagnostics import Diagnostic, error
from vxtrain.errors import UsageError
from vxtrain.formats.native import native_document
from vxtrain.formats.package_flags import LEGACY_ONLY, PackageFlags
from vxtrain.loading.document import Document, Format, NativeSpec

__all__ = ["PackageFlags", "detect", "native_document", "to_native"]

#: Top-level keys that only an AI Platform Training document has.
LEGACY_MARKERS: tuple[str, ...] = ("trainingInput", "scaleTier", "masterType", "masterConfig", "workerCount")

def detect(data: Any) -> Format:
    """Which input format ``data`` (a loaded YAML root) is written in."""
    if not isinstance(data, Mapping):
        return "native"
    if any(key in data for key in LEGACY_MARKERS):
        return "legacy"
    job_spec = data.get("jobSpec")
    if "workerPoolSpecs" in data or (isinstance(job_spec, Mapping) and "workerPoolSpecs" in job_spec):
        return "gcloud"
    return "native"


def to_native(document: Document, *, display_name: str | None = None,
              package: PackageFlags | None = None) -> tuple[NativeSpec | None, list[Diagnostic]]:
    """The document in the native shape, plus the diagnostics of the conversion.

    ``display_name`` is used by formats that have none of their own (gcloud's
    ``--display-name``, else the file stem). ``package``: gcloud's
    ``--package-path``/``--module-name``, for legacy configs only (UsageError
    for any other format). Native input is returned as is: its JSON Schema
    check happens in the next stage.
    """
    data = document.data
    if package is not None and detect(data) != "legacy":
        raise UsageError(LEGACY_ONLY)
    if not isinstance(data, Mapping):
        msg = f"a spec must be a mapping of keys to values, got {type(data).__name__}"
        return None, [error("not-a-mapping", msg, "", file=document.file, line=1, column=1)]
    fmt = detect(data)
    if fmt == "gcloud":
        from vxtrain.formats import gcloud  # lazy: +6 ms on validate's path; a native spec never needs it

        return gcloud.convert(document, display_name=display_name)
    if fmt == "legacy":
        from vxtrain.formats import legacy  # lazy: +10 ms on validate's path; a native spec never needs it

        return legacy.convert(document, display_name=display_name, package=package)
    return NativeSpec(data=dict(data), format="native", source=document, origin={}), []
