"""``vxtrain convert FILE --to native|gcloud|gcloud-command``.

- native: the native YAML of any input (legacy and gcloud configs migrate here);
- gcloud: the CustomJobSpec YAML that ``gcloud ai custom-jobs create --config`` takes;
  for a spec with ``study:``, the HyperparameterTuningJob YAML that
  ``gcloud ai hp-tuning-jobs create --config`` takes (never a lone custom job);
- gcloud-command: a shell snippet that writes that config and runs the create
  command, every value shell-quoted. The config file is used (not
  ``--worker-pool-spec`` flags) because the flags cannot express per-pool
  commands, env, disks, scheduling or empty pools;
- kfp, kfp-gcpc: a one-step Kubeflow / Vertex AI pipeline (compiled PipelineSpec YAML),
  ``vxtrain.kfp.submit_op`` with the spec embedded, or CustomTrainingJobOp with the
  compiled job (vxtrain.kfp.targets; kfp is imported for these targets only).

tests/test_convert_gcloud.py runs every example's gcloud-command through the real
gcloud against a recording endpoint: what gcloud sends is the compiled job.
"""
from __future__ import annotations

import shlex
from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional, cast

import typer
import yaml

from vxtrain import api
from vxtrain.api import Options
from vxtrain.commands import _common as c
from vxtrain import slots
from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.errors import UsageError
from vxtrain.formats import native_document
from vxtrain.loading.document import NativeSpec
from vxtrain.loading.fallback import FALLBACK_KEY

if TYPE_CHECKING:  # annotations only
    from vxtrain.vocab import jobjson


class ConvertTarget(str, Enum):
    """``--to`` choices."""

    native = "native"
    gcloud = "gcloud"
    gcloud_command = "gcloud-command"
    kfp = "kfp"
    kfp_gcpc = "kfp-gcpc"


def _yaml(data: Any) -> str:
    """YAML as a person would write it: keys in order, block style, and multi-line strings
    (a ``bash -c`` script, say) as ``|`` block scalars instead of escaped one-liners."""
    class Dumper(yaml.SafeDumper):
        """SafeDumper with block scalars for multi-line strings."""

    def represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
        # PyYAML falls back to a quoted scalar by itself where a block cannot hold the
        # text exactly (trailing spaces on a line, control characters), so this never
        # changes what the file loads back to.
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)

    Dumper.add_representer(str, represent_str)
    # No allow_unicode: PyYAML writes U+0085 and U+2028 raw and reads them back as line breaks.
    text: str = yaml.dump(data, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=100)
    return text


def convert(path: str, to: ConvertTarget, options: Options) -> int:
    """Print ``path`` in the target form; exit 1 (with diagnostics) when it is invalid."""
    result = api.load_job(path, options)
    native, job = result.native, result.job
    assert native is not None and result.custom_job is not None and job is not None  # load_job returns compiled results only
    # The compiler builds these two as jobjson's TypedDicts; pipeline.Result holds them as plain dicts.
    custom_job = cast("jobjson.CustomJob", result.custom_job)
    # a spec with `study:`: what gcloud gets is the tuning job
    tuning_job = cast("jobjson.HyperparameterTuningJob | None", result.hyperparameter_tuning_job)
    if to in (ConvertTarget.kfp, ConvertTarget.kfp_gcpc):
        return _pipeline(result, to)
    if to is ConvertTarget.native:
        text = _yaml(native_document(native))
    elif to is ConvertTarget.gcloud:
        text = _yaml(tuning_job if tuning_job is not None else custom_job["jobSpec"])
    elif tuning_job is not None:
        text = gcloud_tuning_command(tuning_job, job.project, job.region, Path(path).stem)
    else:
        pools = custom_job["jobSpec"].get("workerPoolSpecs") or []
        refusal = _pool_flags(pools)[1] if EMPTY_SLOT in pools else None
        if refusal is not None:
            index, what = refusal
            c.print_diagnostics([_empty_slot_refused(native, pools, index, what)])
            return 1
        text = gcloud_command(custom_job, job.project, job.region, Path(path).stem)
    warnings = [d for d in result.diagnostics if d.severity == "warning"]
    if to is not ConvertTarget.native and result.fallback:
        warnings.append(_ladder_dropped(native, len(result.fallback), to))
    if to is not ConvertTarget.native:
        warnings += [_watch_dropped(native, key, to) for key in _WATCH_KEYS if getattr(job, key)]
    if to is ConvertTarget.gcloud and tuning_job is None and EMPTY_SLOT in custom_job["jobSpec"].get(
            "workerPoolSpecs", []):
        warnings.append(warning(
            "gcloud-empty-slot", "--to gcloud writes the job's empty worker pool slots as `{}`, as the API "
            "takes them, but `gcloud ai custom-jobs create --config` refuses a pool without containerSpec or "
            "pythonPackageSpec; `--to gcloud-command` passes the pools as --worker-pool-spec flags instead",
            **native.where(())))
    c.print_diagnostics(warnings)
    typer.echo(text, nl=not text.endswith("\n"))
    return 0


