"""The observed fleet on the real broker: seeded from the last window by record time, then
watched; and a worker with no fleet configured quarantines within the share of what it saw."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from aiokafka import AIOKafkaProducer

from actions.adapters.memory import InMemoryAdapter
from actions.fleet import FleetWatcher, ObservedFleet
from centrality.slack_fake import SlackFake
from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import NodeHealthChecked, NodeHeartbeat, NodeStatusChanged, QuarantineNodes
from schemas.events.actions import ActionFailed, ActionSucceeded
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from tests.support.action_worker import send, wait_for, worker
from tests.support.triggers import quarantine

pytestmark = pytest.mark.integration


def heartbeat(node: str, cluster: str, at: datetime) -> NodeHeartbeat:
    return NodeHeartbeat(
        source="t",
        cluster=cluster,
        subject=node,
        occurred_at=at,
        payload={"agent_version": "t", "gpus": 8, "interval_s": 30},
    )


async def beat(kafka: KafkaSettings, cluster: str, nodes: range, prefix: str = "n") -> None:
    now = datetime.now(UTC)
    async with Emitter(kafka) as emitter:
        for i in nodes:
            await emitter.emit(heartbeat(f"{prefix}{i}", cluster, now))
            await emitter.emit(
                NodeHealthChecked(
                    source="t",
                    cluster=cluster,
                    subject=f"{prefix}{i}",
                    occurred_at=now,
                    payload={"check": "x", "status": "OK"},
                )
            )


async def beat_long_ago(kafka: KafkaSettings, cluster: str, nodes: range) -> None:
    """Heartbeats recorded two hours ago (record time and event time): outside any window."""
    then = datetime.now(UTC) - timedelta(hours=2)
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap)
    await producer.start()
    try:
        for i in nodes:
            event = heartbeat(f"old{i}", cluster, then)
            await producer.send_and_wait(
                topic_name("nodes", kafka),
                encode(event),
                key=event.key,
                timestamp_ms=int(then.timestamp() * 1000),
            )
    finally:
        await producer.stop()


async def test_the_fleet_is_seeded_from_the_last_window_then_watched(
    kafka_settings: KafkaSettings,
) -> None:
    await beat_long_ago(kafka_settings, "c", range(10))
    await beat(kafka_settings, "c", range(30))
    await beat(kafka_settings, "d", range(4))
    watcher = FleetWatcher(kafka_settings, ObservedFleet(900), seed_timeout_s=30)
    async with watcher.running() as fleet:
        # Seeded before anything may act: the window's nodes, not the old ones.
        assert fleet.size("c", datetime.now(UTC)) == 30
        assert fleet.size("d", datetime.now(UTC)) == 4
        await beat(kafka_settings, "c", range(30, 35))
        for _ in range(100):
            if fleet.size("c", datetime.now(UTC)) == 35:
                break
            await asyncio.sleep(0.1)
        assert fleet.size("c", datetime.now(UTC)) == 35
        # Later, the same heartbeats have aged out of the window.
        assert fleet.size("c", datetime.now(UTC) + timedelta(seconds=901)) == 0


async def test_a_worker_with_no_fleet_configured_counts_the_nodes_it_saw(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    await beat(kafka_settings, "obs", range(20), prefix="o")
    adapter = InMemoryAdapter()
    within = quarantine(("o1", "o2"), window="a", cluster="obs")  # 2 of 20: within 10%
    beyond = quarantine(("o3",), window="b", cluster="obs")  # 3 of 20: beyond
    unseen = quarantine(("z1",), window="c", cluster="nobody")
    async with worker(kafka_settings, adapter, slack, quarantine_max_share=0.1):
        await send(kafka_settings, within, beyond, unseen)
        seen = await wait_for(
            kafka_settings,
            lambda s: len([e for e in s if isinstance(e, ActionSucceeded | ActionFailed)]) == 3,
        )
    assert set(adapter.drained) == {"o1", "o2"}
    results = {
        e.payload.trigger_id: e for e in seen if isinstance(e, ActionSucceeded | ActionFailed)
    }
    assert isinstance(results[within.event_id], ActionSucceeded)
    refused = results[beyond.event_id]
    assert isinstance(refused, ActionFailed) and refused.payload.refused
    assert "3 of 20 nodes (nodes with a heartbeat within 900s)" in refused.payload.error
    nobody = results[unseen.event_id]
    assert isinstance(nobody, ActionFailed)
    assert "no fleet known for cluster 'nobody'" in nobody.payload.error
    assert isinstance(within, QuarantineNodes)


async def tell_status(kafka: KafkaSettings, cluster: str, nodes: range, **facts: str) -> None:
    """What the streams app publishes about each node (its facts among it)."""
    async with Emitter(kafka) as emitter:
        for i in nodes:
            await emitter.emit(
                NodeStatusChanged(
                    source="streams",
                    cluster=cluster,
                    subject=f"g{i}",
                    occurred_at=datetime.now(UTC),
                    payload={"state": "in_service", **facts},
                )
            )


async def test_a_node_groups_cap_counts_the_nodes_of_the_status_topic(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    await tell_status(kafka_settings, "grp", range(10), gpu_model="NVIDIA A100-SXM4-80GB")
    await tell_status(kafka_settings, "grp", range(10, 20), gpu_model="NVIDIA H100 80GB HBM3")
    adapter = InMemoryAdapter()
    groups = [{"match": {"gpu_model": "NVIDIA A100*"}, "quarantine_max_share": 0.1}]
    first, second, later = (
        quarantine((f"g{i}",), window=f"w{i}", cluster="grp") for i in (1, 2, 3)
    )

    async def result(trigger: QuarantineNodes) -> ActionSucceeded | ActionFailed:
        def ended(events: list[Event]) -> list[ActionSucceeded | ActionFailed]:
            return [
                e
                for e in events
                if isinstance(e, ActionSucceeded | ActionFailed)
                and e.payload.trigger_id == trigger.event_id
            ]

        await send(kafka_settings, trigger)
        [found] = ended(await wait_for(kafka_settings, lambda s: bool(ended(s))))
        return found

    settings = {"fleet_size": {"grp": 20}, "quarantine_max_share": 0.5, "quarantine_groups": groups}
    async with worker(kafka_settings, adapter, slack, **settings):
        assert isinstance(await result(first), ActionSucceeded)  # 1 of 10 A100s
        refused = await result(second)  # 2 of 10: within the cluster's 50%, not the group's 10%
        assert isinstance(refused, ActionFailed) and refused.payload.refused
        assert refused.payload.error == (
            "circuit breaker: quarantining 2 of the 10 nodes of group gpu_model=NVIDIA A100* "
            "exceeds 10% within 3600s"
        )
        # H100s become A100s (as the streams app now says): 2 of 20 fits, read before acting.
        await tell_status(kafka_settings, "grp", range(10, 20), gpu_model="NVIDIA A100-PCIE-40GB")
        assert isinstance(await result(later), ActionSucceeded)
    assert set(adapter.drained) == {"g1", "g3"}
