"""Traces that follow an event across processes: W3C trace context in Kafka message headers.

A producer injects the current span's context (`traceparent`, `tracestate`) into the headers of
what it sends; every consumer extracts it and continues the trace, so one trace runs from the
collector's emit through the streams fold and rule to the trigger, the action, the adapter call
and the action's result.

Off unless configured: `configure()` reads the standard OpenTelemetry variables (`TracingSettings`
below; the SDK itself reads the rest: `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`,
`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`, ...). While off, every hook here is one check of a
module global: no span objects, no context switches, no attributes built (callers pass attributes
as a function, called only when a span is really made). Consumers handle thousands of messages a
second per worker; tracing that is not asked for must cost them nothing measurable.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar, cast

from opentelemetry import context, propagate, trace
from opentelemetry.trace import Link, Span, SpanKind, Tracer, TracerProvider
from opentelemetry.util.types import Attributes
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

EXIT_FLUSH_MS = 2000
Headers = list[tuple[str, bytes]]
Attrs = Callable[[], Attributes]
T = TypeVar("T")

CONSUMER, PRODUCER, INTERNAL = SpanKind.CONSUMER, SpanKind.PRODUCER, SpanKind.INTERNAL
_OFF: contextlib.nullcontext[None] = contextlib.nullcontext()
_tracer: Tracer | None = None  # None: tracing is off, and every hook returns at once


class TracingSettings(BaseSettings):
    """The standard `OTEL_*` variables that decide whether and where spans go."""

    model_config = SettingsConfigDict(env_prefix="OTEL_", extra="ignore")

    sdk_disabled: bool = Field(default=False, description="`true`: no tracing, whatever else.")
    traces_exporter: str | None = Field(
        default=None,
        description="Comma-separated: `otlp`, `console`, `none`. Unset: `otlp` if an OTLP "
        "endpoint is set, else none (tracing is off by default).",
    )
    exporter_otlp_endpoint: str | None = Field(
        default=None,
        description="OTLP/HTTP endpoint for traces (e.g. `http://otel-collector:4318`); setting "
        "it turns tracing on in every process (docs/tracing.md).",
    )
    exporter_otlp_traces_endpoint: str | None = Field(
        default=None, description="The same, for traces only (the SDK's own precedence)."
    )
    exporter_otlp_protocol: str = Field(
        default="http/protobuf", description="The only protocol shipped; anything else stops."
    )
    exporter_otlp_traces_protocol: str | None = Field(
        default=None, description="The same, for traces only."
    )

    def exporters(self) -> list[str]:
        if self.sdk_disabled:
            return []
        if self.traces_exporter is None:
            configured = self.exporter_otlp_endpoint or self.exporter_otlp_traces_endpoint
            return ["otlp"] if configured else []
        names = [n.strip().lower() for n in self.traces_exporter.split(",") if n.strip()]
        return [n for n in names if n != "none"]

    @property
    def protocol(self) -> str:
        return self.exporter_otlp_traces_protocol or self.exporter_otlp_protocol


def configure(service: str, settings: TracingSettings | None = None) -> bool:
    """Trace this process if the `OTEL_*` variables ask for it; True if they do. Spans are
    exported in batches by a background thread and flushed when the process exits."""
    provider = make_provider(service, settings)
    if provider is None:
        return False
    trace.set_tracer_provider(provider)  # for libraries that trace through the global API too
    install(provider)
    return True


def make_provider(service: str, settings: TracingSettings | None = None) -> Any:
    """The SDK provider the `OTEL_*` variables ask for, or None. `service` names the process
    (`service.name`) unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` does."""
    settings = settings or TracingSettings()
    names = settings.exporters()
    if not names:
        return None
    # The SDK is imported only here: the light base (Emitter, SDK producers) never pays for it.
    from opentelemetry.sdk.resources import SERVICE_NAME, OTELResourceDetector, Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    named = SERVICE_NAME in (OTELResourceDetector().detect().attributes or {})
    provider = SdkTracerProvider(
        resource=Resource.create({} if named else {SERVICE_NAME: service}), shutdown_on_exit=False
    )
    exporters = [_exporter(name, settings) for name in names]
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    atexit.register(_flush_at_exit, provider, exporters)
    return provider


def _flush_at_exit(provider: Any, exporters: list[Any]) -> None:
    """The last spans get `EXIT_FLUSH_MS` to go out. The SDK's own shutdown would wait out an
    unreachable collector's retries (up to `OTEL_EXPORTER_OTLP_TIMEOUT`, 10 s), longer than a
    worker may take to stop (the streams worker is killed 8 s after SIGTERM)."""
    # The SDK's force_flush ignores its timeout: it exports in the calling thread until done.
    flushing = threading.Thread(target=provider.force_flush, name="otel-exit-flush", daemon=True)
    flushing.start()
    flushing.join(EXIT_FLUSH_MS / 1000)
    for exporter in exporters:
        exporter.shutdown()  # ends a retry under way; the export threads are daemons


def _exporter(name: str, settings: TracingSettings) -> Any:
    if name == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if name != "otlp":
        raise ValueError(f"OTEL_TRACES_EXPORTER: unknown exporter {name!r}; known: otlp, console")
    if settings.protocol != "http/protobuf":
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={settings.protocol}: only http/protobuf is supported "
            "(every OpenTelemetry Collector and Jaeger, Tempo, Honeycomb... accept it on 4318)"
        )
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter()  # endpoint, headers, timeout, TLS: from OTEL_EXPORTER_OTLP_*


def install(provider: TracerProvider | None) -> None:
    """Trace through `provider` from now on; None turns tracing off (tests use both)."""
    global _tracer
    _tracer = None if provider is None else provider.get_tracer("centrality")


def enabled() -> bool:
    return _tracer is not None


def inject_headers() -> Headers:
    """The current trace context as Kafka headers; none while tracing is off."""
    if _tracer is None:
        return []
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return [(k, v.encode()) for k, v in carrier.items()]


def extract_context(
    headers: Iterable[tuple[str, bytes]] | Mapping[str, bytes] | None,
) -> context.Context:
    """The trace context a producer put in `headers` (an empty one if it put none)."""
    pairs = headers.items() if isinstance(headers, Mapping) else (headers or ())
    carrier = {k: bytes(v).decode(errors="replace") for k, v in pairs if v is not None}
    return propagate.extract(carrier)


def span(
    name: str,
    attributes: Attrs | None = None,
    *,
    kind: SpanKind = INTERNAL,
    headers: Iterable[tuple[str, bytes]] | Mapping[str, bytes] | None = None,
    links: Sequence[Link] = (),
) -> contextlib.AbstractContextManager[Span | None]:
    """A span around a block, child of the current span, or (with `headers`, for a consumer)
    of the context a producer sent. While off: a shared no-op context manager."""
    if _tracer is None:
        return _OFF
    parent = extract_context(headers) if headers is not None else None
    return _tracer.start_as_current_span(
        name, parent, kind, attributes() if attributes is not None else None, links
    )


def record(name: str, start_ns: int, attributes: Attributes = None) -> None:
    """A finished span that began at `start_ns`, for work only worth a span once its outcome is
    known (a rule that decided something). Only inside a traced span: work done outside any
    traced message (a clock tick) starts no trace of its own."""
    if _tracer is None or not trace.get_current_span().is_recording():
        return
    _tracer.start_span(name, attributes=attributes, start_time=start_ns).end()


def annotate(attributes: Mapping[str, str | int | float | bool]) -> None:
    """Attributes for the current span (an outcome known only at the end)."""
    if _tracer is not None:
        trace.get_current_span().set_attributes(attributes)


LINKS_MAX = 128  # the SDK's default OTEL_SPAN_LINK_COUNT_LIMIT: more would be dropped anyway


def link(headers: Iterable[tuple[str, bytes]] | Mapping[str, bytes] | None) -> Link | None:
    """A link to the trace a message carries, for consumers that handle messages in batches
    (one span per batch, linked to each message's trace); None without one, or while off."""
    if _tracer is None:
        return None
    span_context = trace.get_current_span(extract_context(headers)).get_span_context()
    return Link(span_context) if span_context.is_valid else None


def traced(target: T, prefix: str) -> T:
    """`target` with a span around each call of its public methods (`<prefix> <method>`): for
    calls out of the process, such as a scheduler adapter's. `target` itself while off."""
    if _tracer is None:
        return target
    return cast(T, _Traced(target, prefix))


class _Traced:
    def __init__(self, target: Any, prefix: str) -> None:
        self._target = target
        self._prefix = prefix

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if name.startswith("_") or not callable(attr):
            return attr

        @functools.wraps(attr)
        def call(*args: Any, **kwargs: Any) -> Any:
            with span(f"{self._prefix} {name}"):
                return attr(*args, **kwargs)

        return call
