"""What a job looks like to vxtrain's users: the view that submit, status, wait and
list print (JSON or text), with a tuning job's trials and best trial; and the
end states that make ``wait`` fail."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vxtrain import errors
from vxtrain.backends.base import JobDict
from vxtrain.submission.names import LABEL_KEY, console_url
from vxtrain.vocab.kinds import FAILED_STATES, TUNING
from vxtrain.vocab.studies import TrialResult, best_trial, metric_goals, search_space


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
