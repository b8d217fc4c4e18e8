"""What a job looks like to vxtrain's users: the view that submit, status, wait and
list print (JSON or text), with a tuning job's trials and best trial; and the
end states that make ``wait`` fail."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.model import ATTEMPT_LABEL
from vxtrain.submission.names import LABEL_KEY, console_url, split_name
from vxtrain.vocab.kinds import TUNING, JobState
from vxtrain.vocab.studies import TrialResult, best_trial, metric_goals, search_space
from vxtrain.vocab.timestamps import parse_time

if TYPE_CHECKING:
    from vxtrain.vocab.jobjson import Status
    from vxtrain.vocab.studies import TrialJson

# Annotations only: a TypedDict class costs ~15 µs a field to create (measured), and every
# command that prints a job imports this module.
if TYPE_CHECKING:
    class TriedJson(TypedDict):
        """One entry of submit's ``attempts`` (the outcome is decide's ``Outcome``)."""

        attempt: int
        rung: int
        region: str
        name: str | None
        state: str | None
        outcome: str


    class AttemptCostJson(TypedDict):
        """One entry of ``cost.attempts`` (``rung``: submit's, the rung the attempt ran on)."""

        attempt: int
        name: str | None
        hours: float
        per_hour: float | None
        usd: float | None
        rung: NotRequired[int]


    class RunCostJson(TypedDict):
        """submit's, status's and wait's ``cost``."""

        currency: str
        estimated: float | None
        attempts: list[AttemptCostJson]
        basis: str


    class StudyFieldsJson(TypedDict):
        """A tuning job's ``trials`` and ``best_trial``."""

        trials: list[TrialJson]
        best_trial: TrialJson | None


    class JobViewJson(TypedDict, total=False):
        """One job as submit, status, wait and list print it (docs/cli.md): the view's keys, then
        what submit adds (``attempts`` to ``resume``) and a life's ``recoveries``."""

        name: str | None
        state: str | None
        console_url: str | None
        display_name: str
        create_time: str | None
        adopted: bool
        emulated: bool
        start_time: str
        end_time: str
        error: Status
        idempotency_key: str
        trials: list[TrialJson]
        best_trial: TrialJson | None
        cost: RunCostJson
        attempts: list[TriedJson]
        duplicates_cancelled: list[str]
        images: list[dict[str, object]]
        recoveries: int
        interrupted: bool
        resume: str
        diagnostics: list[dict[str, object]]
        #: Where the project came from (vxtrain.settings: a flag, the spec, gcloud's configuration…).
        project_source: str | None


#: What a run's cost is: the catalog's list prices (vxtrain.catalog.prices) × the time it ran.
COST_BASIS = "list prices × run time"


@dataclass(frozen=True)
class JobView:
    """What submit, status, wait, cancel and list say of one job (``to_json``: the JSON
    document's keys, in the order the contract's readers know)."""

    name: str
    state: JobState
    display_name: str = ""
    create_time: str | None = None
    #: Whether this submit found the job its key names rather than creating it.
    adopted: bool = False
    #: Whether the job is an emulator's, not Vertex AI's.
    emulated: bool = False
    start_time: str | None = None
    end_time: str | None = None
    #: The job's ``error`` (a google.rpc.Status as REST JSON: ``code``, ``message``).
    error: Status | None = None
    #: The idempotency key's label value, when the job carries one.
    idempotency_key: str | None = None
    #: A tuning job's ``{"trials", "best_trial"}`` (vxtrain.submission.views.study_fields).
    study: StudyFieldsJson | None = None
    #: What the job cost as it ran (``cost_json``), when it was priced (status, wait).
    cost: RunCostJson | None = None
    #: The job's labels (its rung, its recovery attempt), not printed.
    labels: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @property
    def console_url(self) -> str | None:
        """The job's page in the Cloud console."""
        return console_url(self.name) if self.name else None

    @property
    def error_message(self) -> str:
        """The error's message, or ``""``."""
        return str((self.error or {}).get("message") or "")

    def label_number(self, key: str) -> int | None:
        """A numeric label's value (``vxtrain_rung``, ``vxtrain_attempt``), or None."""
        value = self.labels.get(key, "")
        return int(value) if value.isdecimal() else None

    def to_json(self) -> JobViewJson:
        """``{"name", "state", "console_url", "display_name", "create_time", "adopted", "emulated"}``,
        then what the job has of ``start_time``, ``end_time``, ``error``, ``idempotency_key``,
        a tuning job's ``trials`` and ``best_trial``, and ``cost``."""
        doc: JobViewJson = {"name": self.name, "state": self.state.value, "console_url": self.console_url,
                            "display_name": self.display_name, "create_time": self.create_time,
                            "adopted": self.adopted, "emulated": self.emulated}
        if self.start_time:
            doc["start_time"] = self.start_time
        if self.end_time:
            doc["end_time"] = self.end_time
        if self.error:
            doc["error"] = self.error
        if self.idempotency_key:
            doc["idempotency_key"] = self.idempotency_key
        if self.study is not None:
            doc["trials"], doc["best_trial"] = self.study["trials"], self.study["best_trial"]
        if self.cost is not None:
            doc["cost"] = self.cost
        return doc


def job_view(job: JobDict, *, emulated: bool = False, adopted: bool = False) -> JobView:
    """The view of a job as the API gives it (REST JSON)."""
    labels = {str(k): str(v) for k, v in (job.get("labels") or {}).items()}
    study = study_fields(job) if TUNING.spec_key in job or "studySpec" in job else None
    return JobView(str(job.get("name", "")), JobState.of(job.get("state", JobState.UNSPECIFIED)),
                   str(job.get("displayName", "")), job.get("createTime"), adopted, emulated,
                   job.get("startTime") or None, job.get("endTime") or None, job.get("error") or None,
                   labels.get(LABEL_KEY) or None, study, labels=labels)


def raise_for_state(view: JobView, document: Mapping[str, object] | None = None) -> None:
    """Raise JobFailedError when the job ended FAILED, CANCELLED or EXPIRED; its ``job`` is
    ``document`` (what the command prints), else the view's own JSON."""
    if view.state.failed:
        reason = view.error_message or "no error message"
        raise errors.JobFailedError(f"{view.name} ended {view.state.value}: {reason}",
                                    job=dict(document if document is not None else view.to_json()))


# --- what jobs cost as they ran (submit's attempts, status, wait) ---------------------------

def run_hours(view: JobView, now: datetime | None = None) -> float:
    """Hours the job ran: ``start_time`` to ``end_time`` (to ``now`` while it runs; 0 before it started)."""
    start, end = view.start_time, view.end_time
    if not start:
        return 0.0
    until = parse_time(str(end)) if end else (now or datetime.now(timezone.utc))
    return max((until - parse_time(str(start))).total_seconds(), 0.0) / 3600


def attempt_cost(attempt: int, view: JobView, per_hour: float | None,
                 now: datetime | None = None) -> AttemptCostJson:
    """One entry of ``cost.attempts``: ``{"attempt", "name", "hours", "per_hour", "usd"}``
    (``usd`` null when ``per_hour`` is and the job ran: an unknown price is never guessed;
    a job that never started is billed nothing, whatever its machines cost)."""
    hours = run_hours(view, now)
    return {"attempt": attempt, "name": view.name or None, "hours": round(hours, 6), "per_hour": per_hour,
            "usd": run_usd(hours, per_hour)}


def run_usd(hours: float, per_hour: float | None) -> float | None:
    """What ``hours`` of run cost at ``per_hour``: 0 for a job that never ran (whatever its
    machines cost), None when the price is unknown (never guessed)."""
    return 0.0 if hours == 0 else None if per_hour is None else round(per_hour * hours, 8)


def cost_json(attempts: Iterable[AttemptCostJson]) -> RunCostJson:
    """submit's, status's and wait's ``cost``: ``{"currency": "USD", "estimated", "attempts",
    "basis"}``; ``estimated`` the sum, null when any attempt's price is unknown."""
    entries = list(attempts)
    parts = [a["usd"] for a in entries]
    total = None if any(p is None for p in parts) else round(sum(p for p in parts if p is not None), 8)
    return {"currency": "USD", "estimated": total, "attempts": entries, "basis": COST_BASIS}


def job_cost(job: JobDict) -> RunCostJson:
    """The ``cost`` of one job read back from the API: its machine spec priced from the
    catalog (vxtrain.planning.cost.job_per_hour) × the time it ran."""
    # lazy: planning.cost and the price catalog cost ~12 ms of imports (-X importtime), for the
    # status or wait of one job only (list and the submit's own polls never price)
    from vxtrain.planning.cost import job_per_hour

    name = str(job.get("name", ""))
    region = split_name(name)[1] if name else None
    view = job_view(job)
    return cost_json([attempt_cost(view.label_number(ATTEMPT_LABEL) or 0, view, job_per_hour(job, region))])


# --- a tuning job's trials, read back from an API -------------------------------------------

def trials_from_json(job: Mapping[str, Any]) -> list[TrialResult]:
    """The trials of a HyperparameterTuningJob's REST JSON."""
    kinds = {p.id: p.kind for p in search_space(job.get("studySpec", {}))}
    out = []
    for raw in job.get("trials", []):
        params = {p.get("parameterId", ""): _typed(p.get("value"), kinds.get(p.get("parameterId", "")))
                  for p in raw.get("parameters", [])}
        final = raw.get("finalMeasurement", {})
        metrics = {m.get("metricId", ""): float(m.get("value", 0.0)) for m in final.get("metrics", [])}
        step = int(final["stepCount"]) if "stepCount" in final else None
        out.append(TrialResult(str(raw.get("id", "")), params, str(raw.get("state", "STATE_UNSPECIFIED")),
                               metrics, step, raw.get("infeasibleReason", "")))
    return out


def _typed(value: Any, kind: str | None) -> Any:
    """Trial values come back as doubles (protobuf Value): integers and whole discrete values as int."""
    if kind in ("integer", "discrete") and isinstance(value, (int, float)) and float(value).is_integer():
        return int(value)
    return value


def study_fields(job: Mapping[str, Any]) -> StudyFieldsJson:
    """``{"trials": [...], "best_trial": {...} | None}`` for the view of a tuning job."""
    trials = trials_from_json(job)
    best = best_trial(trials, metric_goals(job.get("studySpec", {})))
    return {"trials": [t.to_json() for t in trials], "best_trial": best.to_json() if best else None}