def _pipeline(result: api.Result, to: ConvertTarget) -> int:
    """``--to kfp|kfp-gcpc``: print the pipeline, or the refusal (exit 1)."""
    assert result.native is not None
    try:
        # lazy: kfp's compiler (~0.5 s) only for these targets; not installed without the extra
        from vxtrain.kfp import targets
    except ImportError as exc:
        raise UsageError(f"--to {to.value} needs kfp ({exc}): pip install 'vxtrain[kfp]'") from None
    if to is ConvertTarget.kfp:
        written = targets.kfp(result, _yaml(native_document(result.native)))
    else:
        written = targets.kfp_gcpc(result)
    warnings = [d for d in result.diagnostics if d.severity == "warning"]
    c.print_diagnostics(warnings + written.diagnostics)
    if written.text is None:
        return 1
    typer.echo(written.text, nl=not written.text.endswith("\n"))
    return 0


def _ladder_dropped(native: NativeSpec, rungs: int, to: ConvertTarget) -> Diagnostic:
    """The warning that ``--to gcloud``/``gcloud-command`` writes rung 0 only: gcloud has no fallback."""
    return warning("fallback-dropped", f"--to {to.value} writes the spec itself (rung 0) only: gcloud has no "
                   f"fallback, so the {rungs} `fallback:` {'entry is' if rungs == 1 else 'entries are'} left out; "
                   "`vxtrain submit` climbs them "
                   "(`--to native` keeps them)", **native.where((FALLBACK_KEY,)))


#: Spec keys that only ``vxtrain submit --wait`` acts on (a watch of the job, not a field of
#: it): gcloud has nothing to carry them.
_WATCH_KEYS = ("recovery", "notify")


def _watch_dropped(native: NativeSpec, key: str, to: ConvertTarget) -> Diagnostic:
    """The warning that ``--to gcloud``/``gcloud-command`` leaves out ``recovery:`` or ``notify:``."""
    return warning("submit-only-dropped", f"--to {to.value} leaves out `{key}:`: it is not a field of the job "
                   "but what `vxtrain submit --wait` does while it follows the job, and gcloud has nothing to "
                   "carry it (`--to native` keeps it)", **native.where((key,)))


def _empty_slot_refused(native: NativeSpec, pools: list[jobjson.WorkerPoolSpec], index: int,
                        what: str) -> Diagnostic:
    """The error that a job with an empty slot has a pool gcloud's flags cannot carry."""
    image = (pools[index].get("containerSpec") or {}).get("imageUri")
    role = slots.role_of(index, image)
    gaps = ", ".join(str(i) for i, pool in enumerate(pools) if pool == EMPTY_SLOT)
    return error(
        "gcloud-empty-slot", f"--to gcloud-command cannot say this job to gcloud: its worker pool slots {gaps} "
        "are empty, which `gcloud ai custom-jobs create --config` refuses (every pool there needs a "
        "containerSpec or a pythonPackageSpec), and the --worker-pool-spec flags that can leave a slot empty "
        f"cannot carry the {role} pool's {what}. Accepted: pools of machine type, accelerator, replica count and image "
        "(or executor image and module), with command, args and package URIs the same in every pool; "
        "`vxtrain submit` sends the job as it is", **native.where((role,)))


