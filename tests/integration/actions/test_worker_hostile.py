"""The action worker against what must not move it: unsigned, oversized triggers, a hung adapter,
Slack down. It acts on what it should meanwhile, and dead-letters the rest with the reason."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import aiokafka.codec
import pytest
from pydantic import SecretStr

from actions.adapters.memory import InMemoryAdapter
from centrality.slack_fake import SlackFake
from schemas.codec import encode
from schemas.deadletter import DeadLetter
from schemas.events import ActionFailed, ActionSucceeded, RestartJob
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from tests.integration.streams.foreign import committed_up_to_end
from tests.kafka_helpers import read_messages
from tests.support import foreign
from tests.support.action_worker import count, send, wait_for, worker
from tests.support.triggers import notify, quarantine, restart, signature_of

pytestmark = pytest.mark.integration


async def dead_letters(kafka: KafkaSettings, reason: str, n: int) -> list[DeadLetter]:
    async with asyncio.timeout(30):
        while True:
            letters = [DeadLetter.from_bytes(m) for m in await read_messages(kafka, "deadletter")]
            found = [d for d in letters if d.reason == reason]
            if len(found) >= n:
                return found
            await asyncio.sleep(0.3)


async def test_unsigned_and_wrongly_signed_triggers_are_dead_lettered_not_obeyed(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    adapter = InMemoryAdapter()
    unsigned, forged, sentinel = (
        restart("slurm/test/1"),
        restart("slurm/test/2"),
        restart("slurm/test/3"),
    )
    async with worker(kafka_settings, adapter, slack):
        async with Emitter(kafka_settings) as emitter:
            await emitter.emit(unsigned)
            await emitter.emit(forged, signature_of(forged, SecretStr("not-the-key")))
        await send(kafka_settings, sentinel)
        seen = await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, sentinel) == 1)
    assert adapter.requeued == [("slurm/test/3", "s3://ckpt/step-1200")]
    assert not any(count(seen, ActionSucceeded, t) for t in (unsigned, forged))
    letters = await dead_letters(kafka_settings, "unauthenticated", 2)
    assert {RestartJob.model_validate_json(d.raw).subject for d in letters} == {
        "slurm/test/1",
        "slurm/test/2",
    }


async def test_oversized_trigger_is_dead_lettered_and_the_worker_goes_on(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    """Its results and ledger entry could not fit a message: once this killed the worker, and
    every restart met the same trigger again."""
    adapter = InMemoryAdapter()
    # Past the contract's subject limit: built without validation, as a foreign producer would.
    huge = restart("slurm/test/huge").model_copy(update={"subject": "slurm/test/" + "x" * 500_000})
    sentinel, later = restart("slurm/test/after"), restart("slurm/test/later")
    group = f"g-{uuid.uuid4().hex[:8]}"
    async with worker(kafka_settings, adapter, slack, group_id=group):
        await send(kafka_settings, huge, sentinel)
        await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, sentinel) == 1)
    [letter] = await dead_letters(kafka_settings, "too_large", 1)
    whole = encode(huge)
    assert letter.raw == whole[: len(letter.raw)] and f"of {len(whole)} bytes" in letter.detail
    # Restarted in the same group, the worker does not meet it again: its offset was committed.
    async with worker(kafka_settings, adapter, slack, group_id=group):
        await send(kafka_settings, later)
        await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, later) == 1)
    assert len(await dead_letters(kafka_settings, "too_large", 1)) == 1
    assert [job for job, _ in adapter.requeued] == ["slurm/test/after", "slurm/test/later"]


async def until(done: Callable[[], bool], timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.1)


class HangingAdapter(InMemoryAdapter):
    """Requeueing one job hangs until released, as a scheduler that stopped answering."""

    def __init__(self, hung_job: str) -> None:
        super().__init__()
        self.hung_job = hung_job
        self.release = threading.Event()
        self.hung_calls = 0

    def requeue(self, job_id: str, *, checkpoint_uri: str | None) -> dict[str, Any]:
        if job_id == self.hung_job:
            self.hung_calls += 1
            self.release.wait(60)
        return super().requeue(job_id, checkpoint_uri=checkpoint_uri)


async def test_hung_adapter_call_is_a_temporary_failure_and_others_go_on(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    adapter = HangingAdapter("slurm/test/hung")
    hung = restart("slurm/test/hung")
    others = [restart(f"slurm/test/ok-{i}") for i in range(3)]
    try:
        async with worker(
            kafka_settings, adapter, slack, timeouts_s={"restart_job": 2.0}, backoff_scale=0.01
        ):
            await send(kafka_settings, hung, *others)
            seen = await wait_for(
                kafka_settings,
                lambda s: (
                    all(count(s, ActionSucceeded, t) for t in others)
                    and count(s, ActionFailed, hung) == 1
                ),
            )
            # The others were done while the hung call had not returned (and still has not).
            assert not adapter.release.is_set()
            assert {job for job, _ in adapter.requeued} == {f"slurm/test/ok-{i}" for i in range(3)}
    finally:
        adapter.release.set()
    [failed] = [e for e in seen if isinstance(e, ActionFailed)]
    assert not failed.payload.permanent and "timed out after 2s" in failed.payload.error
    assert adapter.hung_calls == 1  # never called again while the first call still ran


async def test_slack_down_does_not_delay_drains_and_notifications_follow(
    kafka_settings: KafkaSettings, slack: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CENTRALITY_SLACK_RETRY_INITIAL_S", "0.2")
    monkeypatch.setenv("CENTRALITY_SLACK_RETRY_MAX_S", "1")
    slack.down = True
    adapter = InMemoryAdapter()
    drains = [quarantine((f"n{i}",), window=f"w{i}") for i in range(3)]
    # A drain is told by its node's incident (the teller); notices about jobs are told here.
    notices = [notify(f"test/slurm/test/{i}", f"w{i}") for i in range(3)]
    async with worker(kafka_settings, adapter, slack, fleet_size={"test": 100}):
        await send(kafka_settings, *drains, *notices)
        done = [*drains, *notices]
        await wait_for(kafka_settings, lambda s: all(count(s, ActionSucceeded, t) for t in done))
        # Every drain is done and recorded while Slack has answered nothing but errors.
        assert set(adapter.drained) == {"n0", "n1", "n2"} and slack.posts == []
        await until(lambda: slack.rejected >= 2)  # retried in the background
        slack.down = False
        await until(lambda: len(slack.posts) == 3)
    assert [p["text"].split(":")[0] for p in slack.posts] == ["Job keeps failing"] * 3


async def test_signed_triggers_in_every_codec_from_librdkafka_are_acted_on(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    adapter = InMemoryAdapter()
    triggers = {codec: restart(f"slurm/test/{codec}") for codec in foreign.CODECS}
    async with worker(kafka_settings, adapter, slack):
        for codec, t in triggers.items():
            foreign.produce(
                kafka_settings, "triggers", codec, [(t.key, encode(t), signature_of(t))]
            )
        await wait_for(
            kafka_settings,
            lambda s: all(count(s, ActionSucceeded, t) for t in triggers.values()),
        )
    assert sorted(job for job, _ in adapter.requeued) == sorted(
        f"slurm/test/{codec}" for codec in foreign.CODECS
    )


async def test_trigger_batch_it_cannot_decompress_is_dead_lettered_and_read_past(
    kafka_settings: KafkaSettings, slack: SlackFake, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = InMemoryAdapter()
    unreadable, plain = restart("slurm/test/lz4"), restart("slurm/test/plain")
    for codec, t in (("lz4", unreadable), ("none", plain)):
        foreign.produce(kafka_settings, "triggers", codec, [(t.key, encode(t), signature_of(t))])
    monkeypatch.setattr(aiokafka.codec, "cramjam", None)  # a worker without the codec
    async with worker(kafka_settings, adapter, slack):
        await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, plain) == 1)
        [letter] = await dead_letters(kafka_settings, "codec", 1)
    assert "UnsupportedCodecError" in letter.detail
    assert adapter.requeued == [("slurm/test/plain", "s3://ckpt/step-1200")]


async def test_an_aborted_transaction_s_trigger_is_not_obeyed(
    kafka_settings: KafkaSettings, slack: SlackFake
) -> None:
    """Triggers from a transactional producer (a rule module run with Faust's exactly-once
    guarantee writes them so): an aborted one never happened; the worker commits past the commit
    marker that ends the partition, so its lag is not one for good."""
    adapter = InMemoryAdapter()
    aborted, committed = restart("slurm/test/aborted"), restart("slurm/test/committed")
    group = f"g-{uuid.uuid4().hex[:8]}"
    foreign.produce_transactions(
        kafka_settings,
        f"it-{group}",
        [
            (False, [("triggers", t.key, encode(t), signature_of(t)) for t in (aborted,)]),
            (True, [("triggers", t.key, encode(t), signature_of(t)) for t in (committed,)]),
        ],
    )
    async with worker(kafka_settings, adapter, slack, group_id=group):
        await wait_for(kafka_settings, lambda s: count(s, ActionSucceeded, committed) == 1)
        triggers = [topic_name("triggers", kafka_settings)]
        await committed_up_to_end(kafka_settings.bootstrap, group, triggers, 30)
    assert adapter.requeued == [("slurm/test/committed", "s3://ckpt/step-1200")]
