"""The seams between vxtrain and Google's APIs: ``JobBackend`` (the Job API) and
``LogReader`` (a job's logs in Cloud Logging).

Jobs cross this seam as REST-JSON dicts (camelCase, the form
``google.protobuf.json_format.MessageToDict`` gives and the REST API takes);
protobuf messages stay inside the backend. Every method raises only
``vxtrain.errors.ApiError`` subclasses: the backend translates what its
transport raises (see ``vxtrain.backends.vertex.translate``).

Log entries cross ``LogReader`` the same way: REST-JSON ``LogEntry`` dicts
(``resource``, ``textPayload``, ``jsonPayload``, ``timestamp``, ``severity``,
``insertId``).

A transient failure (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL) is raised as
``UnavailableError`` with ``transient = True``, so callers can retry it with
``google.api_core.retry`` without knowing the transport.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from vxtrain.model import LocalSpec
from vxtrain.vocab.kinds import JobKind

#: A job as the REST API spells it (camelCase keys, enum names as strings).
JobDict = dict[str, Any]
#: Jobs as a list answers them (named: inside JobBackend, ``list`` is the method).
JobList = list[JobDict]
#: A PersistentResource as the REST API spells it (``name``, ``state``, ``resourcePools``…).
ResourceDict = dict[str, Any]
#: A Cloud Quotas ``QuotaInfo`` as the REST API spells it (``quotaId``, ``metric``, ``dimensionsInfos``…).
QuotaInfoDict = dict[str, Any]
#: QuotaInfos as a list answers them (named: inside JobBackend, ``list`` is a method).
QuotaInfoList = list[QuotaInfoDict]


#: The gRPC metadata key of a create sent to an emulator: how to run the job on its
#: host (:class:`LocalRun`, as JSON). The compiled job cannot carry the spec's
#: ``local:`` block or folder, and Vertex AI is never sent this.
LOCAL_METADATA = "x-vxtrain-local"


@dataclass(frozen=True)
class LocalRun:
    """How an emulator runs a job on its host: the spec's ``local:`` block (command,
    workdir, env) and ``base_dir``, the spec's folder, where relative paths start."""

    local: LocalSpec | None
    base_dir: str

    def to_metadata(self) -> str:
        """The JSON sent as :data:`LOCAL_METADATA`."""
        local = self.local
        return json.dumps({"base_dir": self.base_dir, "command": local.command if local else [],
                           "workdir": local.workdir if local else None, "env": local.env if local else {},
                           "image_sources": local.image_sources if local else {}})

    @classmethod
    def from_metadata(cls, text: str) -> LocalRun | None:
        """The LocalRun a create carried, or None when ``text`` is not one (the job then runs
        as if none had been sent)."""
        try:
            raw = json.loads(text)
            local = LocalSpec([str(a) for a in raw.get("command") or []],
                              str(raw["workdir"]) if raw.get("workdir") else None,
                              {str(k): str(v) for k, v in (raw.get("env") or {}).items()},
                              {str(k): str(v) for k, v in (raw.get("image_sources") or {}).items()})
            return cls(local, str(raw["base_dir"]))
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


