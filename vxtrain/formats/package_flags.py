"""gcloud's ``--package-path DIR --module-name M`` for legacy configs (``vxtrain convert``).

``gcloud ai-platform jobs submit training --package-path DIR --module-name M
--config config.yaml`` gave the code pointer on the command line, so most
legacy configs carry none. The flags are applied as gcloud applied them: as the
TrainingInput's ``pythonModule`` and (after gcloud built and uploaded DIR) its
``packageUris``; then the converted pools get ``python_package.source: DIR``
instead, so vxtrain builds and uploads DIR at submit.
"""
from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

from vxtrain.errors import UsageError
from vxtrain.loading.document import Document, NativeSpec

#: Stands for DIR in packageUris while the legacy converter runs (never a real URI).
_MARKER = "vxtrain-package-path://"


def inject(document: Document, package_path: str, module_name: str) -> str:
    """Put the flags into the legacy document; returns DIR relative to the spec's folder."""
    from vxtrain.formats import detect

    data = document.data
    if detect(data) != "legacy":
        raise UsageError("--package-path/--module-name apply to legacy AI Platform configs (trainingInput); "
                         "in a native spec write python_package: {source, module} instead")
    folder = Path(package_path).expanduser().resolve()
    relative = os.path.relpath(folder, document.folder)
    ti = data.get("trainingInput", data)
    if isinstance(ti, MutableMapping):
        ti["pythonModule"] = module_name
        ti["packageUris"] = [_MARKER + relative]
    return relative


def apply(native: NativeSpec) -> None:
    """Turn the marked ``package_uris`` of every converted pool into ``source``."""
    for value in list(native.data.values()):
        pkg = value.get("python_package") if isinstance(value, dict) else None
        if isinstance(pkg, dict):
            _to_source(pkg)


def _to_source(pkg: dict[str, Any]) -> None:
    uris = pkg.get("package_uris")
    if isinstance(uris, list) and len(uris) == 1 and str(uris[0]).startswith(_MARKER):
        del pkg["package_uris"]
        pkg["source"] = str(uris[0])[len(_MARKER):]
