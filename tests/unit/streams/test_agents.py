"""The Faust agents through `test_context()`: a thin shell around the pure step."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from pydantic import SecretStr

from schemas.codec import decode, encode, encode_batch
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.placement import partition_for
from schemas.signing import verify
from streams.faust.app import StreamsApp
from streams.faust.read_positions import ReadPositions
from streams.faust.state_cache import StateCache
from streams.faust.topology import JOB_AGENT, NODE_AGENT
from streams.state.entities import JOBS, NODES, forwarded
from streams.state.internal import NodeActionReported, NodeTick, decode_internal
from streams.testing import (
    T0,
    checkpoint,
    ended,
    heartbeat,
    result,
    running,
    sample,
    step_times,
    xid,
)
from tests.support.streams_app import in_memory
from tests.support.triggers import quarantine as quarantine_trigger

KEY = "agents-test-key"


@pytest.fixture(scope="module")
def streams_app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamsApp]:
    built = in_memory(tmp_path_factory.mktemp("streams"), KEY)
    patch = pytest.MonkeyPatch()
    # What people read is published beside every change; recorded here, never to Kafka.
    patch.setattr(built.top.published["status"], "send", STATUSES)
    yield built
    patch.undo()


class Sent:
    """Stands in for `Topic.send`: records, and is acknowledged at once."""

    def __init__(self) -> None:
        self.values: list[bytes] = []
        self.headers: list[Any] = []

    async def __call__(self, *, value: bytes, **kwargs: Any) -> asyncio.Future[None]:
        self.values.append(value)
        self.headers.append(kwargs.get("headers"))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done


STATUSES = Sent()


async def written(table: Any, key: bytes, field: str) -> Any:
    """`put()` returns when the agent got the value, not when it is done with it."""
    for _ in range(100):
        raw = table.get(key)
        value = orjson.loads(raw) if raw is not None else None
        if value is not None and value[field]:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"{field} of {key!r} never written: {table.get(key)}")


async def test_job_agent_folds_decides_and_forwards(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    triggers, forwards = Sent(), Sent()
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", triggers)
    monkeypatch.setattr(streams_app.top.forward_topic, "send", forwards)
    STATUSES.values.clear()
    job = "slurm/agent/1"
    async with streams_app.fold_jobs.test_context() as agent:
        await agent.put(key=job.encode(), value=encode(checkpoint(7, job)))
        await agent.put(key=job.encode(), value=encode(ended(job, at_s=5)))
        stored = await written(streams_app.top.tables["jobs"], job.encode(), "restarts")
    [restart] = [e for v in triggers.values for e in decode(v)]
    assert restart.type == "RestartJob" and restart.payload.checkpoint_step == 7
    [(value, headers)] = zip(triggers.values, triggers.headers, strict=True)
    assert verify(value, headers, SecretStr(KEY))  # signed with the worker's key
    assert not verify(value, headers, SecretStr("another key"))
    assert stored["last_checkpoint_step"] == 7 and stored["restarts"][0]["attempt"] == 1
    # the exit concerns both nodes and their node set: three derived events to re-key
    assert len(forwards.values) == 3
    # People read each change of the job: checkpointed while unknown, then failed, restarting.
    published = [e for v in STATUSES.values for e in decode(v)]
    assert [e.type for e in published] == ["JobStatusChanged"] * 2
    assert published[0].payload.checkpoint_step == 7 and published[0].payload.state is None
    last = published[-1].payload
    # The restart asked for spent one of the rule's three: used and left add up to them.
    assert (last.state, last.pending, last.restarts_used, last.restarts_left) == (
        "FAILED",
        "requeue requested",
        1,
        2,
    )


async def test_a_job_stays_decoded_in_memory_while_it_runs_and_leaves_at_its_end(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A job a minute kept decoded for good grew the worker's memory for as long as it ran.
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", Sent())
    monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
    job = "slurm/agent/cached"
    async with streams_app.fold_jobs.test_context() as agent:
        await agent.put(key=job.encode(), value=encode(running(job, nodes=("n1", "n2"))))
        await agent.put(key=job.encode(), value=encode(step_times("n1", 1.0, job, at_s=60)))
        await written(streams_app.top.tables["jobs"], job.encode(), "steps")
        assert streams_app.cache.get("jobs", job) is not None
        await agent.put(key=job.encode(), value=encode(ended(job, "SUCCEEDED", at_s=90)))
        stored = await written(streams_app.top.tables["jobs"], job.encode(), "attempts")
    assert streams_app.cache.get("jobs", job) is None
    assert stored["steps"] == {}  # how fast an attempt over went is forgotten
    assert streams_app.load(JOBS, job).attempts[0].state == "SUCCEEDED"  # read from the table


async def test_node_agent_folds_a_gpu_batch_in_one_step(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    triggers, forwards = Sent(), Sent()
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", triggers)
    monkeypatch.setattr(streams_app.top.forward_topic, "send", forwards)
    batch = [sample("g1", gpu=g, at_s=1, ecc_double_bit=int(g == 3)) for g in range(8)]
    async with streams_app.fold_nodes.test_context() as agent:
        await agent.put(key=b"g1", value=encode_batch(batch))
        stored = await written(streams_app.top.tables["nodes"], b"g1", "story")
        await agent.put(key=b"g1", value=encode_batch(batch))  # redelivered: nothing new
        await agent.put(key=b"g1", value=encode_batch([sample("g1", at_s=2)]))
    # Only the drain is asked for; the benchmark waits for the drain's outcome.
    [status] = [e for v in STATUSES.values[-1:] for e in decode(v)]
    assert status.subject == "g1" and status.payload.state == "draining"
    assert [e.type for v in triggers.values for e in decode(v)] == ["QuarantineNodes"]
    assert stored["story"]["stage"] == "drain_requested"
    assert stored["gpus"] == {"3": stored["gpus"]["3"]}  # only GPUs with errors are kept
    assert stored["gpus"]["3"]["ecc_double_bit"] == 1
    # Its own quarantine was applied inline, not re-keyed; its trouble is told to its incident.
    assert [decode_internal(v).type for v in forwards.values] == ["FaultReported"]


def read_on(
    topic: str, key: str, value: bytes, partition: int = 0, offset: int = 0, at_s: float = 0.0
) -> SimpleNamespace:
    """A record as an agent reads it from `topic` (the test context names no topic)."""
    return SimpleNamespace(
        topic=topic,
        partition=partition,
        offset=offset,
        timestamp=T0.timestamp() + at_s,
        key=key.encode(),
        value=value,
        headers=[],
    )


async def test_each_table_has_one_writer_a_restart_result_reaches_the_job_agent(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fold reads the state, awaits its outputs, then writes: two agents folding one job at
    once would each write what they read and drop the other's change (a restart's outcome,
    lost to the next attempt's fold). The node agent reads action results; what a restart's
    result means for its job goes to the job agent through the job-forward topic, and so does
    any job event the node agent reads (a leftover on `forward` from a version before, a job
    event produced to `actions`)."""
    job = "slurm/agents/one-writer"
    monkeypatch.setattr(streams_app.top, "tables", {"jobs": {}, "nodes": {}, "node_sets": {}})
    monkeypatch.setattr(streams_app, "cache", StateCache(100))
    triggers, job_forwards = Sent(), Sent()
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", triggers)
    monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
    monkeypatch.setattr(streams_app.top.job_forward_topic, "send", job_forwards)
    await streams_app.handle_events(JOBS, job, [checkpoint(3, job), ended(job, at_s=5)])
    [restart] = [e for v in triggers.values for e in decode(v)]
    before = streams_app.top.tables["jobs"][job.encode()]
    [reported] = forwarded(result(restart, at_s=8))
    node_agent, job_agent = NODE_AGENT, JOB_AGENT
    actions = streams_app.top.catalog("actions")
    for record in (
        read_on(actions, restart.subject, encode(result(restart, at_s=8))),
        read_on(streams_app.top.forward, job, encode(reported)),
        read_on(actions, job, encode(checkpoint(4, job, at_s=9))),
    ):
        await streams_app.handle_message(record, node_agent)
    read = streams_app.top.decoders[streams_app.top.job_forward]
    handed = [(e.type, e.subject) for v in job_forwards.values for e in read(v)]
    assert handed == [("JobActionReported", job)] * 2 + [("CheckpointSaved", job)]
    assert streams_app.top.tables["jobs"][job.encode()] == before  # the node agent wrote nothing
    for value in job_forwards.values:
        await streams_app.handle_message(
            read_on(streams_app.top.job_forward, job, value), job_agent
        )
    stored = orjson.loads(streams_app.top.tables["jobs"][job.encode()])
    assert [r["outcome"] for r in stored["restarts"]] == ["requeued"]
    assert stored["last_checkpoint_step"] == 4


