"""A big job's suspects on the real broker: the action worker drains two of five, the others wait
their turn uncommitted, a restarted worker picks up where the ledger says, and each benchmark
lets the next suspect out."""

from __future__ import annotations

import uuid

import pytest

from actions.adapters.memory import InMemoryAdapter
from centrality.slack_fake import SlackFake
from schemas.envelope import Event
from schemas.events import ActionStarted, ActionSucceeded
from schemas.runtime.settings import KafkaSettings
from tests.support.action_worker import count, send, wait_for, worker
from tests.support.triggers import benchmark, suspect

pytestmark = pytest.mark.integration

NODES = tuple(f"big-{i}" for i in range(5))
SUSPECTS = [suspect(n, most_out=2) for n in NODES]


def out(seen: list[Event]) -> set[str]:
    """The suspects drained so far."""
    return {n for t in SUSPECTS if count(seen, ActionSucceeded, t) for n in t.payload.nodes}


async def test_suspects_are_drained_two_at_a_time_across_a_restart(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    adapter = InMemoryAdapter()
    settings = {
        "group_id": f"batches-{uuid.uuid4().hex[:8]}",  # one group: the restart resumes it
        "fleet_size": {"test": 100},
        "quarantine_max_share": 1.0,
        "batch_poll_s": 0.2,
    }
    async with worker(kafka_settings, adapter, slack, **settings):
        await send(kafka_settings, *SUSPECTS)
        seen = await wait_for(kafka_settings, lambda s: len(out(s)) == 2)
    first = out(seen)
    assert set(adapter.drained) == first

    async with worker(kafka_settings, adapter, slack, **settings):
        # The waiting three come again to the new worker; its ledger says two are out.
        done = sorted(first)[0]
        await send(kafka_settings, benchmark((done,)))
        seen = await wait_for(kafka_settings, lambda s: len(out(s)) == 3)
        await send(kafka_settings, benchmark((sorted(first)[1],), window="w2"))
        seen = await wait_for(kafka_settings, lambda s: len(out(s)) == 4)
    assert first < out(seen) and set(adapter.drained) == out(seen)
    for trigger in SUSPECTS:  # each acted on once, however often delivered
        assert count(seen, ActionStarted, trigger) == (trigger.payload.nodes[0] in out(seen))
