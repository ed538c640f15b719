"""One trace from a `GpuXidObserved` to the drain it caused, in one process, kept in memory.

Each hop is the real component with Kafka cut out where the message crosses: the Emitter (Kafka
unreachable, so the record waits in its spool with its headers, as it would travel), the Faust
node agent (`test_context`, outputs caught at `Topic.send`), the action worker's own screening
and acting on the trigger record, the dispatcher and the memory adapter. The headers each hop
hands on are exactly what it produced. `tests/e2e/test_traces.py` runs the same story across
real processes and a real broker.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from aiokafka import ConsumerRecord
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from actions.adapters.memory import InMemoryAdapter
from actions.dispatch import Dispatcher
from actions.ledger import Ledger
from actions.settings import ActionsSettings
from actions.slack.notifier import log_notifier
from actions.worker import ActionWorker
from schemas.codec import decode
from schemas.events import ActionSucceeded
from schemas.placement import partition_for
from schemas.runtime import tracing
from schemas.runtime.emitter import Emitter
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.emitter.spool import SpooledRecord
from schemas.runtime.settings import KafkaSettings
from schemas.signing import SigningSettings
from streams.faust.app import StreamsApp
from streams.state.entities import NODES
from streams.testing import xid
from tests.support.streams_app import in_memory

KEY = "agents-test-key"


@pytest.fixture(scope="module")
def streams_app(tmp_path_factory: pytest.TempPathFactory) -> StreamsApp:
    return in_memory(tmp_path_factory.mktemp("streams"), KEY)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.install(provider)
    yield exporter
    tracing.install(None)


class Sent:
    """Stands in for `Topic.send`: records value and headers, acknowledged at once."""

    def __init__(self) -> None:
        self.records: list[tuple[bytes, list[tuple[str, bytes]]]] = []

    async def __call__(self, *, value: bytes, **kwargs: Any) -> asyncio.Future[None]:
        self.records.append((value, kwargs.get("headers") or []))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


def spooled(emitter: Emitter) -> list[SpooledRecord]:
    return [record for _, record in emitter.spool.pending()]


def trigger_record(topic: str, value: bytes, headers: list[tuple[str, bytes]]) -> Any:
    return ConsumerRecord(topic, 0, 0, 0, 0, b"n1", value, None, 2, len(value), tuple(headers))


async def test_one_trace_from_a_fatal_xid_to_the_drain_and_its_result(
    streams_app: StreamsApp,
    monkeypatch: pytest.MonkeyPatch,
    spans: InMemorySpanExporter,
    tmp_path: Path,
) -> None:
    unreachable = KafkaSettings(bootstrap="127.0.0.1:1")
    emitter = Emitter(unreachable, EmitterSettings(spool_dir=tmp_path / "spool"))
    try:
        # The collector: the XID leaves with the emit span's context in its headers.
        await emitter.emit(xid("n1", code=79))
        [sent_xid] = spooled(emitter)

        # The streams worker: folds it, the fatal_xid rule decides, the trigger goes out.
        triggers = Sent()
        monkeypatch.setattr(streams_app.top.triggers_topic, "send", triggers)
        monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
        monkeypatch.setattr(streams_app.top.published["status"], "send", Sent())
        async with streams_app.fold_nodes.test_context() as agent:
            await agent.put(key=b"n1", value=sent_xid.value, headers=sent_xid.headers)
            for _ in range(200):  # the node is stored once its trigger is sent
                if streams_app.top.tables["nodes"].get(b"n1") is not None:
                    break
                await asyncio.sleep(0.01)
            # A clock tick over the node's partition: no event, so no span and no trace.
            traced_so_far = len(spans.get_finished_spans())
            now = orjson.dumps({"now": datetime.now(UTC).isoformat()})
            tick = SimpleNamespace(
                value=now, partition=partition_for(b"n1", streams_app.top.partitions)
            )
            await streams_app.handle_tick(NODES, tick)
            assert len(spans.get_finished_spans()) == traced_so_far
        [(value, headers)] = triggers.records
        assert [t.type for t in decode(value)] == ["QuarantineNodes"]

        # The action worker: screens the signed record, acts, emits the result.
        settings = ActionsSettings(fleet_size={"test": 100}, backoff_scale=0.001)
        adapter = InMemoryAdapter()
        dispatcher = Dispatcher(settings, adapter, log_notifier(), Ledger(), emitter.emit)
        worker = ActionWorker(unreachable, settings, adapter, log_notifier(), SigningSettings())
        record = trigger_record("centrality.triggers", value, headers)
        decided, refusal = worker._screen(record, streams_app.signing_key)  # the app's key
        assert refusal is None
        await worker._act(emitter, dispatcher, record, decided, refusal)
        await dispatcher.notifier.close(1.0)
        assert adapter.drained == {"n1": adapter.drained["n1"]}
        outputs = spooled(emitter)[1:]
        results = [decode(r.value)[0] for r in outputs]
        assert [type(e).__name__ for e in results] == ["ActionStarted", "ActionSucceeded"]
        assert isinstance(results[-1], ActionSucceeded)
    finally:
        await emitter.stop(drain_timeout_s=0)

    finished = spans.get_finished_spans()
    names = [s.name for s in finished]
    # The agent's test context reads from a topic of its own: its name is Faust's to choose.
    [_] = [n for n in names if n.startswith("process ") and n != "process centrality.triggers"]
    for expected in (
        "emit centrality.nodes",
        "fold nodes",
        "rule fatal_xid",
        "process centrality.triggers",
        "action QuarantineNodes",
        "adapter memory drain",
        "emit centrality.actions",
    ):
        assert expected in names, f"no {expected!r} span in {names}"
    [trace_id] = {s.context.trace_id for s in finished if s.context is not None}
    assert_one_tree(finished)
    # The result carries the trace on, to the streams worker that reads `actions` next.
    for output in outputs:
        carried = trace.get_current_span(tracing.extract_context(output.headers))
        assert carried.get_span_context().trace_id == trace_id


def assert_one_tree(finished: tuple[ReadableSpan, ...]) -> None:
    """Every span but the collector's emit has its parent among these spans."""
    ids = {s.context.span_id for s in finished if s.context is not None}
    roots = [s.name for s in finished if s.parent is None or s.parent.span_id not in ids]
    assert roots == ["emit centrality.nodes"], roots


async def test_a_dead_letter_stays_in_the_trace_of_the_message_it_holds(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch, spans: InMemorySpanExporter
) -> None:
    letters = Sent()
    monkeypatch.setattr(streams_app.top.deadletter_topic, "send", letters)
    with tracing.span("emit", kind=tracing.PRODUCER):
        headers = tracing.inject_headers()
    async with streams_app.fold_nodes.test_context() as agent:
        await agent.put(key=b"n1", value=b"{not json", headers=headers)
        for _ in range(200):
            if letters.records:
                break
            await asyncio.sleep(0.01)
    [(_, letter_headers)] = letters.records
    emit, process = spans.get_finished_spans()
    assert process.attributes is not None
    assert process.attributes["centrality.dead_letter"] == "malformed"
    assert emit.context is not None and process.context is not None
    assert process.context.trace_id == emit.context.trace_id
    carried = trace.get_current_span(tracing.extract_context(letter_headers))
    assert carried.get_span_context().span_id == process.context.span_id
