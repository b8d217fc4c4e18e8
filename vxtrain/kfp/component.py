"""``submit_op``: vxtrain as a KFP v2 component (Kubeflow Pipelines, Vertex AI Pipelines).

A lightweight Python component (``@dsl.component``): KFP ships the function's source to
the step and runs it in the image named here with KFP's executor, which is kfp's own
code: the image must carry ``vxtrain[kfp]``. The function body hands everything to
:func:`vxtrain.kfp.step.run`, which runs ``vxtrain submit``.

The image is ``VXTRAIN_KFP_IMAGE`` as it is when this module is imported (when the
pipeline is compiled), else :data:`UNSET_IMAGE`, a name that cannot be pulled and says
what to set; :func:`submit_component` makes the component for any other image.
"""
from __future__ import annotations

import os
import typing
from typing import Any, Dict, NamedTuple

from kfp import dsl
from kfp.dsl.python_component import PythonComponent

from vxtrain import __version__

#: Where the step's image comes from when the pipeline is compiled.
IMAGE_ENV = "VXTRAIN_KFP_IMAGE"
#: The image without VXTRAIN_KFP_IMAGE: ``.invalid`` is reserved never to resolve (RFC 2606),
#: so a pipeline compiled without the variable fails at its first pull, naming it.
UNSET_IMAGE = f"set-vxtrain-kfp-image.invalid/vxtrain:{__version__}"
#: The key a task gets unless its caller gives one: the pipeline run's id and the task's name,
#: as the pipeline's backend fills them in, so a retried task (same run, same task) adopts the
#: job its first try created. Placeholders go in as a task's argument, the way KFP documents
#: them: a backend may leave a component's own default unresolved (kubeflow/pipelines#9572).
DEFAULT_KEY = f"{dsl.PIPELINE_JOB_ID_PLACEHOLDER}-{dsl.PIPELINE_TASK_NAME_PLACEHOLDER}"


def image_from_env() -> str:
    """``VXTRAIN_KFP_IMAGE``, else :data:`UNSET_IMAGE`."""
    return os.environ.get(IMAGE_ENV) or UNSET_IMAGE


# KFP ships this function's source text to the step and runs it there in a module of its own
# (kfp, `from kfp.dsl import *`, `from typing import *`): it must name nothing of this module,
# so its return type is written out in full, and its defaults are the literals KFP records.
def submit_op(spec: str, vars: Dict[str, Any] = {}, key: str = "", wait: bool = True, endpoint: str = "",
              project: str = "", region: str = "") -> NamedTuple(  # type: ignore[valid-type]
                  "Outputs", [("job", str), ("state", str), ("cost_usd", float), ("attempts", str)]):
    """Submit a vxtrain spec as a Vertex AI job and follow it, inside a pipeline step.

    Args:
        spec: The spec: a path in the step's image, a gs:// URI, or the spec's YAML text.
        vars: Values for the spec's ${NAME} variables (vxtrain submit --var NAME=VALUE).
        key: The idempotency key (default: the run's id and the task's name): a retried task adopts its job.
        wait: Follow the job to its end; the step fails when the job fails (vxtrain submit --wait).
        endpoint: HOST:PORT of a vxtrain emulator instead of Vertex AI (tests).
        project: The Google Cloud project (default: the spec's, else the environment's).
        region: The Vertex AI region (default: the spec's, else the environment's).

    Returns:
        job: The job's resource name (the last attempt's).
        state: The job's state, e.g. JOB_STATE_SUCCEEDED.
        cost_usd: The estimated cost of every attempt at list prices (0 without wait).
        attempts: Each rung and attempt, its job and outcome, as JSON.
    """
    # lazy: the step's vxtrain, in the image (this body is all KFP ships to the step)
    from vxtrain.kfp.step import run

    return run(spec, vars, key, wait, endpoint, project, region)


# The module's annotations are strings (`from __future__ import annotations`); KFP reads a
# component's interface from the signature's objects, so it gets them evaluated.
submit_op.__annotations__ = typing.get_type_hints(submit_op)


class SubmitComponent(PythonComponent):  # type: ignore[misc]  # kfp is untyped
    """The component; each task it makes gets :data:`DEFAULT_KEY` as its ``key`` argument unless
    one is given, and is never cached."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("key", DEFAULT_KEY)
        task = super().__call__(*args, **kwargs)
        # A submit is never a cached result: a later run with the same inputs trains again
        # (its key, the run's id, differs), so its outputs are never copied from an earlier run.
        task.set_caching_options(False)
        return task


def submit_component(image: str) -> SubmitComponent:
    """``submit_op`` running in ``image`` (one ``configs/vxtrain-image.yaml`` builds, with the kfp extra)."""
    # The image carries kfp (vxtrain[kfp]): no pip install of kfp as the step starts, which
    # would need a package index from inside the pipeline's network.
    component = dsl.component(base_image=image, install_kfp_package=False)(submit_op)
    return SubmitComponent(component_spec=component.component_spec, python_func=component.python_func)
