"""The action worker on the real broker: once per trigger across restarts, failures notified."""

from __future__ import annotations

import pytest

from actions.adapters.memory import InMemoryAdapter
from actions.errors import TemporaryError
from centrality.slack_fake import SlackFake
from schemas.events import ActionFailed, ActionStarted, ActionSucceeded
from schemas.runtime.settings import KafkaSettings
from tests.support.action_worker import count, send, wait_for, worker
from tests.support.triggers import notify, restart

pytestmark = pytest.mark.integration


async def test_same_trigger_twice_across_a_restart_acts_once(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    adapter = InMemoryAdapter()
    first, again = restart(), restart()
    page1, page2 = notify("job-42", "n1"), notify("job-42", "n2")
    async with worker(kafka_settings, adapter, slack):
        await send(kafka_settings, first, page1)
        await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, page1) == 1)
    assert adapter.requeued == [("slurm/test/42", "s3://ckpt/step-1200")]

    # A fresh worker in a fresh consumer group re-reads every delivery, the old one included.
    sentinel = restart(window="attempt-2")
    async with worker(kafka_settings, adapter, slack):
        await send(kafka_settings, again, page2, sentinel)
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, sentinel) == 1)

    assert first.event_id == again.event_id
    assert len(adapter.requeued) == 2  # the first trigger once, the sentinel once
    assert count(seen, ActionStarted, first) == count(seen, ActionSucceeded, first) == 1
    assert count(seen, ActionSucceeded, page1) == count(seen, ActionSucceeded, page2) == 1
    # Both pages of the incident landed in one Slack thread, though a restart lay between them.
    root, reply = slack.posts
    assert "thread_ts" not in root and reply["thread_ts"] == root["ts"]


async def test_failing_adapter_ends_in_action_failed_and_a_notification(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    adapter = InMemoryAdapter()
    adapter.fail("requeue", *(TemporaryError("slurmctld not responding") for _ in range(4)))
    trigger = restart()
    async with worker(kafka_settings, adapter, slack, backoff_scale=0.01):
        await send(kafka_settings, trigger)
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionFailed, trigger) == 1)
    [failed] = [e for e in seen if isinstance(e, ActionFailed)]
    assert failed.payload.attempt == 4 and not failed.payload.permanent
    assert count(seen, ActionStarted, trigger) == 4
    assert adapter.calls == ["requeue"] * 4 and adapter.requeued == []
    [post] = slack.posts
    assert post["text"].startswith("slurm/test/42 not requeued")
