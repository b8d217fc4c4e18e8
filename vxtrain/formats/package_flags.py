"""gcloud's ``--package-path DIR --module-name M`` for legacy configs (``vxtrain convert``).

``gcloud ai-platform jobs submit training --package-path DIR --module-name M
--config config.yaml`` gave the code pointer on the command line, so most
legacy configs carry none. The flags stand for the TrainingInput's
``pythonModule`` and ``packageUris`` (gcloud built and uploaded DIR for the
latter), as gcloud applied them; the legacy converter takes them as an
argument and writes every converted Python-package pool's
``python_package.module`` and ``python_package.source: DIR`` (relative to the
spec's folder), so vxtrain builds and uploads DIR at submit.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from vxtrain.errors import UsageError
from vxtrain.loading.document import Document, Position

PATH_FLAG = "--package-path"
MODULE_FLAG = "--module-name"
#: Where a diagnostic about a value from a flag points: at the flag, as --region's do.
PATH_POSITION, MODULE_POSITION = Position(PATH_FLAG, 1, 1), Position(MODULE_FLAG, 1, 1)
#: The flags on a spec that is not a legacy config (a usage error).
LEGACY_ONLY = (f"{PATH_FLAG}/{MODULE_FLAG} apply to legacy AI Platform configs (trainingInput); "
               "in a native spec write python_package: {source, module} instead")


@dataclass(frozen=True)
class PackageFlags:
    """The two flags: ``source`` is DIR relative to the spec's folder, ``module`` the module to run."""

    source: str
    module: str


def from_flags(document: Document, package_path: str | None, module_name: str | None) -> PackageFlags | None:
    """The flags of a ``convert`` run (None when neither is given); UsageError when only one is."""
    if not (package_path or module_name):
        return None
    if not (package_path and module_name):
        raise UsageError(f"{PATH_FLAG} and {MODULE_FLAG} go together (as in gcloud)")
    return PackageFlags(_relative_to_spec(document, package_path), module_name)


def _relative_to_spec(document: Document, package_path: str) -> str:
    """DIR (relative to the current folder, as gcloud read it) relative to the spec's folder."""
    folder = Path(package_path).expanduser().resolve()
    return os.path.relpath(folder, document.folder)
