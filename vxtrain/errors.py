"""The exception tree of vxtrain.

Every error a user can cause is one of these; the CLI turns each into a single
line (or a list of diagnostics) and an exit code, never a traceback::

    VxtrainError                      base of everything raised on purpose (exit 1)
    ├── SpecError                     the spec is invalid; carries diagnostics (exit 1)
    ├── SpecChanged                   a key already names a job of another spec (exit 1)
    ├── GpuShortageError              a local run's host has fewer GPUs than the job needs (exit 1)
    ├── UsageError                    bad flags or arguments (exit 2)
    ├── LocalRunError                 a local replica failed (exit 3)
    ├── JobFailedError                a followed job ended FAILED/CANCELLED/EXPIRED (exit 3)
    ├── NoCapacity                    the job cannot get its machines (exit 5): the quota
    │                                 preflight found a need above a limit, or every rung
    │                                 of fallback: ran out of capacity
    └── ApiError                      the Job API refused or kept failing (exit 4)
    (Interrupted, a KeyboardInterrupt: Ctrl-C part-way, with what was known; exit 130)
        ├── QuotaError                RESOURCE_EXHAUSTED naming a quota
        ├── PermissionError_          PERMISSION_DENIED / UNAUTHENTICATED
        ├── InvalidArgumentError      INVALID_ARGUMENT / FAILED_PRECONDITION
        ├── NotFoundError             NOT_FOUND
        └── UnavailableError          transient errors that outlived the retries

Lower-level exceptions (google.api_core, grpc, OSError) are translated at the
boundary that meets them (``raise Mapped(msg) from exc``). Each exception is
complete from its constructor: every attribute it carries is an argument of
``__init__``, never set on it afterwards.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from vxtrain.diagnostics import Diagnostic


class Report(Protocol):
    """What an error carries to explain itself in ``--output json`` (submission's QuotaReport)."""

    def to_json(self) -> Mapping[str, object]:
        """The report as the JSON document shows it."""


class VxtrainError(Exception):
    """Base class of every error vxtrain raises on purpose."""

    exit_code = 1


class SpecError(VxtrainError):
    """A spec could not be loaded or is invalid; ``diagnostics`` says why."""

    exit_code = 1

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        first = self.diagnostics[0].message if self.diagnostics else "invalid spec"
        super().__init__(first)


class BuildKeyError(SpecError):
    """A mistake of the spec in pool ``role``'s ``build.KEY`` (``key``) found only at push time
    (the base's Python, its platform), nothing pushed: the caller, which knows the spec,
    locates it at that key. Its subclasses live beside the image code that finds them; this
    one is what submit catches without importing that code (~140 ms of imports)."""

    def __init__(self, diagnostics: Sequence[Diagnostic], role: str, key: str) -> None:
        self.role, self.key = role, key
        super().__init__(diagnostics)


class SpecChanged(VxtrainError):
    """An idempotency key already names a job of another spec (or other options that shape it):
    attempts of one key run the same job as sent, so nothing was created."""

    exit_code = 1


class GpuShortageError(VxtrainError):
    """A local run's host has GPUs, but fewer than the job asks for; nothing was started."""

    exit_code = 1


class UsageError(VxtrainError):
    """A command was called with arguments that do not fit."""

    exit_code = 2


class LocalRunError(VxtrainError):
    """A replica of a local run exited non-zero or could not start."""

    exit_code = 3


class JobFailedError(VxtrainError):
    """A job that was followed ended in FAILED, CANCELLED or EXPIRED."""

    exit_code = 3

    def __init__(self, message: str, job: dict[str, object] | None = None) -> None:
        super().__init__(message)
        self.job = job or {}

    def reworded(self, message: str) -> JobFailedError:
        """The same error (its job) with another message."""
        return type(self)(message, self.job)


class NoCapacity(VxtrainError):  # noqa: N818 - the Contract's JSON error type is "NoCapacity"
    """The job cannot get its machines: the quota preflight found a need above a limit
    (nothing was created; ``report``: its QuotaReport), every rung of ``fallback:``
    ran out of capacity (``attempts``: what became of each), or ``recovery:``'s
    recoveries were spent on lost machines (``details``: ``recoveries`` and ``cost``,
    added to the JSON error document beside ``attempts``)."""

    exit_code = 5

    def __init__(self, message: str, report: Report | None = None,
                 attempts: Sequence[Mapping[str, object]] = (),
                 details: Mapping[str, object] | None = None) -> None:
        super().__init__(message)
        self.report = report
        self.attempts = [dict(a) for a in attempts]
        self.details = dict(details or {})

    def reworded(self, message: str) -> NoCapacity:
        """The same error (its report, attempts and details) with another message."""
        return type(self)(message, self.report, self.attempts, self.details)


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (SIGINT) stopped a command part-way (exit 130, as any Ctrl-C); ``document`` is
    what it knew then (submit: the job it followed, its state, and the line that resumes it),
    which ``--output json`` writes so that stdout is still one document."""

    def __init__(self, document: Mapping[str, object]) -> None:
        super().__init__()
        self.document = dict(document)


class ApiError(VxtrainError):
    """The Job API refused a call, or transient errors outlived the retries.

    ``transient``: retrying may help (UNAVAILABLE, DEADLINE_EXCEEDED, INTERNAL), as the
    backend that translated the error says; retry predicates read it.
    ``unresolved_host``: the host name whose lookup failed, when that is the error
    (retried for a bounded time only). ``timed_out``: DEADLINE_EXCEEDED, the caller
    stopped waiting but the server may still act on the call. ``attempts``: raised
    part-way up a ``fallback:`` ladder, what became of the rungs before (their jobs exist).
    """

    exit_code = 4

    def __init__(self, message: str, *, transient: bool = False, unresolved_host: str | None = None,
                 timed_out: bool = False, attempts: Sequence[Mapping[str, object]] = ()) -> None:
        super().__init__(message)
        self.transient = transient
        self.unresolved_host = unresolved_host
        self.timed_out = timed_out
        self.attempts = [dict(a) for a in attempts]

    def reworded(self, message: str) -> ApiError:
        """The same error (its class, retry flags and attempts) with another message."""
        return type(self)(message, transient=self.transient, unresolved_host=self.unresolved_host,
                          timed_out=self.timed_out, attempts=self.attempts)

    def with_attempts(self, attempts: Sequence[Mapping[str, object]]) -> ApiError:
        """The same error, raised part-way up a ``fallback:`` ladder: with what became of the rungs before."""
        return type(self)(str(self), transient=self.transient, unresolved_host=self.unresolved_host,
                          timed_out=self.timed_out, attempts=attempts)


class QuotaError(ApiError):
    """RESOURCE_EXHAUSTED: a quota (named in the message) is used up."""


class PermissionError_(ApiError):  # noqa: N801 - avoid shadowing the builtin
    """PERMISSION_DENIED or UNAUTHENTICATED: the caller may not do this."""


class InvalidArgumentError(ApiError):
    """INVALID_ARGUMENT or FAILED_PRECONDITION: the request was refused as sent."""


class NotFoundError(ApiError):
    """NOT_FOUND: the job (or project/location) does not exist."""


class UnavailableError(ApiError):
    """UNAVAILABLE, DEADLINE_EXCEEDED or INTERNAL that outlived the retries."""
