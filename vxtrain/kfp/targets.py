"""``vxtrain convert FILE --to kfp|kfp-gcpc``: the pipeline for a checked spec, and what to say of it.

``kfp`` runs vxtrain in the step, so the whole spec goes along (its ladder, recovery and
notifications included); what it warns of is where the step runs: its image, and source
folders read in the step's working directory. ``kfp-gcpc`` hands the compiled job to
CustomTrainingJobOp, which creates it and nothing more: it warns what vxtrain's submit
would have done beside the job (the ladder, recovery, notify, the quota check, pushing
built images and packages), and refuses a job the op would send otherwise than compiled.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.kfp import component, gcpc, pipelines
from vxtrain.loading.fallback import FALLBACK_KEY
from vxtrain.pipeline import Result

#: The op's inputs its template puts between quotes in the job's JSON payload, unescaped
#: (google_cloud_pipeline_components/v1/custom_job/component.py): a quote, a backslash or a
#: control character there breaks the payload or changes the value.
_QUOTED_INPUTS = ("display_name", "timeout", "strategy", "max_wait_duration", "service_account", "tensorboard",
                  "network", "base_output_directory", "persistent_resource_id", "encryption_spec_key_name")


@dataclass
class Written:
    """A target's text (None when refused) and its diagnostics."""

    text: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


def kfp(result: Result, spec_text: str) -> Written:
    """``--to kfp``: ``submit_op`` with ``spec_text`` (the spec as checked, in the native format)."""
    assert result.native is not None and result.job is not None
    where = result.native.where(())
    said: list[Diagnostic] = []
    image = component.image_from_env()
    if image == component.UNSET_IMAGE:
        said.append(warning(
            "kfp-image-unset", f"the step's image is {image}, which cannot be pulled: set {component.IMAGE_ENV} "
            "to the image configs/vxtrain-image.yaml builds (with vxtrain[kfp]) when you convert", **where))
    folders = sorted({b.spec_source for b in result.images} | {p.spec_source for p in result.packages})
    if folders:
        said.append(warning(
            "kfp-local-source", "the step runs `vxtrain submit` in its image, where it reads "
            f"{', '.join(folders)} relative to the step's working directory: put the folders there in the "
            "image, or give the step a spec whose code is already pushed", **where))
    return Written(pipelines.submit_pipeline(spec_text, _display_name(result), image), said)


def kfp_gcpc(result: Result) -> Written:
    """``--to kfp-gcpc``: CustomTrainingJobOp with the compiled job (rung 0)."""
    native, job, custom_job = result.native, result.job, result.custom_job
    assert native is not None and job is not None and custom_job is not None
    where = native.where(())
    if result.hyperparameter_tuning_job is not None:
        return Written(None, [_refused("a study (`study:`) is a HyperparameterTuningJob, and the op creates "
                                       "CustomJobs only", native.where(("study",)))])
    op = gcpc.op_arguments(custom_job, job.project, job.region)
    refusals = _refusals(op, where)
    if refusals:
        return Written(None, refusals)
    return Written(pipelines.gcpc_pipeline(op.arguments, _display_name(result)), _dropped(result))


def _display_name(result: Result) -> str:
    """The job's display name as compiled (the pipeline is named after it)."""
    return str((result.custom_job or {}).get("displayName") or Path(result.file).stem)


def _refusals(op: gcpc.OpArguments, where: dict[str, Any]) -> list[Diagnostic]:
    """Why the op would not send the compiled job as it is (empty: it would)."""
    found: list[Diagnostic] = []
    if op.dropped:
        found.append(_refused(f"it has no input for {', '.join(f'`{p}`' for p in op.dropped)}", where))
    if {} in op.arguments.get("worker_pool_specs", []):
        # container/v1/gcp_launcher/utils/json_util.py, recursive_remove_empty: every empty
        # value leaves the payload, a list's `{}` items too, so the later pools move down a slot.
        found.append(_refused("its launcher drops an empty worker pool slot (`{}`) from the list, so the "
                              "pools after it would move into the wrong slots (an evaluator would become "
                              "a worker)", where))
    for name in _QUOTED_INPUTS:
        value = op.arguments.get(name)
        if isinstance(value, str) and any(c in '"\\' or ord(c) < 0x20 for c in value):
            found.append(_refused(f"its {name} {value!r} holds a quote, a backslash or a control character, "
                                  "which the op writes into the job's JSON unescaped", where))
    return found


def _refused(why: str, where: dict[str, Any]) -> Diagnostic:
    """The error that CustomTrainingJobOp cannot carry this job."""
    return error("kfp-gcpc-cannot-carry", f"--to kfp-gcpc cannot say this job through CustomTrainingJobOp: {why}; "
                 "`--to kfp` runs vxtrain in the step, which sends the job as it is", **where)


def _dropped(result: Result) -> list[Diagnostic]:
    """What ``vxtrain submit`` does beside creating the job, which the op does not."""
    native, job = result.native, result.job
    assert native is not None and job is not None
    said = [warning("quota-check-dropped", "--to kfp-gcpc creates the job without vxtrain's quota preflight "
                    "(the job's needs against the project's limits before anything is created, exit 5); "
                    "a job short of quota fails at create or waits", **native.where(()))]
    if result.fallback:
        said.append(warning("fallback-dropped", f"--to kfp-gcpc writes the spec itself (rung 0) only: the op has "
                            f"no ladder, so the {len(result.fallback)} `fallback:` rung(s) are left out; "
                            "`--to kfp` climbs them in the step", **native.where((FALLBACK_KEY,))))
    for key, written in (("recovery", job.recovery is not None), ("notify", job.has_hooks)):
        if written:
            said.append(warning("submit-only-dropped", f"--to kfp-gcpc leaves out `{key}:`: it is what "
                                "`vxtrain submit --wait` does while it follows the job, which the op does not; "
                                "`--to kfp` keeps it", **native.where((key,))))
    built = [b.uri for b in result.images] + [p.uri for p in result.packages]
    if built:
        said.append(warning("kfp-gcpc-unpublished", f"the job runs {', '.join(built)}, built from the spec's "
                            "source folders and pushed by `vxtrain submit` only: the op pushes nothing, so push "
                            "them first (or use `--to kfp`)", **native.where(())))
    return said
