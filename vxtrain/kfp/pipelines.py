"""The pipelines ``vxtrain convert`` writes, compiled by KFP into PipelineSpec YAML.

- :func:`submit_pipeline` (``--to kfp``): one step, ``submit_op`` with the spec embedded as
  text; vxtrain runs in the step, so nothing of the spec is lost.
- :func:`gcpc_pipeline` (``--to kfp-gcpc``): one step, google-cloud-pipeline-components'
  CustomTrainingJobOp with the compiled job's parts as its arguments (``vxtrain.kfp.gcpc``);
  no vxtrain at run time. The op is the component compiled from google-cloud-pipeline-
  components (``custom_training_job.yaml``, written by scripts/gen_gcpc_component.py),
  because that package cannot be installed beside the google-cloud-aiplatform vxtrain's lock
  holds (docs/decisions.md).
"""
from __future__ import annotations

import re
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from kfp import compiler, components, dsl

from vxtrain.kfp import component

#: CustomTrainingJobOp, compiled (its header names the google-cloud-pipeline-components release).
GCPC_COMPONENT = Path(__file__).with_name("custom_training_job.yaml")
#: KFP's pipeline names (kfp.compiler's validation): lowercase letters, digits and dashes.
_NAME_LIMIT = 128


#: The outputs of the ``--to kfp`` pipeline: its one step's. Made by call, so its fields'
#: types are objects (KFP reads them), not this module's string annotations.
PipelineOutputs = NamedTuple("PipelineOutputs", [("job", str), ("state", str), ("cost_usd", float),
                                                 ("attempts", str)])


def pipeline_name(display_name: str) -> str:
    """A KFP pipeline name from a job's display name: lowercase, ``[a-z0-9-]``, at most 128."""
    name = re.sub(r"[^a-z0-9]+", "-", display_name.lower()).strip("-")[:_NAME_LIMIT].strip("-")
    return name or "vxtrain-job"


def submit_pipeline(spec_text: str, display_name: str, image: str) -> str:
    """The ``--to kfp`` pipeline: ``submit_op`` of ``spec_text`` in ``image``.

    Its parameters are the step's (``wait``, ``endpoint``, ``project``, ``region``); the key
    is the run's id and the task's name, so a retried step adopts its job."""
    op = component.submit_component(image)

    def pipeline(wait: bool = True, endpoint: str = "", project: str = "",
                 region: str = "") -> PipelineOutputs:
        task = op(spec=spec_text, wait=wait, endpoint=endpoint, project=project, region=region)
        outputs = task.outputs
        return PipelineOutputs(outputs["job"], outputs["state"], outputs["cost_usd"], outputs["attempts"])

    # KFP reads the parameters from the signature's objects; this module's annotations are strings.
    pipeline.__annotations__ = {"wait": bool, "endpoint": str, "project": str, "region": str,
                                "return": PipelineOutputs}
    return _compile(pipeline, pipeline_name(display_name),
                    f"vxtrain submit of {display_name!r} in a pipeline step (vxtrain convert --to kfp)")


def gcpc_pipeline(arguments: Mapping[str, Any], display_name: str) -> str:
    """The ``--to kfp-gcpc`` pipeline: CustomTrainingJobOp with ``arguments``."""
    op = components.load_component_from_file(str(GCPC_COMPONENT))

    def pipeline() -> None:
        op(**arguments)

    pipeline.__annotations__ = {"return": None}
    return _compile(pipeline, pipeline_name(display_name),
                    f"{display_name!r} as a Vertex AI CustomJob through CustomTrainingJobOp "
                    "(vxtrain convert --to kfp-gcpc)")


def _compile(function: Callable[..., Any], name: str, description: str) -> str:
    """``function`` as a pipeline named ``name``, compiled to PipelineSpec YAML."""
    pipeline = dsl.pipeline(name=name, description=description)(function)
    with tempfile.TemporaryDirectory(prefix="vxtrain-kfp-") as folder:
        path = Path(folder) / "pipeline.yaml"
        compiler.Compiler().compile(pipeline_func=pipeline, package_path=str(path))
        return path.read_text(encoding="utf-8")
