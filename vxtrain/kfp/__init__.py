"""vxtrain in Kubeflow Pipelines and Vertex AI Pipelines (the ``kfp`` extra: ``pip install 'vxtrain[kfp]'``).

- :data:`submit_op`: a KFP v2 component that runs ``vxtrain submit`` in a pipeline step
  (``vxtrain.kfp.component``; what the step does: ``vxtrain.kfp.step``);
- ``vxtrain convert FILE --to kfp``: a one-step pipeline with that component, the spec
  embedded as text; ``--to kfp-gcpc``: the same job through google-cloud-pipeline-components'
  CustomTrainingJobOp, without vxtrain at run time (``vxtrain.kfp.pipelines``,
  ``vxtrain.kfp.gcpc``).

``submit_op`` is made on first use, so ``vxtrain.kfp.step`` and ``vxtrain.kfp.gcpc`` import
without kfp; its image is ``VXTRAIN_KFP_IMAGE`` as it is then (docs/pipelines.md).
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vxtrain.kfp.component import SubmitComponent

__all__ = ["submit_component", "submit_op"]


@functools.lru_cache(maxsize=1)
def _submit_op() -> SubmitComponent:
    # lazy: kfp (~0.4 s) only for whoever uses the component
    from vxtrain.kfp import component

    return component.submit_component(component.image_from_env())


def __getattr__(name: str) -> Any:
    """``submit_op`` (the component in ``VXTRAIN_KFP_IMAGE``) and ``submit_component``, made on first use."""
    if name == "submit_op":
        return _submit_op()
    if name == "submit_component":
        # lazy: kfp only for whoever uses the component
        from vxtrain.kfp.component import submit_component

        return submit_component
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
