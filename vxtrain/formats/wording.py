"""How each input format says things: hints and key names in the words the user wrote.

Validation works on the native shape; when a diagnostic must tell the user what
to add, it asks here for the words of the format they wrote (``NativeSpec.format``),
so a gcloud config is told about ``workerPoolSpecs[0]`` and a legacy one about
``masterType``, never about native keys they have never seen.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from vxtrain.loading.document import Format


@dataclass(frozen=True)
class Wording:
    """One format's words for what validation asks the user to add."""

    #: How to add the primary replica (workerPoolSpecs[0]).
    chief_hint: str
    #: How to give a pool something to run; INDEX stands for the pool's index.
    code_hint: str
    #: Native key name → the format's own name, for keys that are absent (the
    #: origin map cannot say how the user would have spelled them).
    key_names: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def code_hint_for(self, index: int) -> str:
        """``code_hint`` for the pool at ``index``."""
        return self.code_hint.replace("INDEX", str(index))

    def key_name(self, native_key: str) -> str:
        """The format's name of ``native_key`` (the native name when it has no other)."""
        return self.key_names.get(native_key, native_key)


_WORDING: dict[Format, Wording] = {
    "native": Wording(
        chief_hint="add 'chief:' with a machine_type and an image",
        code_hint="give 'image' (a container URI) or 'python_package' {executor_image, module, source or "
                  "package_uris}, in the pool or in 'defaults'"),
    "gcloud": Wording(
        chief_hint="give workerPoolSpecs[0] a machineSpec, replicaCount: 1 and a containerSpec",
        code_hint="give workerPoolSpecs[INDEX] a containerSpec {imageUri} or a pythonPackageSpec "
                  "{executorImageUri, packageUris, pythonModule}",
        key_names=MappingProxyType({"type": "acceleratorType", "executor_image": "executorImageUri",
                                    "package_uris": "packageUris", "module": "pythonModule",
                                    "display_name": "displayName"})),
    "legacy": Wording(
        chief_hint="with scaleTier: CUSTOM, set masterType (the chief's machine type, e.g. "
                   "masterType: n1-standard-8)",
        code_hint="set masterConfig.imageUri (a custom container, which the other pools inherit) or packageUris "
                  "and pythonModule (a Python package)",
        key_names=MappingProxyType({"executor_image": "runtimeVersion", "package_uris": "packageUris",
                                    "module": "pythonModule", "display_name": "jobId"})),
}


def wording(fmt: Format) -> Wording:
    """The words of input format ``fmt``."""
    return _WORDING[fmt]
