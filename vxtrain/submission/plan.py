"""A key's intended life as data: the plan (docs/submitting.md, "A job's life as a plan").

The plan holds what every watcher of the key needs to take the next step: the rungs as
sent (rung 0 the spec, then each ``fallback:`` entry: project, region, the CustomJob),
the recovery policy, the notification targets as the names of environment variables
(never a URL, which is a secret: Slack's path is its token), the hash of the job as sent,
and, once the life has ended, how. With an explicit key and a staging bucket, submit
stores it create-if-absent at ``gs://BUCKET/vxtrain/plans/<project>/<region>/<key>.json``
(vxtrain.submission.stored), so ``vxtrain reconcile`` can carry the life on from anywhere.

Pure data: no I/O here (``to_json``/``from_json`` are the stored shape, version 1).
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypedDict

from vxtrain.backends.base import JobDict
from vxtrain.model import ATTEMPT_ENV, TRACE_LABEL, TRACEPARENT_ENV, TRACESTATE_ENV, Recovery

# Annotations only: a TypedDict class costs ~15 µs a field to create (measured).
if TYPE_CHECKING:
    class PlannedRungJson(TypedDict):
        """One rung of a stored plan."""

        rung: int
        project: str
        region: str
        job: JobDict


    class RecoveryPolicyJson(TypedDict):
        """A stored plan's ``recovery``."""

        max_recoveries: int
        on_exit_codes: list[int]
        strategy: str
        spot_to_standard_after: int | None


    class NotifyTargetJson(TypedDict):
        """A stored plan's hook, by its environment variables' names."""

        url_env: str
        secret_env: str | None


    class FinishedJson(TypedDict):
        """How a stored plan's life ended."""

        time: str
        outcome: str
        job: str | None


    class PlanJson(TypedDict):
        """The plan kept at ``gs://BUCKET/vxtrain/plans/<project>/<region>/<key>.json``."""

        version: int
        key: str
        project: str
        region: str
        spec_sha256: str
        created: str
        rungs: list[PlannedRungJson]
        recovery: RecoveryPolicyJson | None
        notify: list[NotifyTargetJson]
        finished: FinishedJson | None


#: The stored shape's version.
VERSION = 1


@dataclass(frozen=True)
class PlannedRung:
    """One rung as sent: its number (0: the spec), project, region and job (REST JSON,
    without the key's labels and an attempt's changes)."""

    number: int
    project: str
    region: str
    job: JobDict

    def to_json(self) -> PlannedRungJson:
        """``{"rung", "project", "region", "job"}``."""
        return {"rung": self.number, "project": self.project, "region": self.region, "job": self.job}


@dataclass(frozen=True)
class RecoveryPolicy:
    """The spec's ``recovery:`` block, as a life reads it."""

    max_recoveries: int
    on_exit_codes: tuple[int, ...] = ()
    strategy: str = "same"
    spot_to_standard_after: int | None = None

    @classmethod
    def of(cls, recovery: Recovery) -> RecoveryPolicy:
        """The policy of a validated ``recovery:`` block."""
        return cls(recovery.max_recoveries, tuple(recovery.on_exit_codes), recovery.strategy,
                   recovery.spot_to_standard_after)

    def to_json(self) -> RecoveryPolicyJson:
        """The block as plan shows it: ``{"max_recoveries", "on_exit_codes", "strategy", "spot_to_standard_after"}``."""
        return {"max_recoveries": self.max_recoveries, "on_exit_codes": list(self.on_exit_codes),
                "strategy": self.strategy, "spot_to_standard_after": self.spot_to_standard_after}


@dataclass(frozen=True)
class NotifyTarget:
    """A notification hook by the names of the environment variables that hold its URL (and
    its signing secret), so that the plan never holds either."""

    url_env: str
    secret_env: str | None = None

    def to_json(self) -> NotifyTargetJson:
        """``{"url_env", "secret_env"}``."""
        return {"url_env": self.url_env, "secret_env": self.secret_env}


@dataclass(frozen=True)
class Finished:
    """How the life ended: when (RFC 3339), the outcome, the job it ended on."""

    time: str
    outcome: str
    job: str | None

    def to_json(self) -> FinishedJson:
        """``{"time", "outcome", "job"}``."""
        return {"time": self.time, "outcome": self.outcome, "job": self.job}


