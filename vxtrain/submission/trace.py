"""Trace context: a CI run's trace carried into the job, and submit's own spans
(docs/submitting.md, "Trace context and spans").

A ``TRACEPARENT`` (and ``TRACESTATE``) in the environment is OpenTelemetry's environment
carrier (https://opentelemetry.io/docs/specs/otel/context/env-carriers/) of a W3C trace
context (https://www.w3.org/TR/trace-context/#traceparent-header). ``submit`` passes it on
in every pool's env of the job it creates, and its trace id in the label ``vxtrain_trace``,
so the training code (and whoever lists jobs) can join the pipeline's trace. It is not part
of the job that a key names: a re-run of a pipeline has a new trace
(vxtrain.submission.plan.differences leaves it out, the plan never holds it).

Spans: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set and ``vxtrain[otel]`` installed,
vxtrain.submission.carry.spans_from_env gives the OTLP/HTTP tracer of
vxtrain.submission.otel, imported only then; otherwise ``Spans``, which does nothing and
imports nothing.
"""
from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Union

from vxtrain.backends.base import JobDict
from vxtrain.model import TRACE_LABEL, TRACEPARENT_ENV, TRACESTATE_ENV
from vxtrain.vocab.kinds import with_pool_env

#: version-traceid-parentid-flags, lowercase hex (W3C trace context, "traceparent Header").
_TRACEPARENT = re.compile(r"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")

Attribute = Union[str, int, float, bool]


@dataclass(frozen=True)
class TraceContext:
    """A valid ``traceparent`` and the ``tracestate`` that came with it."""

    traceparent: str
    tracestate: str | None = None

    @property
    def trace_id(self) -> str:
        """The 32 hex digits of the trace id (a label value: lowercase, under 63 characters)."""
        return self.traceparent.split("-")[1]

    def env(self) -> list[dict[str, str]]:
        """``[{"name": "TRACEPARENT", "value": …}, {"name": "TRACESTATE", …}]`` (a pool's env entries)."""
        out = [{"name": TRACEPARENT_ENV, "value": self.traceparent}]
        if self.tracestate:
            out.append({"name": TRACESTATE_ENV, "value": self.tracestate})
        return out


def parse_traceparent(value: str) -> str | None:
    """Why ``value`` is not a traceparent W3C trace context accepts, or None when it is: version
    ``ff`` is invalid, version ``00`` has exactly four fields, and neither id may be all zeros."""
    found = _TRACEPARENT.fullmatch(value)
    if found is None:
        return "not 00-<32 hex trace id>-<16 hex span id>-<2 hex flags> (lowercase hex)"
    version, trace_id, span_id, _, rest = found.groups()
    if version == "ff":
        return "version ff is invalid"
    if version == "00" and rest:
        return "version 00 has four fields"
    if trace_id == "0" * 32 or span_id == "0" * 16:
        return "an all-zero trace id or span id is invalid"
    return None


def trace_from_env(environ: Mapping[str, str], log: logging.Logger) -> TraceContext | None:
    """The trace context of ``environ``'s ``TRACEPARENT``/``TRACESTATE``; None when there is none,
    or (said once, with why) when it is not valid: the job is sent without it, as W3C trace
    context asks of a receiver that cannot parse one."""
    value = environ.get(TRACEPARENT_ENV, "").strip()
    if not value:
        return None
    problem = parse_traceparent(value)
    if problem is not None:
        log.warning("warning: %s=%r is not a W3C traceparent (%s): ignored, the job is sent without a trace "
                    "context", TRACEPARENT_ENV, value, problem)
        return None
    return TraceContext(value, environ.get(TRACESTATE_ENV, "").strip() or None)


def with_trace(job: JobDict, trace: TraceContext | None) -> JobDict:
    """``job`` (REST JSON) with ``trace`` in every pool's env (replacing a TRACEPARENT/TRACESTATE
    already there) and its trace id in the label ``vxtrain_trace``; unchanged without one."""
    if trace is None:
        return job
    out = with_pool_env(job, trace.env(), (TRACEPARENT_ENV, TRACESTATE_ENV))
    out["labels"] = {**(out.get("labels") or {}), TRACE_LABEL: trace.trace_id}
    return out


class Span:
    """One span (this one records nothing: no tracer is configured)."""

    def set(self, attributes: Mapping[str, Attribute]) -> None:
        """Add ``attributes`` to the span."""

    def fail(self, message: str) -> None:
        """Mark the span's status an error, with ``message``."""

    def end(self) -> None:
        """End the span (once; a second end does nothing)."""

    def traceparent(self) -> str | None:
        """The span as a W3C traceparent (what the job's env carries, so its own spans are the
        span's children); None when nothing is recorded."""
        return None


class Spans:
    """The spans of one command (this one records nothing: no endpoint, or no ``vxtrain[otel]``)."""

    def start(self, name: str, parent: Span | None = None, attributes: Mapping[str, Attribute] | None = None) -> Span:
        """Start the span ``name``, a child of ``parent`` (None: of the environment's
        TRACEPARENT, else a new trace)."""
        return Span()

    def close(self) -> None:
        """Send what is left, within a bound (an unreachable collector never holds the command)."""

    def __enter__(self) -> Spans:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()
