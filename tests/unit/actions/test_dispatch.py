"""The worker's policy without Kafka: once per trigger, breakers, dry-run, retries, allowlist."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import SecretStr

from actions.adapters.memory import InMemoryAdapter
from actions.dispatch import Dispatcher
from actions.errors import PermanentError, TemporaryError
from actions.ledger import Ledger
from actions.registry import handler_for
from actions.settings import ActionsSettings
from actions.slack.notifier import SlackNotifier
from actions.slack.settings import SlackSettings
from schemas.envelope import Event
from schemas.events import (
    ActionFailed,
    ActionStarted,
    ActionSucceeded,
    BenchmarkCompleted,
    Trigger,
)
from tests.support.slack_stub import SlackStub
from tests.support.triggers import benchmark, quarantine, restart


@pytest.fixture
def slack() -> Iterator[SlackStub]:
    with SlackStub() as stub:
        yield stub


class Rig:
    def __init__(self, slack: SlackStub, **settings: Any) -> None:
        self.adapter = InMemoryAdapter()
        self.ledger = Ledger()
        self.events: list[Event] = []
        self.settings = ActionsSettings(backoff_scale=0.001, fleet_size={"test": 10}, **settings)
        notifier = SlackNotifier(SlackSettings(token=SecretStr("xoxb-t"), base_url=slack.base_url))
        self.dispatcher = Dispatcher(self.settings, self.adapter, notifier, self.ledger, self._emit)

    async def _emit(self, event: Event) -> None:
        self.events.append(event)

    async def handle(self, trigger: Trigger) -> None:
        """Handle, then wait for the notifications it queued (they are posted in the background)."""
        await self.dispatcher.handle(trigger)
        await asyncio.wait_for(self.dispatcher.notifications.join(), 30)

    def of(self, cls: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]


async def test_redelivered_trigger_acts_once(slack: SlackStub) -> None:
    rig = Rig(slack)
    for _ in range(3):
        await rig.handle(restart())
    assert rig.adapter.requeued == [("slurm/test/42", "s3://ckpt/step-1200")]
    assert len(rig.of(ActionStarted)) == len(rig.of(ActionSucceeded)) == 1
    assert rig.ledger.get(restart().event_id).outcome == "succeeded"  # type: ignore[union-attr]


async def test_quarantine_drains_and_taints(slack: SlackStub) -> None:
    rig = Rig(slack)
    await rig.handle(quarantine(("n1",)))
    assert rig.adapter.drained == {"n1": "centrality: 5 failures on the same nodes"}
    assert rig.adapter.taints == {"n1": {"centrality.io/quarantined"}}
    [done] = rig.of(ActionSucceeded)
    assert done.payload.detail["drain"]["drained"] == ["n1"]
    [post] = slack.posts  # success of a quarantine is told in the incident's thread
    assert "quarantine_nodes done" in post["text"]


async def test_breaker_trips_notifies_and_does_not_act(slack: SlackStub) -> None:
    rig = Rig(slack, quarantine_max_share=0.2)  # 2 of 10 nodes
    await rig.handle(quarantine(("n1", "n2"), window="a"))
    await rig.handle(quarantine(("n3",), window="b"))
    assert set(rig.adapter.drained) == {"n1", "n2"}
    [failed] = rig.of(ActionFailed)
    assert failed.payload.error.startswith("circuit breaker: quarantining 3 of 10 nodes")
    assert failed.payload.permanent
    tripped = slack.posts[-1]
    assert "not done" in tripped["text"]
    assert "circuit breaker" in json_text(tripped)
    assert rig.ledger.get(quarantine(("n3",), window="b").event_id).outcome == "skipped"  # type: ignore[union-attr]


async def test_dry_run_changes_nothing_and_records_the_plan(slack: SlackStub) -> None:
    rig = Rig(slack, dry_run=True)
    await rig.handle(quarantine(("n1",)))
    await rig.handle(restart())
    assert rig.adapter.calls == [] and slack.posts == []
    done = rig.of(ActionSucceeded)
    assert [d.payload.dry_run for d in done] == [True, True]
    assert [c["call"] for c in done[0].payload.detail["planned"]] == ["drain", "taint"]
    assert done[1].payload.detail["planned"] == [
        {"call": "requeue", "job_id": "slurm/test/42", "checkpoint_uri": "s3://ckpt/step-1200"}
    ]
    # A later live worker still acts on the same trigger: a plan is not a deed.
    live = Dispatcher(
        ActionsSettings(), rig.adapter, rig.dispatcher.notifier, rig.ledger, rig._emit
    )
    await live.handle(restart())
    assert len(rig.adapter.requeued) == 1


async def test_failing_adapter_retries_then_fails_and_notifies(slack: SlackStub) -> None:
    rig = Rig(slack)
    rig.adapter.fail("requeue", *(TemporaryError("slurmctld busy") for _ in range(4)))
    await rig.handle(restart())
    assert rig.adapter.calls == ["requeue"] * 4  # 1 + 3 retries
    assert [s.payload.attempt for s in rig.of(ActionStarted)] == [1, 2, 3, 4]
    [failed] = rig.of(ActionFailed)
    assert (failed.payload.attempt, failed.payload.permanent) == (4, False)
    assert "slurmctld busy" in failed.payload.error
    [post] = slack.posts
    assert "restart_job failed" in post["text"] and "slurmctld busy" in json_text(post)
    await rig.handle(restart())  # redelivered after failing: still nothing more
    assert len(rig.adapter.calls) == 4


async def test_permanent_error_is_not_retried(slack: SlackStub) -> None:
    rig = Rig(slack)
    rig.adapter.fail("requeue", PermanentError("job is gone"))
    await rig.handle(restart())
    assert rig.adapter.calls == ["requeue"]
    assert rig.of(ActionFailed)[0].payload.permanent


async def test_temporary_error_then_success(slack: SlackStub) -> None:
    rig = Rig(slack)
    rig.adapter.fail("requeue", TemporaryError("blip"))
    await rig.handle(restart())
    [done] = rig.of(ActionSucceeded)
    assert done.payload.attempt == 2 and len(rig.adapter.requeued) == 1


async def test_allowlist_refuses_without_acting(slack: SlackStub) -> None:
    rig = Rig(slack, allow={"test": ["notify"]})
    await rig.handle(restart())
    assert rig.adapter.calls == []
    assert "not enabled on cluster test" in rig.of(ActionFailed)[0].payload.error


async def test_action_in_doubt_is_reported_not_repeated(slack: SlackStub) -> None:
    rig = Rig(slack)
    trigger = restart()
    spec = handler_for(trigger)
    assert spec is not None
    await rig.dispatcher._record(  # what a worker killed mid-action leaves behind
        spec,
        trigger,
        rig.dispatcher._context(trigger),
        "started",
        0,
    )
    await rig.handle(trigger)
    assert rig.adapter.calls == []
    assert "in doubt" in rig.of(ActionFailed)[0].payload.error
    assert rig.ledger.get(trigger.event_id).outcome == "failed"  # type: ignore[union-attr]


async def test_benchmark_per_node_results_and_slack_table(slack: SlackStub) -> None:
    rig = Rig(slack)
    rig.adapter.run_stdout = (
        '{"kind": "centrality-benchmark", "node": "n1", "verdict": "pass", "gpus": '
        '[{"gpu": 0, "matmul_tflops": 712.5, "memory_bandwidth_gbps": 3900.0}]}\n'
    )
    await rig.handle(benchmark(("n1", "n2")))
    [(nodes, command)] = rig.adapter.runs
    assert nodes == ("n1", "n2") and command[-2:] == ("--suites", "gpu,nccl")
    results = {e.subject: e.payload for e in rig.of(BenchmarkCompleted)}
    assert results["n1"].verdict == "pass" and results["n2"].verdict == "error"
    assert results["n1"].trigger_id == benchmark(("n1", "n2")).event_id
    table = json_text(slack.posts[-1])
    assert "712.5" in table and "n2" in table and "TFLOP/s" in table


def json_text(post: dict[str, Any]) -> str:
    return json.dumps(post.get("blocks", []))


async def test_real_runner_on_each_node_reaches_slack(slack: SlackStub) -> None:
    rig = Rig(slack, benchmark_command=[sys.executable, "-m", "actions.benchmark.runner"])
    rig.adapter.execute_runs = True
    await rig.handle(benchmark(("gpu-a", "gpu-b")))
    results = {e.subject: e.payload.verdict for e in rig.of(BenchmarkCompleted)}
    assert results == {"gpu-a": "no-gpu", "gpu-b": "no-gpu"}  # this machine has no GPU
    table = json_text(slack.posts[-1])
    assert "gpu-a" in table and "gpu-b" in table and "no-gpu" in table
