"""The action worker tells incidents from Kafka to Slack (the fake): one thread each, its parent
updated in place, what was told kept in the ledger across a restart; a burst at Slack's pace,
ending in a digest."""

from __future__ import annotations

import itertools
import uuid

import pytest

from actions.adapters.memory import InMemoryAdapter
from centrality.slack_fake import SlackFake
from schemas.envelope import Event
from schemas.events.incidents import IncidentUpdated
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from tests.support.action_worker import worker
from tests.support.incidents import incident
from tests.support.until import until_true

pytestmark = pytest.mark.integration
REFUSED = "circuit breaker: quarantining 20 of 143 nodes (14 %) > 10 % within 3600 s"


async def emit(kafka: KafkaSettings, *events: Event) -> None:
    async with Emitter(kafka) as emitter:
        for event in events:
            await emitter.emit(event)
        await emitter.flush()


async def test_one_thread_per_incident_its_parent_updated_in_place_across_a_restart(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    channel = slack.channel("gpu-incidents")
    async with worker(kafka_settings, InMemoryAdapter(), slack):
        await emit(kafka_settings, incident("inc-a"))
        await until_true(lambda: len(channel.top()) == 1)
    moved = incident(
        "inc-a", IncidentUpdated, refused=REFUSED, states={"unreachable": 100, "in_service": 43}
    )
    # A teller in a group of its own reads both records again, as after a lost commit: what the
    # ledger says was told keeps it from posting a second parent.
    again = {"teller_group_id": f"teller-{uuid.uuid4().hex[:8]}"}
    async with worker(kafka_settings, InMemoryAdapter(), slack, slack_settings=again):
        await emit(kafka_settings, moved)
        await until_true(lambda: channel.top()[0].edits == 1 and channel.top()[0].replies)

    [(_, [parent, refusal])] = slack.threads()
    assert parent.versions[0].text.startswith("143 nodes under switch s12")
    assert "back in service 43" in parent.text and "unreachable 100" in parent.text
    assert REFUSED in str(refusal.blocks)
    assert len(slack.posts) == 2 and slack.refusals == []


async def test_a_burst_of_incidents_keeps_slacks_pace_and_ends_in_a_digest(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    burst = [incident(f"inc-{i:02d}", title=f"incident {i:02d}") for i in range(30)]
    channel = slack.channel("gpu-incidents")

    def told() -> str:
        return " ".join(m.text + str(m.blocks) for m in channel.top())

    async with worker(kafka_settings, InMemoryAdapter(), slack, slack_settings={"backlog_max": 3}):
        await emit(kafka_settings, *burst)
        await until_true(lambda: all(f"incident {i:02d}" in told() for i in range(30)), 60)

    top = channel.top()
    digests = [m for m in top if "told together" in m.text]
    # A few parents of their own while the backlog built up (the records come as they are
    # produced, over a second or two), the rest in digests: never 30 messages.
    assert digests and top[-1] in digests and len(top) <= 12
    assert sum(told().count(f"incident {i:02d} (open") for i in range(30)) == len(top) - len(
        digests
    )  # each incident once: its own parent, or a line of a digest
    at = [m.versions[0].at for m in top]
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(at))  # Slack's pace, kept
    assert slack.refusals == []  # no 429 at all, let alone one unhandled
