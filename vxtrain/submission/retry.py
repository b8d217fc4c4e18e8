"""Retrying calls to a Job API: backoffs (Vertex AI's, an emulator's; polling's), and
``retrying``, which runs a call under google.api_core.retry on transient errors
only, reporting every retry (what failed, the attempt, the wait) as it happens."""
from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from vxtrain import errors
from vxtrain.submission.events import LOGGER

T = TypeVar("T")


@dataclass(frozen=True)
class Backoff:
    """Exponential backoff: ``initial`` seconds, times ``multiplier``, capped at ``maximum``;
    ``deadline`` bounds a whole retried call (None: no bound).

    ``unresolved``: how long a host name that does not resolve is retried (a
    mistyped region makes one: ``us-centrl1-aiplatform.googleapis.com``).
    ``commit_grace``: after a create ended in DEADLINE_EXCEEDED, how long to keep
    listing for its idempotency label before creating again (the create may
    still commit after its caller gave up on it).
    ``lease``: how long a submit's lease (vxtrain.submission.lease) that names no job yet
    holds before another submit may take it over (None: ``deadline`` + ``commit_grace`` + 10 s).
    """

    initial: float
    maximum: float
    multiplier: float = 2.0
    deadline: float | None = None
    unresolved: float = 30.0
    commit_grace: float = 0.0
    lease: float | None = None


#: Retrying API calls on Vertex AI: gentle, and patient for five minutes. A create
#: that timed out (60 s, vxtrain.backends.vertex.DEFAULT_TIMEOUT) gets 30 s more to show up.
VERTEX_RETRY = Backoff(initial=1.0, maximum=30.0, deadline=300.0, unresolved=30.0, commit_grace=30.0)
#: Retrying API calls on an emulator on loopback: fast. Its slowest commit is the
#: ``create:deadline-commit-late`` fault's 2 s.
LOCAL_RETRY = Backoff(initial=0.05, maximum=1.0, deadline=20.0, unresolved=5.0, commit_grace=4.0)
#: Polling a job on Vertex AI (jobs take minutes to start).
VERTEX_POLL = Backoff(initial=1.0, maximum=30.0)
#: Polling a job on an emulator (jobs take seconds).
LOCAL_POLL = Backoff(initial=0.1, maximum=1.0)


def _is_transient(exc: Exception) -> bool:
    return isinstance(exc, errors.ApiError) and exc.transient


class _RetryReport:
    """Decides and reports each retry of one call: what failed, the attempt, the
    wait before the next, so a slow failure never looks like a hang."""

    def __init__(self, what: str, backoff: Backoff, log: logging.Logger) -> None:
        self.what, self.backoff, self.log = what, backoff, log
        self.start = time.monotonic()
        self.attempt = 0
        self.last: Exception | None = None
        self.unresolved: str | None = None  # the host given up on

    def elapsed(self) -> float:
        return time.monotonic() - self.start

    def should_retry(self, exc: Exception) -> bool:
        """Transient errors only; a host that does not resolve for ``backoff.unresolved`` s."""
        if not _is_transient(exc):
            return False
        host = getattr(exc, "unresolved_host", None)
        if host and self.elapsed() >= self.backoff.unresolved:
            self.unresolved = host
            return False
        return True

    def failed(self, exc: Exception) -> None:
        """google.api_core.retry's ``on_error``: a retryable failure happened."""
        self.attempt += 1
        self.last = exc

    def delays(self) -> Iterator[float]:
        """The backoff's waits (with jitter), each reported as it is chosen; the wait
        before the retry that the deadline forbids is not (the call ends instead)."""
        from google.api_core.retry import exponential_sleep_generator  # lazy: as in retrying()

        b = self.backoff
        for delay in exponential_sleep_generator(b.initial, b.maximum, b.multiplier):
            if getattr(self.last, "unresolved_host", None):
                delay = max(0.0, min(delay, b.unresolved - self.elapsed()))
            if b.deadline is None or self.elapsed() + delay <= b.deadline:
                failure = str(self.last).removesuffix("; try again later")
                self.log.warning("%s: attempt %d failed: %s; retrying in %.1f s", self.what, self.attempt,
                                 failure, delay)
            yield delay


def retrying(call: Callable[[], T], backoff: Backoff, what: str = "the call",
             log: logging.Logger = LOGGER) -> T:
    """Run ``call`` under google.api_core.retry, retrying transient ApiErrors only and
    reporting every retry to ``log``; ``what`` names the call in reports."""
    # Lazy: google.api_core costs start-up time, and only a call to an API retries.
    from google.api_core import exceptions as gexc
    from google.api_core.retry import retry_target

    report = _RetryReport(what, backoff, log)
    try:
        result: T = retry_target(call, report.should_retry, report.delays(), timeout=backoff.deadline,
                                 on_error=report.failed)
        return result
    except gexc.RetryError as exc:
        raise errors.UnavailableError(
            f"{exc.cause} (still failing after retrying for {backoff.deadline:.0f} s)") from exc
    except errors.ApiError as exc:
        if report.unresolved is None:
            raise
        raise errors.UnavailableError(
            f"cannot reach {report.unresolved}: the host name does not resolve (retried for "
            f"{report.elapsed():.0f} s); {_unresolved_hint(report.unresolved)}") from exc


def _unresolved_hint(host: str) -> str:
    """What to check when ``host`` does not resolve: the region it was built from, or --endpoint."""
    suffix = "-aiplatform.googleapis.com"
    if host.endswith(suffix):
        return (f"is the region {host[:-len(suffix)]!r} spelled right? (Vertex AI regions: "
                "https://cloud.google.com/vertex-ai/docs/general/locations)")
    return "check the host in --endpoint"