#: An empty worker pool slot of a compiled job (a gap before a later pool).
EMPTY_SLOT: jobjson.WorkerPoolSpec = {}

#: What a ``--worker-pool-spec`` flag says of a pool: compiled field path → the flag's key
#: (https://cloud.google.com/sdk/gcloud/reference/ai/custom-jobs/create#--worker-pool-spec).
_POOL_KEYS: dict[tuple[str, str | None], str] = {
    ("machineSpec", "machineType"): "machine-type",
    ("machineSpec", "acceleratorType"): "accelerator-type",
    ("machineSpec", "acceleratorCount"): "accelerator-count",
    ("replicaCount", None): "replica-count",
    ("containerSpec", "imageUri"): "container-image-uri",
    ("pythonPackageSpec", "executorImageUri"): "executor-image-uri",
    ("pythonPackageSpec", "pythonModule"): "python-module",
}
#: What gcloud's job-wide flags set in every pool: compiled field path → the flag.
#: gcloud sets --command in every containerSpec, --args in every containerSpec and
#: pythonPackageSpec and --python-package-uris in every pythonPackageSpec
#: (command_lib/ai/custom_jobs/custom_jobs_util.py, ConstructCustomJobSpec).
_JOB_WIDE: dict[tuple[str, str], str] = {
    ("containerSpec", "command"): "--command",
    ("containerSpec", "args"): "--args",
    ("pythonPackageSpec", "args"): "--args",
    ("pythonPackageSpec", "packageUris"): "--python-package-uris",
}


def _pool_flags(pools: list[jobjson.WorkerPoolSpec]) -> tuple[list[str], tuple[int, str] | None]:
    """The ``--worker-pool-spec`` flags (an empty one per empty slot) and job-wide flags that
    make gcloud send exactly ``pools``; or the first pool they cannot say, and what of it."""
    flags: list[str] = []
    wide: dict[str, tuple[object, ...] | None] = {}
    for index, pool in enumerate(pools):
        if pool == EMPTY_SLOT:
            flags.append("--worker-pool-spec=")
            continue
        if "replicaCount" not in pool:  # gcloud would send 1
            return [], (index, "unset replica count")
        items: list[str] = []
        for key, value in pool.items():
            if key == "replicaCount":
                items.append(f"replica-count={value}")
                continue
            if not isinstance(value, dict) or key not in ("machineSpec", "containerSpec", "pythonPackageSpec"):
                return [], (index, f"`{key}`")
            for field, item in value.items():
                if (key, field) in _JOB_WIDE:
                    continue
                flag = _POOL_KEYS.get((key, field))
                if flag is None or not _flag_safe(str(item)):
                    return [], (index, f"`{key}.{field}`")
                items.append(f"{flag}={item}")
        machine = pool.get("machineSpec") or {}
        if ("acceleratorType" in machine) != ("acceleratorCount" in machine):  # gcloud: count 1 / no count
            return [], (index, "accelerator without a count")
        for spec in ("containerSpec", "pythonPackageSpec"):
            if spec not in pool:
                continue
            for (key, field), flag in _JOB_WIDE.items():
                if key != spec:
                    continue
                value = pool[spec].get(field)
                seen = tuple(value) if isinstance(value, list) else None
                if flag in wide and wide[flag] != seen:
                    return [], (index, f"`{spec}.{field}`, which differs from another pool's "
                                       f"({flag} sets every pool's)")
                wide[flag] = seen
        flags.append("--worker-pool-spec=" + _arg_list(items, "="))
    for flag, values in wide.items():
        if values:
            if any(v == "" or not _flag_safe(str(v)) for v in values):
                return [], (0, f"{flag} values (an empty item or a line break)")
            flags.append(f"{flag}=" + _arg_list([str(v) for v in values], ""))
    return flags, None


def _flag_safe(text: str) -> bool:
    """Whether gcloud's flag parsing gives ``text`` back as it is."""
    return "\n" not in text and "\r" not in text


def _arg_list(items: list[str], reserved: str) -> str:
    """``items`` as one gcloud list or dict flag value: comma-separated, or with the
    ``^DELIM^`` prefix where an item holds a comma (``gcloud topic escaping``)."""
    if not any("," in item or item.startswith("^") for item in items):
        return ",".join(items)
    delimiter = next(d for d in ";|#~:@%!&+" if d != reserved and not any(d in item for item in items))
    return f"^{delimiter}^" + delimiter.join(items)


