"""Semantic rules of the ``study:`` block (a HyperparameterTuningJob).

The JSON schema already checks types and enums (parameter type, scale, goal,
algorithm), ``max_trials``/``parallel_trials`` ≥ 1 and unknown keys; these
rules do the cross-field checks Vertex AI would refuse at submit, or that
would make trials misbehave. Sources:

* StudySpec and its value specs and scale types:
  https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec
* HyperparameterTuningJob (maxTrialCount and parallelTrialCount are required):
  https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.hyperparameterTuningJobs
* Vertex AI passes each trial's parameters as ``--name=value`` arguments:
  https://cloud.google.com/vertex-ai/docs/training/using-hyperparameter-tuning
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from vxtrain.diagnostics import Diagnostic, error, warning
from vxtrain.loading.document import Key, NativeSpec
from vxtrain.model import Job, Study, StudyParameter

STUDY_DOC = "https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec"
#: "GRID_SEARCH: Simple grid search within the feasible space. To use grid
#: search, all parameters must be INTEGER, CATEGORICAL, or DISCRETE." (STUDY_DOC)
GRIDDABLE = ("integer", "discrete", "categorical")
#: UNIT_LOG_SCALE / UNIT_REVERSE_LOG_SCALE: "The entire feasible space must be strictly positive." (STUDY_DOC)
LOG_SCALES = ("log", "reverse_log")
#: DiscreteValueSpec.values: "at least 1e-10 apart" (STUDY_DOC).
MIN_DISCRETE_GAP = 1e-10
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


def check(job: Job, native: NativeSpec) -> list[Diagnostic]:
    """Every diagnostic of ``job.study`` (none without a study)."""
    study = job.study
    if study is None:
        return []
    out = list(_metric_rules(study, native))
    out += _count_rules(study, native)
    out += _parameters_present(native)
    for param in study.parameters:
        out += parameter_rules(param, study, native)
        out += _collisions(param, job, native)
    return out


def _at(native: NativeSpec, *path: Key) -> dict[str, Any]:
    return native.where(("study", *path))


def _raw_study(native: NativeSpec) -> dict[str, Any]:
    raw = native.data.get("study")
    return raw if isinstance(raw, dict) else {}


# --- metrics and counts ------------------------------------------------------------

def _metric_rules(study: Study, native: NativeSpec) -> Iterator[Diagnostic]:
    raw = _raw_study(native)
    if "metric" in raw and "metrics" in raw:
        yield error("study-metric-twice", "study gives both 'metric' and 'metrics': keep one ('metric: {id, goal}' "
                    "or a 'metrics:' list)", **_at(native, "metrics"))
    elif "metric" not in raw and "metrics" not in raw:
        yield error("study-metric-missing", "study has no metric: add 'metric: {id: accuracy, goal: maximize}' "
                    "(the value your training code reports with cloudml-hypertune)", **_at(native))
    seen: set[str] = set()
    for i, metric in enumerate(study.metrics):
        if metric.id is not None and metric.id in seen:
            yield error("study-metric-duplicate", f'metric id "{metric.id}" is given twice: each metric needs '
                        "its own id", **_at(native, "metrics", i, "id"))
        seen.add(metric.id or "")


def _count_rules(study: Study, native: NativeSpec) -> Iterator[Diagnostic]:
    raw = _raw_study(native)
    for key, example in (("max_trials", 20), ("parallel_trials", 1)):
        if key not in raw:
            yield error(f"study-{key.replace('_', '-')}-missing", f"study has no {key}: Vertex AI requires it "
                        f"(maxTrialCount / parallelTrialCount); add e.g. '{key}: {example}'", **_at(native))
    total, parallel, failed = study.max_trials, study.parallel_trials, study.max_failed_trials
    if total is not None and parallel is not None and parallel > total:
        yield error("study-parallel-exceeds", f"parallel_trials is {parallel} but max_trials is {total}: "
                    f"at most {total} trials can run at once; give parallel_trials ≤ {total}",
                    **_at(native, "parallel_trials"))
    if total is not None and failed is not None and failed > total:
        yield warning("study-max-failed-unreachable", f"max_failed_trials is {failed} but the study has only "
                      f"{total} trials, so the limit is never reached; give max_failed_trials ≤ {total} "
                      "(0 lets Vertex AI decide)", **_at(native, "max_failed_trials"))


def _parameters_present(native: NativeSpec) -> Iterator[Diagnostic]:
    if "parameters" not in _raw_study(native):
        yield error("study-parameters-missing", "study has no parameters: add e.g. 'parameters: {learning_rate: "
                    "{type: double, min: 0.0001, max: 0.1, scale: log}}'", **_at(native))


# --- one parameter -------------------------------------------------------------------

def parameter_rules(param: StudyParameter, study: Study, native: NativeSpec) -> Iterator[Diagnostic]:
    """Bounds, values, scale and algorithm fit of one parameter."""
    kind = (param.type or "").lower()
    if not _NAME.match(param.name):
        yield error("study-parameter-name", f'parameter name "{param.name}" cannot be passed as --{param.name}=VALUE: '
                    "use letters, digits, '_', '-' and '.', starting with a letter or '_'",
                    **_at(native, "parameters", param.name))
    if kind in ("double", "integer"):
        yield from _bounds(param, kind, native)
    elif kind in ("discrete", "categorical"):
        yield from _values(param, kind, native)
    yield from _scale(param, kind, native)
    if (study.algorithm or "").lower() == "grid" and kind == "double":
        yield error("study-grid-double", f'parameter "{param.name}" is a double, and grid search cannot enumerate '
                    "a continuous range: grid needs integer, discrete or categorical parameters; make it "
                    f"'type: discrete' with 'values: [...]', or use algorithm random ({STUDY_DOC})",
                    **_at(native, "parameters", param.name, "type"))


def _bounds(param: StudyParameter, kind: str, native: NativeSpec) -> Iterator[Diagnostic]:
    where = ("parameters", param.name)
    if param.values:
        yield error("study-values-ignored", f'parameter "{param.name}" is {kind}: it takes min and max, not values; '
                    "remove values (or make it discrete/categorical)", **_at(native, *where, "values"))
    missing = [k for k in ("min", "max") if getattr(param, k) is None]
    if missing:
        yield error("study-bounds-missing", f'{kind} parameter "{param.name}" needs {" and ".join(missing)}: '
                    "give both bounds, e.g. 'min: 0.0001, max: 0.1'", **_at(native, *where))
        return
    assert param.min is not None and param.max is not None
    infinite = [k for k in ("min", "max") if not math.isfinite(getattr(param, k))]
    for key in infinite:  # NaN or infinity: a study spec (JSON) cannot carry one
        yield error("study-not-finite", f'parameter "{param.name}" has {key} {getattr(param, key)}: bounds are '
                    "finite numbers, e.g. 'min: 0.0001, max: 0.1'", **_at(native, *where, key))
    if infinite:
        return
    if kind == "integer":
        for key in ("min", "max"):
            value = getattr(param, key)
            if not float(value).is_integer():
                yield error("study-integer-bounds", f'integer parameter "{param.name}" has {key} {value:g}: '
                            f"integer bounds must be whole numbers{_example(value)}, or make it type double",
                            **_at(native, *where, key))
    if param.min >= param.max:
        yield error("study-min-max", f'parameter "{param.name}" has min {param.min:g} ≥ max {param.max:g}: '
                    "min must be below max", **_at(native, *where, "min"))


def _values(param: StudyParameter, kind: str, native: NativeSpec) -> Iterator[Diagnostic]:
    where = ("parameters", param.name)
    for key in ("min", "max"):
        if getattr(param, key) is not None:
            yield error("study-bounds-ignored", f'parameter "{param.name}" is {kind}: it takes values, not {key}; '
                        f"remove {key} (or make it double/integer)", **_at(native, *where, key))
    if not param.values:
        located = (*where, "values") if "values" in _raw_param(native, param.name) else where
        yield error("study-values-empty", f'{kind} parameter "{param.name}" has no values: give at least one, '
                    f"e.g. 'values: {'[32, 64, 128]' if kind == 'discrete' else '[adam, sgd]'}'",
                    **_at(native, *located))
        return
    if kind == "discrete":
        yield from _discrete(param, native)
    else:
        yield from _duplicates(param, [str(v) for v in param.values], native)


def _raw_param(native: NativeSpec, name: str) -> dict[str, Any]:
    params = _raw_study(native).get("parameters")
    raw = params.get(name) if isinstance(params, dict) else None
    return raw if isinstance(raw, dict) else {}


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _discrete(param: StudyParameter, native: NativeSpec) -> Iterator[Diagnostic]:
    where = ("parameters", param.name, "values")
    bad = [v for v in param.values if not _is_number(v)]
    if bad:
        shown = ", ".join(repr(v) for v in bad)
        yield error("study-discrete-values", f'discrete parameter "{param.name}" has non-numeric values ({shown}): '
                    "discrete values are numbers; use type categorical for strings", **_at(native, *where))
        return
    numbers = [float(v) for v in param.values]
    if not all(math.isfinite(n) for n in numbers):
        shown = ", ".join(str(n) for n in numbers if not math.isfinite(n))
        yield error("study-not-finite", f'discrete parameter "{param.name}" has {shown} among its values: values '
                    "are finite numbers (a study spec, JSON, cannot carry NaN or infinity)", **_at(native, *where))
        return
    yield from _duplicates(param, numbers, native)
    if numbers != sorted(numbers):
        yield warning("study-discrete-order", f'discrete parameter "{param.name}" lists {param.values} out of order: '
                      f"Vertex AI expects increasing values; write {sorted(param.values)}", **_at(native, *where))


def _duplicates(param: StudyParameter, values: Sequence[Any], native: NativeSpec) -> Iterator[Diagnostic]:
    dup = sorted({str(v) for i, v in enumerate(values) if _close_to_any(v, values[:i])})
    if dup:
        yield error("study-values-duplicate", f'parameter "{param.name}" lists {", ".join(dup)} more than once: '
                    "give each value once", **_at(native, "parameters", param.name, "values"))


def _close_to_any(value: Any, earlier: Sequence[Any]) -> bool:
    if isinstance(value, float):
        return any(abs(value - e) < MIN_DISCRETE_GAP for e in earlier)
    return value in earlier


def _scale(param: StudyParameter, kind: str, native: NativeSpec) -> Iterator[Diagnostic]:
    if param.scale is None:
        return
    where = ("parameters", param.name, "scale")
    if kind == "categorical":
        yield error("study-scale-categorical", f'categorical parameter "{param.name}" has scale {param.scale}: '
                    "categories have no order to scale; remove scale", **_at(native, *where))
        return
    if param.scale.lower() not in LOG_SCALES:
        return
    lowest = param.min if kind in ("double", "integer") else min(
        (float(v) for v in param.values if _is_number(v)), default=None)
    if lowest is not None and lowest <= 0:
        yield error("study-log-scale", f'parameter "{param.name}" uses scale {param.scale} but its search space '
                    f"reaches {lowest:g}: log scales need every value > 0 ({STUDY_DOC}#ScaleType); raise the "
                    "minimum above 0 or use scale linear", **_at(native, *where))


# --- parameters vs. the pools' own arguments --------------------------------------------

def _collisions(param: StudyParameter, job: Job, native: NativeSpec) -> Iterator[Diagnostic]:
    """A trial appends ``--name=value``; the same flag already in the args is given twice."""
    for where, arg in _args(job):
        if arg == f"--{param.name}" or arg.startswith(f"--{param.name}="):
            yield error("study-arg-collision", f'parameter "{param.name}" collides with "{arg}" in {where}: each '
                        f"trial appends --{param.name}=VALUE, so the training code would get the flag twice; "
                        f"remove \"{arg}\" from {where} (or rename the parameter)",
                        **_at(native, "parameters", param.name))
            return


def _args(job: Job) -> Iterator[tuple[str, str]]:
    for pool in job.ordered_pools():
        if pool.role != "reduction_server":
            for arg in pool.args:
                yield f"{pool.role}.args", arg
    if job.local is not None:
        for arg in job.local.command:
            yield "local.command", arg


def _example(value: float) -> str:
    """`` (e.g. 3)`` for a fraction; nothing for infinity or NaN, which have no whole neighbour."""
    return f" (e.g. {int(value)})" if math.isfinite(value) else ""