@runtime_checkable
class JobBackend(Protocol):
    """Create, read, list, cancel and delete Vertex AI training jobs of each kind
    (``vocab.kinds.CUSTOM``: CustomJob, ``vocab.kinds.TUNING``: HyperparameterTuningJob)."""

    #: True when the backend talks to an emulator rather than Vertex AI.
    emulated: bool
    #: The emulator's ``HOST:PORT`` (it also serves the Logging API there); None for Vertex AI.
    endpoint: str | None
    #: The emulator's token its calls carry when the code that started the emulator handed it
    #: over (``--target local``'s private one): a log reader of the same emulator needs it
    #: too. None: found for the port (vxtrain.backends.tokens), or Vertex AI.
    token: str | None
    #: True for an emulator running in this process (``--target local``): its jobs end
    #: with this process, so stopping to follow one stops it.
    in_process: bool

    def create(self, kind: JobKind, parent: str, job: JobDict, local: LocalRun | None = None) -> JobDict:
        """Create a job of ``kind`` under ``projects/P/locations/R``; return it as stored.
        ``local``: how an emulator runs it on its host (ignored by Vertex AI backends)."""
        ...

    def get(self, kind: JobKind, name: str) -> JobDict:
        """The job named ``projects/P/locations/R/{kind.collection}/ID``."""
        ...

    def list(self, kind: JobKind, parent: str, filter: str = "") -> JobList:  # noqa: A002 - the API's word
        """Every job of ``kind`` under ``parent`` matching ``filter`` (all pages)."""
        ...

    def cancel(self, kind: JobKind, name: str) -> None:
        """Ask for the job to be cancelled (it ends CANCELLED later)."""
        ...

    def delete(self, kind: JobKind, name: str) -> None:
        """Delete the job (it must have ended)."""
        ...

    def get_persistent_resource(self, name: str) -> ResourceDict:
        """The persistent resource ``projects/P/locations/R/persistentResources/ID``
        (PersistentResourceService.GetPersistentResource), which jobs naming it in
        ``persistentResourceId`` run on; NotFoundError when there is none."""
        ...

    def list_quota_infos(self, parent: str) -> QuotaInfoList:
        """Every QuotaInfo under ``projects/P/locations/global/services/SERVICE`` (Cloud Quotas
        API ListQuotaInfos, all pages): the project's quota limits, with no usage
        (https://cloud.google.com/docs/quotas/reference/rest/v1/projects.locations.services.quotaInfos/list)."""
        ...

    def close(self) -> None:
        """Release the connection (idempotent)."""
        ...


# --- logs ----------------------------------------------------------------------------

#: A log entry as the REST API spells it (camelCase keys, enum names as strings).
EntryDict = dict[str, Any]

#: The monitored resource type of Vertex AI training jobs' logs; each replica's
#: lines carry ``resource.labels.task_name`` "workerpoolK-I"
#: (https://cloud.google.com/vertex-ai/docs/training/code-requirements#logging).
ML_JOB = "ml_job"
#: The task name of the lines the training service writes itself (not a replica's).
SERVICE_TASK = "service"
#: The most entries one ListLogEntries page may hold
#: (https://cloud.google.com/logging/docs/reference/v2/rest/v2/entries/list).
MAX_PAGE_SIZE = 1000
#: "Number of open live-tailing sessions: 10 per Google Cloud project", a limit that
#: cannot be raised (https://cloud.google.com/logging/quotas, read 2026-11).
MAX_TAIL_SESSIONS = 10


@dataclass(frozen=True)
class TailBatch:
    """One response of a tail stream: its entries (REST-JSON dicts, oldest first), and how
    many matching entries the server left out since the previous response (Cloud Logging's
    ``suppression_info``: its rate limit, or a client that reads too slowly)."""

    entries: list[EntryDict]
    suppressed: int = 0


class LogTail(Protocol):
    """One open tail stream (Cloud Logging's TailLogEntries)."""

    def batches(self) -> Iterator[TailBatch]:
        """The stream's responses as they arrive (the first may be empty: the stream is
        open), until the server ends it or :meth:`close`. A refusal (the project's tail
        sessions are all taken, no permission) or a break raises an ``ApiError``; the end of
        the session's maximum duration ends the iteration (open another to go on)."""
        ...

    def close(self) -> None:
        """End the stream (idempotent; from any thread: :meth:`batches` then ends)."""
        ...


@runtime_checkable
class LogReader(Protocol):
    """List log entries, or tail them (Cloud Logging, or an emulator's LoggingServiceV2)."""

    #: True when the reader talks to an emulator rather than Cloud Logging.
    emulated: bool

    def list_entries(self, project: str, filter: str, *, order_by: str = "timestamp asc",  # noqa: A002
                     page_size: int = MAX_PAGE_SIZE) -> Iterator[EntryDict]:
        """Every entry of ``projects/PROJECT`` matching ``filter``, all pages, in ``order_by`` order."""
        ...

    def tail(self, project: str, filter: str) -> LogTail:  # noqa: A002
        """Open a stream of the entries of ``projects/PROJECT`` matching ``filter``, as they are written."""
        ...

    def close(self) -> None:
        """Release the connection (idempotent)."""
        ...