def gcloud_command(custom_job: jobjson.CustomJob, project: str | None, region: str | None, stem: str) -> str:
    """Shell lines that write the gcloud config and run ``gcloud ai custom-jobs create``.

    A job with an empty worker pool slot gets its pools as ``--worker-pool-spec`` flags
    (an empty flag leaves a slot empty; ``--config`` refuses a pool without software,
    command_lib/ai/custom_jobs/validation.py) and the rest of its spec in the config, which
    the flags override; ``convert`` refuses first the pools the flags cannot say."""
    config = f"{stem}.gcloud.yaml"
    argv = _create_argv("custom-jobs", custom_job, project, region)
    labels = custom_job.get("labels") or {}
    if labels:
        argv.append("--labels=" + ",".join(f"{k}={v}" for k, v in labels.items()))
    spec = custom_job["jobSpec"]
    body: Mapping[str, object] = spec
    pools = spec.get("workerPoolSpecs") or []
    if EMPTY_SLOT in pools:
        flags, refusal = _pool_flags(pools)
        if refusal is not None:
            raise ValueError(f"pool {refusal[0]}'s {refusal[1]} cannot be said in gcloud's flags")
        argv += flags
        body = {k: v for k, v in spec.items() if k != "workerPoolSpecs"}
    argv.append(f"--config={config}")
    return _config_and_command(config, body, argv)


def gcloud_tuning_command(tuning_job: jobjson.HyperparameterTuningJob, project: str | None, region: str | None, stem: str) -> str:
    """Shell lines that write the HyperparameterTuningJob config and run ``gcloud ai hp-tuning-jobs create``.

    The config is the whole compiled tuning job (its labels included: the flag would only
    repeat them); ``--display-name`` is required by gcloud, so it repeats the config's.
    gcloud fills ``maxTrialCount``/``parallelTrialCount`` with 1 only when the config has
    none, and validation requires both (``gcloud ai hp-tuning-jobs create --help``)."""
    config = f"{stem}.gcloud.yaml"
    argv = _create_argv("hp-tuning-jobs", tuning_job, project, region)
    argv.append(f"--config={config}")
    return _config_and_command(config, tuning_job, argv)


def _create_argv(group: str, job: jobjson.CustomJob | jobjson.HyperparameterTuningJob, project: str | None, region: str | None) -> list[str]:
    """``gcloud ai GROUP create`` with the job's display name, and the region and project when known."""
    argv = ["gcloud", "ai", group, "create", f"--display-name={job['displayName']}"]
    if region:
        argv.append(f"--region={region}")
    if project:
        argv.append(f"--project={project}")
    return argv


def _config_and_command(config: str, body: Mapping[str, object], argv: list[str]) -> str:
    """A here-document that writes ``body`` as YAML to ``config``, then ``argv`` shell-quoted."""
    marker = "VXTRAIN_CONFIG_EOF"
    return (f"cat > {shlex.quote(config)} <<'{marker}'\n{_yaml(body)}{marker}\n"
            + " ".join(shlex.quote(a) for a in argv) + "\n")


def register(app: typer.Typer) -> None:
    """Add the ``convert`` command."""

    @c.command(app, "convert")
    @c.spec_options
    def _cmd(
        path: Annotated[str, typer.Argument(metavar="FILE", help="Spec file in any format.")],
        to: Annotated[ConvertTarget, typer.Option(
            "--to", help="native, gcloud, gcloud-command, kfp or kfp-gcpc (a Kubeflow/Vertex AI pipeline).")],
        package_path: Annotated[Optional[str], typer.Option(
            "--package-path", help="Legacy configs: the package folder gcloud's --package-path gave "
            "(written as python_package.source, relative to the spec).")] = None,
        module_name: Annotated[Optional[str], typer.Option(
            "--module-name", help="Legacy configs: the module gcloud's --module-name gave.")] = None,
        *,
        options: Options,
    ) -> None:
        options.package_path, options.module_name = package_path, module_name
        raise typer.Exit(convert(path, to, options))
