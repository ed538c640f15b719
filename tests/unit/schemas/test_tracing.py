"""Trace context across Kafka headers, and the `OTEL_*` switch that turns tracing on."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import SecretStr
from typer.testing import CliRunner

from actions.adapters.memory import InMemoryAdapter
from centrality import cli
from schemas.runtime import tracing
from schemas.runtime.emitter import SyncEmitter
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.tracing import TracingSettings
from schemas.signing import signed_headers, verify
from streams.testing import checkpoint

OTEL_VARS = (
    "OTEL_SDK_DISABLED",
    "OTEL_TRACES_EXPORTER",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
    "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
    "OTEL_SERVICE_NAME",
    "OTEL_RESOURCE_ATTRIBUTES",
)


@pytest.fixture
def no_otel_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OTEL_VARS:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    yield exporter
    tracing.install(None)


@pytest.mark.usefixtures("no_otel_env")
def test_off_by_default_and_then_hooks_do_nothing() -> None:
    assert TracingSettings().exporters() == []
    assert tracing.make_provider("centrality-test") is None
    assert not tracing.enabled()
    assert tracing.inject_headers() == []
    with tracing.span("nothing", lambda: pytest.fail("attributes built while off")) as span:
        assert span is None
    adapter = InMemoryAdapter()
    assert tracing.traced(adapter, "adapter memory") is adapter


@pytest.mark.usefixtures("no_otel_env")
@pytest.mark.parametrize(
    ("env", "exporters"),
    [
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, ["otlp"]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, ["otlp"]),
        ({"OTEL_TRACES_EXPORTER": "console"}, ["console"]),
        ({"OTEL_TRACES_EXPORTER": "otlp, console"}, ["otlp", "console"]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, []),
        ({"OTEL_TRACES_EXPORTER": "otlp", "OTEL_SDK_DISABLED": "true"}, []),
    ],
)
def test_the_standard_variables_decide(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], exporters: list[str]
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert TracingSettings().exporters() == exporters


@pytest.mark.usefixtures("no_otel_env")
def test_the_provider_names_the_service_unless_otel_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "console")
    provider = tracing.make_provider("centrality-actions")
    assert provider is not None
    assert provider.resource.attributes[SERVICE_NAME] == "centrality-actions"
    monkeypatch.setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=gpu-fleet-a,team=infra")
    provider = tracing.make_provider("centrality-actions")
    assert provider is not None and provider.resource.attributes[SERVICE_NAME] == "gpu-fleet-a"
    monkeypatch.setenv("OTEL_SERVICE_NAME", "actions-eu")
    provider = tracing.make_provider("centrality-actions")
    assert provider is not None and provider.resource.attributes[SERVICE_NAME] == "actions-eu"


@pytest.mark.usefixtures("no_otel_env")
@pytest.mark.parametrize(
    ("env", "says"),
    [
        ({"OTEL_TRACES_EXPORTER": "jaeger"}, "unknown exporter 'jaeger'"),
        (
            {"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
            "only http/protobuf",
        ),
    ],
)
def test_what_cannot_be_honoured_is_refused_at_start(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], says: str
) -> None:
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match=says):
        tracing.make_provider("centrality-test")


@pytest.mark.usefixtures("no_otel_env")
def test_the_cli_refuses_a_tracing_setup_it_cannot_honour(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_TRACES_EXPORTER", "zipkin")
    result = CliRunner().invoke(cli.app, ["status"])
    assert result.exit_code == 2
    assert "OTEL_TRACES_EXPORTER: unknown exporter 'zipkin'" in result.output
    assert not tracing.enabled()


def test_a_consumer_continues_the_producers_trace(spans: InMemorySpanExporter) -> None:
    with tracing.span("emit", kind=tracing.PRODUCER):
        headers = tracing.inject_headers()
    assert [name for name, _ in headers] == ["traceparent"]
    with tracing.span("process", kind=tracing.CONSUMER, headers=headers), tracing.span("fold"):
        pass
    emit, fold, process = spans.get_finished_spans()
    assert emit.context is not None and process.context is not None
    assert process.context.trace_id == emit.context.trace_id
    assert process.parent is not None and process.parent.span_id == emit.context.span_id
    assert fold.parent is not None and fold.parent.span_id == process.context.span_id


def test_a_message_without_context_starts_a_trace(spans: InMemorySpanExporter) -> None:
    with tracing.span("process", kind=tracing.CONSUMER, headers=[("other", b"x")]):
        pass
    with tracing.span("process", kind=tracing.CONSUMER, headers={"traceparent": b"garbage"}):
        pass
    first, second = spans.get_finished_spans()
    assert first.parent is None and second.parent is None
    assert first.context is not None and second.context is not None
    assert first.context.trace_id != second.context.trace_id


def test_decisions_are_recorded_only_inside_a_traced_message(spans: InMemorySpanExporter) -> None:
    started = time.time_ns()
    tracing.record("rule on a tick", started, {"centrality.rule": "lost"})
    assert spans.get_finished_spans() == ()
    with tracing.span("fold"):
        tracing.record("rule fatal_xid", time.time_ns(), {"centrality.rule": "fatal_xid"})
    rule, fold = spans.get_finished_spans()
    assert rule.name == "rule fatal_xid" and rule.attributes == {"centrality.rule": "fatal_xid"}
    assert rule.parent is not None and fold.context is not None
    assert rule.parent.span_id == fold.context.span_id


def test_adapter_calls_get_spans_and_the_adapter_still_works(
    spans: InMemorySpanExporter,
) -> None:
    adapter = InMemoryAdapter()
    wrapped = tracing.traced(adapter, "adapter memory")
    with tracing.span("action QuarantineNodes"):
        done = wrapped.drain(["n1"], reason="xid 79")
    assert done["drained"] == ["n1"] and adapter.drained == {"n1": "xid 79"}
    assert wrapped.name == "memory"
    drain, action = spans.get_finished_spans()
    assert drain.name == "adapter memory drain"
    assert drain.parent is not None and action.context is not None
    assert drain.parent.span_id == action.context.span_id


def test_a_batch_consumer_links_to_each_trace(spans: InMemorySpanExporter) -> None:
    carried = []
    for name in ("a", "b"):
        with tracing.span(name):
            carried.append(tracing.inject_headers())
    links = [tracing.link(h) for h in [*carried, []]]
    assert links[2] is None
    with tracing.span("history insert", links=[link for link in links if link is not None]):
        pass
    a, b, insert = spans.get_finished_spans()
    assert [link.context.trace_id for link in insert.links] == [
        s.context.trace_id for s in (a, b) if s.context is not None
    ]


def test_trace_headers_leave_the_trigger_signature_valid(spans: InMemorySpanExporter) -> None:
    key, value = SecretStr("k"), b'{"type":"QuarantineNodes"}'
    with tracing.span("fold"):
        headers = [*tracing.inject_headers(), *signed_headers(value, key)]
    assert len(headers) == 2
    assert verify(value, headers, key)


def test_a_sync_emitter_carries_the_callers_trace(
    spans: InMemorySpanExporter, tmp_path: Path
) -> None:
    unreachable = KafkaSettings(bootstrap="127.0.0.1:1")  # so the record waits in the spool
    emitter = SyncEmitter(unreachable, EmitterSettings(spool_dir=tmp_path), drain_timeout_s=0.0)
    with emitter, tracing.span("training step"):
        emitter.emit(checkpoint(1200))
        [(_, record)] = list(emitter._require().spool.pending())
    step = next(s for s in spans.get_finished_spans() if s.name == "training step")
    carried = trace.get_current_span(tracing.extract_context(record.headers))
    assert step.context is not None
    assert carried.get_span_context().trace_id == step.context.trace_id
