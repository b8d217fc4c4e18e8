"""Spans over OTLP/HTTP with the OpenTelemetry SDK (the ``vxtrain[otel]`` extra).

Imported only by vxtrain.submission.trace.spans_from_env, when an OTLP endpoint is set: a
command without one never loads OpenTelemetry. The exporter reads the standard
``OTEL_EXPORTER_OTLP_*`` variables (endpoint, headers, timeout, compression:
https://opentelemetry.io/docs/specs/otel/protocol/exporter/); the resource reads
``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` (default service name: ``vxtrain``).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import metadata

from opentelemetry import trace as otel_trace
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from vxtrain.submission.trace import Attribute, Span, Spans, TraceContext

#: Seconds the spans' send may take at the end of a command (the export's own timeout, when
#: OTEL_EXPORTER_OTLP_TIMEOUT does not say, and the flush's): an unreachable collector costs
#: the command at most about this, never its exit code.
FLUSH_S = 3.0
_TIMEOUT_ENVS = ("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")


class OtlpSpan(Span):
    """A recording span of the SDK."""

    def __init__(self, span: otel_trace.Span) -> None:
        self.span = span
        self.ended = False

    def set(self, attributes: Mapping[str, Attribute]) -> None:
        """Add ``attributes`` to the span."""
        self.span.set_attributes(dict(attributes))

    def fail(self, message: str) -> None:
        """Mark the span's status an error, with ``message``."""
        self.span.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, message))

    def end(self) -> None:
        """End the span, once."""
        if not self.ended:
            self.ended = True
            self.span.end()

    def traceparent(self) -> str | None:
        """``00-TRACE-SPAN-FLAGS`` of this span."""
        ctx = self.span.get_span_context()
        return f"00-{ctx.trace_id:032x}-{ctx.span_id:016x}-{int(ctx.trace_flags):02x}"


class OtlpSpans(Spans):
    """One command's tracer: a batch of spans sent over OTLP/HTTP, the environment's trace
    context (when given) the parent of its top span."""

    def __init__(self, trace: TraceContext | None) -> None:
        try:
            version = metadata.version("vxtrain")
        except metadata.PackageNotFoundError:  # run from a source tree, not installed
            version = "unknown"
        named = {} if os.environ.get("OTEL_SERVICE_NAME") else {"service.name": "vxtrain"}
        self.provider = TracerProvider(resource=Resource.create({**named, "service.version": version}))
        timeout = None if any(os.environ.get(name) for name in _TIMEOUT_ENVS) else FLUSH_S
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(timeout=timeout)))
        self.tracer = self.provider.get_tracer("vxtrain", version)
        carrier = {"traceparent": trace.traceparent, "tracestate": trace.tracestate or ""} if trace else {}
        self.root: Context = TraceContextTextMapPropagator().extract(carrier)

    def start(self, name: str, parent: Span | None = None, attributes: Mapping[str, Attribute] | None = None) -> Span:
        """Start ``name``, a child of ``parent`` (None: of the environment's trace context)."""
        context = otel_trace.set_span_in_context(parent.span) if isinstance(parent, OtlpSpan) else self.root
        return OtlpSpan(self.tracer.start_span(name, context=context, attributes=dict(attributes or {})))

    def close(self) -> None:
        """Flush within FLUSH_S, then shut the exporter down (what it could not send is dropped)."""
        self.provider.force_flush(int(FLUSH_S * 1000))
        self.provider.shutdown()