@dataclass(frozen=True)
class Plan:
    """A key's intended life (see the module docstring)."""

    key: str
    rungs: tuple[PlannedRung, ...]
    recovery: RecoveryPolicy | None = None
    notify: tuple[NotifyTarget, ...] = ()
    created: str = ""
    finished: Finished | None = None
    spec_sha256: str = field(default="")

    def __post_init__(self) -> None:
        if not self.spec_sha256:
            object.__setattr__(self, "spec_sha256", spec_hash(self.rungs, self.recovery))

    @property
    def project(self) -> str:
        """Rung 0's project: where the plan is kept."""
        return self.rungs[0].project

    @property
    def region(self) -> str:
        """Rung 0's region: where the plan is kept."""
        return self.rungs[0].region

    def ended(self, finished: Finished) -> Plan:
        """The plan, finished as ``finished`` says."""
        return replace(self, finished=finished)

    def to_json(self) -> PlanJson:
        """The stored shape: ``{"version", "key", "project", "region", "spec_sha256", "created",
        "rungs", "recovery", "notify", "finished"}``."""
        return {"version": VERSION, "key": self.key, "project": self.project, "region": self.region,
                "spec_sha256": self.spec_sha256, "created": self.created,
                "rungs": [r.to_json() for r in self.rungs],
                "recovery": self.recovery.to_json() if self.recovery else None,
                "notify": [n.to_json() for n in self.notify],
                "finished": self.finished.to_json() if self.finished else None}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Plan:
        """The plan a stored document holds; ValueError when it is not one vxtrain wrote."""
        try:
            if doc.get("version") != VERSION:
                raise ValueError(f"plan version {doc.get('version')!r}, this vxtrain reads {VERSION}")
            rungs = tuple(PlannedRung(int(r["rung"]), str(r["project"]), str(r["region"]), dict(r["job"]))
                          for r in doc["rungs"])
            recovery = doc.get("recovery")
            finished = doc.get("finished")
            return cls(str(doc["key"]), rungs,
                       RecoveryPolicy(int(recovery["max_recoveries"]), tuple(recovery.get("on_exit_codes") or ()),
                                      str(recovery.get("strategy") or "same"), recovery.get("spot_to_standard_after"))
                       if recovery else None,
                       tuple(NotifyTarget(str(n["url_env"]), n.get("secret_env")) for n in doc.get("notify") or ()),
                       str(doc.get("created") or ""),
                       Finished(str(finished["time"]), str(finished["outcome"]), finished.get("job"))
                       if finished else None,
                       str(doc["spec_sha256"]))
        except (KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"not a vxtrain plan ({exc!r})") from exc


def spec_hash(rungs: Sequence[PlannedRung], recovery: RecoveryPolicy | None) -> str:
    """The SHA-256 of the job as sent: every rung's project, region and job, and the recovery
    policy, as canonical JSON (sorted keys, no spaces)."""
    doc = {"rungs": [r.to_json() for r in rungs], "recovery": recovery.to_json() if recovery else None}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def differences(sent: Any, found: Any, path: str = "") -> list[str]:
    """The key paths (``jobSpec.baseOutputDirectory.outputUriPrefix``) where ``found`` (a job as
    the API lists it) differs from ``sent`` (the job this submit would send), over the keys
    ``sent`` has: the service may add defaults, never drop what was sent. Numbers compare by
    value (the API writes int64 as strings); an attempt's own changes (``VXTRAIN_ATTEMPT`` in
    the env, STANDARD after Spot preemptions) and the submit's trace context (``TRACEPARENT``
    and ``TRACESTATE`` in the env, the label ``vxtrain_trace``: a re-run of a pipeline has a new
    trace) are not differences."""
    if isinstance(sent, Mapping):
        if found is None and not sent:
            return []
        if not isinstance(found, Mapping):
            return [path or "."]
        out: list[str] = []
        for key, value in sent.items():
            if (key == "strategy" and path.endswith("scheduling")) or (key == TRACE_LABEL and path == "labels"):
                continue
            out += differences(value, found.get(key), f"{path}.{key}" if path else str(key))
        return out
    if isinstance(sent, list):
        if (path == "env" or path.endswith(".env")) and isinstance(found, list):
            sent, found = _own_env(sent), _own_env(found)
        if found is None and not sent:
            return []
        if not isinstance(found, list) or len(found) != len(sent):
            return [path]
        return [d for n, (a, b) in enumerate(zip(sent, found)) for d in differences(a, b, f"{path}[{n}]")]
    return [] if _same(sent, found) else [path]


#: Env entries a submit adds of its own (vxtrain.submission.decide.attempt_job, .trace.with_trace).
_ADDED_ENV = (ATTEMPT_ENV, TRACEPARENT_ENV, TRACESTATE_ENV)


def _own_env(env: list[Any]) -> list[Any]:
    return [e for e in env if not (isinstance(e, Mapping) and e.get("name") in _ADDED_ENV)]


def _same(a: Any, b: Any) -> bool:
    if a == b:
        return True
    if b is None and a in (False, 0, "", [], {}):  # proto3 leaves a zero value out of what it returns
        return True
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return False
