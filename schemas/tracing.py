"""Trace context across Kafka: W3C traceparent in message headers (OpenTelemetry propagation)."""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry import context, propagate

Headers = list[tuple[str, bytes]]


def inject_headers() -> Headers:
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return [(k, v.encode()) for k, v in carrier.items()]


def extract_context(headers: Iterable[tuple[str, bytes]] | None) -> context.Context:
    carrier = {k: v.decode(errors="replace") for k, v in (headers or ())}
    return propagate.extract(carrier)