async def test_an_action_result_is_forwarded_to_each_node_it_names(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    triggers, forwards = Sent(), Sent()
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", triggers)
    monkeypatch.setattr(streams_app.top.forward_topic, "send", forwards)
    decided = quarantine_trigger(("r1", "r2"))
    async with streams_app.fold_nodes.test_context() as agent:
        await agent.put(key=decided.key, value=encode(result(decided, at_s=3)))
        for _ in range(100):
            if len(forwards.values) == 2:
                break
            await asyncio.sleep(0.01)
    reported = [decode_internal(v) for v in forwards.values]
    assert sorted(e.subject for e in reported) == ["r1", "r2"]
    assert all(isinstance(e, NodeActionReported) and e.payload.succeeded for e in reported)
    assert triggers.values == []  # a result decides nothing by itself, where it is keyed


async def test_a_tick_folds_only_the_nodes_something_is_due_for(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Live timers: a silent node is ticked once its silence may be a loss, and not again
    unless something changes it; a node that heartbeat since is not ticked at all, and once a
    partition's timers are built its ticks read only what is due. (What the tick decides is the
    pure step's, tested through the Brain.)"""
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", Sent())
    monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
    silent, alive = "tick-silent", "tick-alive"
    limit_s = streams_app.engine.on(NodeTick)[0].config.limit_s
    async with streams_app.fold_nodes.test_context() as agent:
        await agent.put(key=silent.encode(), value=encode(heartbeat(silent, at_s=0)))
        await agent.put(key=alive.encode(), value=encode(heartbeat(alive, at_s=limit_s)))
        await written(streams_app.top.tables["nodes"], alive.encode(), "last_heartbeat_at")
    ticked: list[str] = []

    async def fold(kind: Any, key: str, events: list[Any]) -> None:
        if events[0].type == "NodeTick":
            ticked.append(key)

    monkeypatch.setattr(streams_app, "_fold", fold)

    async def tick_at(s: float) -> list[str]:
        ticked.clear()
        now = (T0 + timedelta(seconds=s)).isoformat()
        for partition in {
            partition_for(n.encode(), streams_app.top.partitions) for n in (silent, alive)
        }:
            message = SimpleNamespace(value=orjson.dumps({"now": now}), partition=partition)
            await streams_app.handle_tick(NODES, message)
        return sorted(ticked)

    assert await tick_at(limit_s / 2) == []  # nothing is due yet
    assert await tick_at(limit_s + 5) == [silent]
    loaded: list[str] = []
    real_load = streams_app.load

    def counted_load(kind: Any, key: str) -> Any:
        loaded.append(key)
        return real_load(kind, key)

    monkeypatch.setattr(streams_app, "load", counted_load)
    assert await tick_at(limit_s + 10) == []  # its instant was seen at the last tick
    assert loaded == []  # and a tick with nothing due looks at no state at all
    # An event folded into it (here a late heartbeat) may have changed what is due.
    await streams_app.handle_events(NODES, silent, [heartbeat(silent, at_s=1)])
    assert await tick_at(limit_s + 15) == [silent]


class Behind:
    """The node agent's partition of `node` with its ticks, the broker's offsets set by hand."""

    def __init__(self, streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch, node: str) -> None:
        self.app, self.node = streams_app, node
        self.partition = partition_for(node.encode(), streams_app.top.partitions)
        self.nodes = streams_app.top.catalog("nodes")
        self.limit_s = streams_app.engine.on(NodeTick)[0].config.limit_s
        monkeypatch.setattr(streams_app.top, "tables", {"jobs": {}, "nodes": {}, "node_sets": {}})
        monkeypatch.setattr(streams_app, "cache", StateCache(100))
        monkeypatch.setattr(streams_app, "timers", {})
        monkeypatch.setattr(streams_app, "reads", ReadPositions())
        self.triggers = Sent()
        monkeypatch.setattr(streams_app.top.triggers_topic, "send", self.triggers)
        monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
        self.written = dict.fromkeys(streams_app.top.tick_inputs["nodes"], 0)
        monkeypatch.setattr(streams_app, "_end_offset", lambda topic, _: self.written[topic])
        monkeypatch.setattr(streams_app, "_start_offset", lambda topic, _: 0)
        monkeypatch.setattr(streams_app, "_fetched", lambda topic, _: None)

    def record(self, offset: int, event: Event) -> SimpleNamespace:
        at_s = (event.occurred_at - T0).total_seconds()
        return read_on(self.nodes, event.subject, encode(event), self.partition, offset, at_s)

    async def read(self, offset: int, event: Event) -> None:
        await self.app.handle_message(self.record(offset, event), NODE_AGENT)

    async def tick(self, at_s: float) -> list[str]:
        self.triggers.values.clear()
        now = (T0 + timedelta(seconds=at_s)).isoformat()
        message = SimpleNamespace(value=orjson.dumps({"now": now}), partition=self.partition)
        await self.app.handle_tick(NODES, message)
        return [e.type for v in self.triggers.values for e in decode(v)]


async def test_a_tick_judges_no_silence_that_is_only_unread(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker that starts behind (after an outage, a rebalance) holds its nodes' newer
    heartbeats unread while ticks carry the wall clock: it must not call the whole fleet lost.
    A node is judged lost only for a silence the worker has read."""
    behind = Behind(streams_app, monkeypatch, "tick-behind")
    node, limit_s = behind.node, behind.limit_s
    behind.written[behind.nodes] = 2  # heartbeats at 0 and at limit_s are on the topic
    assert await behind.tick(limit_s + 5) == []  # nothing of the partition read yet: not judged
    await behind.read(0, heartbeat(node, at_s=0))
    assert await behind.tick(limit_s + 5) == []  # judged at 0 s: the newer heartbeat is unread
    await behind.read(1, heartbeat(node, at_s=limit_s))
    assert await behind.tick(limit_s + 5) == []  # read: it was not silent
    assert await behind.tick(2 * limit_s + 5) == ["Notify"]  # read to the end, and silent since


async def test_a_tick_waits_for_a_heartbeat_that_a_later_record_overtook(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its heartbeat queued in the routine lane while an XID of the partition, written after it,
    is folded: read to the end by offsets, but the node is not silent. A heartbeat fetched in a
    generation that is over is skipped by Faust unfolded: it holds nothing."""
    behind = Behind(streams_app, monkeypatch, "tick-overtaken")
    node, limit_s = behind.node, behind.limit_s
    behind.written[behind.nodes] = 3
    await behind.read(0, heartbeat(node, at_s=0))
    queued = behind.record(1, heartbeat(node, at_s=limit_s - 1))
    queued.generation_id = streams_app.app.consumer_generation_id
    streams_app.hold_ticks_for(queued)
    await behind.read(2, xid(node, 43, at_s=limit_s))  # XID 43 (IGNORE): no decision
    assert await behind.tick(limit_s + 5) == []  # judged at limit_s - 1: not silent
    await streams_app.handle_message(queued, NODE_AGENT)
    assert await behind.tick(limit_s + 5) == []  # folded: not silent either
    assert await behind.tick(2 * limit_s + 5) == ["Notify"]

    again = Behind(streams_app, monkeypatch, "tick-overtaken-before")
    again.written[again.nodes] = 3
    await again.read(0, heartbeat(again.node, at_s=0))
    stale = again.record(1, heartbeat(again.node, at_s=limit_s - 1))
    stale.generation_id = streams_app.app.consumer_generation_id - 1
    streams_app.hold_ticks_for(stale)
    await again.read(2, xid(again.node, 43, at_s=limit_s))
    assert await again.tick(limit_s + 5) == ["Notify"]  # not held by a record never folded


async def _until(done: Any) -> None:
    for _ in range(300):
        if done():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


async def test_records_queued_together_fold_each_node_once(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Behind a backlog the agent folds what is queued together (`streams.faust.batching`):
    a node's ten heartbeats are one state written, the last one's; one at a time, ten."""
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", Sent())
    monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
    stored: list[str] = []
    store = streams_app._store

    def counted(kind: Any, key: str, *rest: Any) -> None:
        stored.append(key)
        store(kind, key, *rest)

    monkeypatch.setattr(streams_app, "_store", counted)
    node = "together-1"
    async with streams_app.fold_nodes.test_context() as agent:
        for s in range(10):
            await agent.put(key=node.encode(), value=encode(heartbeat(node, at_s=s)), wait=False)
        await _until(lambda: stored)
        await asyncio.sleep(0.05)  # time for any later write
    assert stored == [node]
    state = streams_app.load(NODES, node)
    assert state.last_heartbeat_at == T0 + timedelta(seconds=9)


async def test_a_refused_record_folded_with_others_is_dead_lettered_alone(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An XID over the output bound, queued between two heartbeats of its node, is the only
    record dead-lettered: each record of the node is then folded alone, and the heartbeats
    are."""
    letters = Sent()
    monkeypatch.setattr(streams_app.top.deadletter_topic, "send", letters)
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", Sent())
    monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
    monkeypatch.setattr(streams_app.settings, "outputs_per_message_max", 1)
    node = "together-2"
    async with streams_app.fold_nodes.test_context() as agent:
        first = agent.sent_offset
        for event in (heartbeat(node, at_s=0), xid(node, 79, at_s=1), heartbeat(node, at_s=2)):
            await agent.put(key=node.encode(), value=encode(event), wait=False)
        await _until(lambda: letters.values)
        await asyncio.sleep(0.05)
    [letter] = [DeadLetter.from_bytes(v) for v in letters.values]
    assert (letter.reason, letter.offset) == ("amplification", first + 1)
    state = streams_app.load(NODES, node)
    assert state.last_heartbeat_at == T0 + timedelta(seconds=2)
    assert state.story is None or state.story.stage != "drain_requested"  # the XID never folded


async def test_records_folded_together_write_each_state_to_its_own_partition(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Faust's tables take a write's partition from the stream's current event, the last
    record handed over: each node's state goes to the partition its own records came from."""
    monkeypatch.setattr(streams_app.top.forward_topic, "send", Sent())
    table = streams_app.top.tables["nodes"]
    sent: dict[bytes, int] = {}
    send_changelog = table.send_changelog

    def recorded(partition: int, key: bytes, value: bytes, *args: Any, **kwargs: Any) -> Any:
        sent[key] = partition
        return send_changelog(partition, key, value, *args, **kwargs)

    monkeypatch.setattr(table, "send_changelog", recorded)
    partitions = {"part-a": 1, "part-b": 2, "part-c": 1}
    async with streams_app.fold_nodes.test_context() as agent:
        for node, partition in partitions.items():
            value = encode(heartbeat(node))
            await agent.put(key=node.encode(), value=value, partition=partition, wait=False)
        await _until(lambda: len(sent) == len(partitions))
    assert sent == {node.encode(): partition for node, partition in partitions.items()}


class _Record(SimpleNamespace):
    """A record that can be referred to weakly (a `SimpleNamespace` cannot)."""


@pytest.mark.parametrize("why", ["wrong-key", "undecodable", "refused"])
async def test_a_dead_lettered_record_is_freed_when_handled(
    streams_app: StreamsApp, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    """The worker's collector passes are rare (`schemas.runtime.collector`): a bad record must
    not stay alive in a garbage cycle (an exception whose traceback holds the frame that holds
    the record) until one comes, or a storm of large bad records would be held with it."""
    letters = Sent()
    monkeypatch.setattr(streams_app.top.deadletter_topic, "send", letters)
    monkeypatch.setattr(streams_app.top.triggers_topic, "send", Sent())
    monkeypatch.setattr(streams_app.settings, "outputs_per_message_max", 1)
    node = f"freed-{why}"
    value = {
        "wrong-key": encode(heartbeat(node)),
        "undecodable": b"{" * 4096,
        "refused": encode(xid(node, 79)),  # more outputs than the bound
    }[why]
    key = node if why == "refused" else "not-" + node
    record = _Record(**vars(read_on(streams_app.top.catalog("nodes"), key, value)))
    held = weakref.ref(record)
    gc.collect()
    gc.disable()  # only reference counting may free it
    try:
        await streams_app.handle_message(record, NODE_AGENT)
        del record
        assert held() is None, [type(r).__name__ for r in gc.get_referrers(held())]
    finally:
        gc.enable()
    [letter] = [DeadLetter.from_bytes(v) for v in letters.values]
    assert letter.key == key.encode()
