"""What a job looks like to vxtrain's users: the view that submit, status, wait and
list print (JSON or text), with a tuning job's trials and best trial; and the
end states that make ``wait`` fail."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from typing import Any

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.model import ATTEMPT_LABEL
from vxtrain.submission.names import LABEL_KEY, console_url, split_name
from vxtrain.vocab.kinds import FAILED_STATES, TUNING
from vxtrain.vocab.studies import TrialResult, best_trial, metric_goals, search_space
from vxtrain.vocab.timestamps import parse_time

#: What a run's cost is: the catalog's list prices (vxtrain.catalog.prices) × the time it ran.
COST_BASIS = "list prices × run time"


def job_view(job: JobDict, *, emulated: bool = False, adopted: bool = False) -> dict[str, Any]:
    """What submit/status/wait print: name, state, console_url, display_name, create_time, …"""
    view: dict[str, Any] = {
        "name": job.get("name", ""),
        "state": job.get("state", "JOB_STATE_UNSPECIFIED"),
        "console_url": console_url(job["name"]) if job.get("name") else None,
        "display_name": job.get("displayName", ""),
        "create_time": job.get("createTime"),
        "adopted": adopted,
        "emulated": emulated,
    }
    for source, target in (("startTime", "start_time"), ("endTime", "end_time"), ("error", "error")):
        if job.get(source):
            view[target] = job[source]
    key = (job.get("labels") or {}).get(LABEL_KEY)
    if key:
        view["idempotency_key"] = key
    if TUNING.spec_key in job or "studySpec" in job:  # a HyperparameterTuningJob: its trials, the best one
        view.update(study_fields(job))
    return view


def raise_for_state(view: Mapping[str, Any]) -> None:
    """Raise JobFailedError when the job ended FAILED, CANCELLED or EXPIRED."""
    if view.get("state") in FAILED_STATES:
        reason = (view.get("error") or {}).get("message") or "no error message"
        raise errors.JobFailedError(f"{view['name']} ended {view['state']}: {reason}", job=dict(view))


# --- what jobs cost as they ran (submit's attempts, status, wait) ---------------------------

def run_hours(view: Mapping[str, Any], now: datetime | None = None) -> float:
    """Hours the job ran: ``start_time`` to ``end_time`` (to ``now`` while it runs; 0 before it started)."""
    start, end = view.get("start_time"), view.get("end_time")
    if not start:
        return 0.0
    until = parse_time(str(end)) if end else (now or datetime.now(timezone.utc))
    return max((until - parse_time(str(start))).total_seconds(), 0.0) / 3600


def attempt_cost(attempt: int, view: Mapping[str, Any], per_hour: float | None,
                 now: datetime | None = None) -> dict[str, Any]:
    """One entry of ``cost.attempts``: ``{"attempt", "name", "hours", "per_hour", "usd"}``
    (``usd`` null when ``per_hour`` is and the job ran: an unknown price is never guessed;
    a job that never started is billed nothing, whatever its machines cost)."""
    hours = run_hours(view, now)
    usd = 0.0 if hours == 0 else None if per_hour is None else round(per_hour * hours, 8)
    return {"attempt": attempt, "name": view.get("name"), "hours": round(hours, 6), "per_hour": per_hour,
            "usd": usd}


def cost_json(attempts: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """submit's, status's and wait's ``cost``: ``{"currency": "USD", "estimated", "attempts",
    "basis"}``; ``estimated`` the sum, null when any attempt's price is unknown."""
    entries = list(attempts)
    parts = [a["usd"] for a in entries]
    total = None if any(p is None for p in parts) else round(sum(parts), 8)
    return {"currency": "USD", "estimated": total, "attempts": entries, "basis": COST_BASIS}


def job_cost(job: JobDict) -> dict[str, Any]:
    """The ``cost`` of one job read back from the API: its machine spec priced from the
    catalog (vxtrain.planning.cost.job_per_hour) × the time it ran."""
    # lazy: planning.cost and the price catalog cost ~12 ms of imports (-X importtime), for the
    # status or wait of one job only (list and the submit's own polls never price)
    from vxtrain.planning.cost import job_per_hour

    name = str(job.get("name", ""))
    region = split_name(name)[1] if name else None
    attempt = str((job.get("labels") or {}).get(ATTEMPT_LABEL, "0"))
    view = job_view(job)
    return cost_json([attempt_cost(int(attempt) if attempt.isdecimal() else 0, view, job_per_hour(job, region))])


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


def study_fields(job: Mapping[str, Any]) -> dict[str, Any]:
    """``{"trials": [...], "best_trial": {...} | None}`` for the view of a tuning job."""
    trials = trials_from_json(job)
    best = best_trial(trials, metric_goals(job.get("studySpec", {})))
    return {"trials": [t.to_json() for t in trials], "best_trial": best.to_json() if best else None}
