"""A hyperparameter study's words: its search space, its trials and their states, its
metrics and best trial; what the local runtime fills in, submission's job views read
back from the API, and the renderers show.

All in the study's REST JSON form (``studySpec`` with camelCase keys, as
compile_hpt_job writes it and ``json_format.MessageToDict`` reads it back), so
nothing here needs the aiplatform protos
(https://cloud.google.com/vertex-ai/docs/reference/rest/v1/StudySpec,
https://cloud.google.com/vertex-ai/docs/reference/rest/v1/projects.locations.studies.trials).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypedDict

#: Vertex AI's Trial.State names the local runtime uses.
SUCCEEDED = "SUCCEEDED"
#: A trial that ran but could not be measured (its job failed).
INFEASIBLE = "INFEASIBLE"
ACTIVE = "ACTIVE"

#: One parameter's value in a trial: a number (a double, an integer, a discrete value) or a
#: category (a string), as Trial.Parameter's google.protobuf.Value holds it.
ParameterValue = int | float | str
#: A trial's parameters: parameter id → value.
Parameters = dict[str, ParameterValue]

# Annotations only: validate imports this module, and a TypedDict class costs ~15 µs a field
# to create (measured).
if TYPE_CHECKING:
    class TrialJson(TypedDict):
        """A trial in ``--output json`` (local-run's study, a tuning job's view)."""

        id: str
        state: str
        parameters: Parameters
        metrics: dict[str, float]
        message: str


# --- the search space ----------------------------------------------------------------

@dataclass(frozen=True)
class SearchParam:
    """One parameter of a StudySpec: kind is double, integer, discrete or categorical."""

    id: str
    kind: str
    min: float | None = None
    max: float | None = None
    values: tuple[ParameterValue, ...] = ()
    scale: str = "UNIT_LINEAR_SCALE"


_VALUE_SPECS = {"doubleValueSpec": "double", "integerValueSpec": "integer",
                "discreteValueSpec": "discrete", "categoricalValueSpec": "categorical"}


def search_space(study_spec: Mapping[str, Any]) -> list[SearchParam]:
    """The parameters of a REST ``studySpec`` (camelCase)."""
    return [_param(p) for p in study_spec.get("parameters", [])]


def _param(raw: Mapping[str, Any]) -> SearchParam:
    for key, kind in _VALUE_SPECS.items():
        if key in raw:
            spec = raw[key]
            low, high = spec.get("minValue"), spec.get("maxValue")
            return SearchParam(raw["parameterId"], kind, _float(low), _float(high),
                               tuple(spec.get("values", ())), raw.get("scaleType") or "UNIT_LINEAR_SCALE")
    raise ValueError(f"parameter {raw.get('parameterId')!r} has no value spec")


def _float(value: Any) -> float | None:
    # int64 fields come back from MessageToDict as strings ("4").
    return None if value is None else float(value)


def grid_values(param: SearchParam) -> list[ParameterValue]:
    """The values grid search tries for ``param`` (a double has none: not griddable)."""
    if param.kind == "integer" and param.min is not None and param.max is not None:
        return list(range(int(param.min), int(param.max) + 1))
    if param.kind == "discrete":
        return [discrete_number(v) for v in param.values]
    if param.kind == "categorical":
        return list(param.values)
    raise ValueError(f"grid search cannot enumerate {param.kind} parameter {param.id!r}: "
                     "use type integer, discrete or categorical")


def discrete_number(value: ParameterValue) -> int | float:
    """Discrete values are doubles on Vertex; whole ones print as integers (``32``, not ``32.0``)."""
    number = float(value)
    return int(number) if number.is_integer() else number


def format_value(value: ParameterValue) -> str:
    """A parameter value as the trial's ``--name=value`` argument shows it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def trial_args(params: Mapping[str, ParameterValue]) -> list[str]:
    """``--name=value`` for each parameter, appended to the container args.

    Vertex AI's form is not settled by any source: Google's page shows ``--name value``,
    a first-hand report ``--name=value`` (docs/decisions.md, "Studies"); trainers
    should accept both, as argparse does.
    """
    return [f"--{name}={format_value(value)}" for name, value in params.items()]


# --- trials and their results ------------------------------------------------------------

@dataclass
class TrialResult:
    """One trial: id ("1".."N"), parameters, state (Vertex's Trial.State name), metrics."""

    id: str
    parameters: Parameters
    state: str = ACTIVE
    metrics: dict[str, float] = field(default_factory=dict)
    step: int | None = None
    message: str = ""

    @property
    def failed(self) -> bool:
        """The trial ended without success (its job failed or could not start)."""
        return self.state == INFEASIBLE

    def to_json(self) -> TrialJson:
        """``{"id", "state", "parameters", "metrics", "message"}``."""
        return {"id": self.id, "state": self.state, "parameters": dict(self.parameters),
                "metrics": dict(self.metrics), "message": self.message}


@dataclass(frozen=True)
class MetricGoal:
    """A study metric and whether larger is better."""

    id: str
    maximize: bool


def metric_goals(study_spec: Mapping[str, Any]) -> list[MetricGoal]:
    """The study's metrics; the first one ranks trials."""
    return [MetricGoal(m["metricId"], str(m.get("goal", "MAXIMIZE")).upper() != "MINIMIZE")
            for m in study_spec.get("metrics", []) if m.get("metricId")]


def best_trial(trials: Iterable[TrialResult], goals: Sequence[MetricGoal]) -> TrialResult | None:
    """The succeeded trial with the best value of the first metric (ties: the earliest)."""
    if not goals:
        return None
    goal = goals[0]
    scored = [t for t in trials if t.state == SUCCEEDED and goal.id in t.metrics]
    if not scored:
        return None
    sign = -1.0 if goal.maximize else 1.0
    return min(scored, key=lambda t: (sign * t.metrics[goal.id], _trial_number(t.id)))


def _trial_number(trial_id: str) -> int:
    return int(trial_id) if trial_id.isascii() and trial_id.isdigit() else 0
