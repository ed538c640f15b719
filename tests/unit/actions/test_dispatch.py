"""The worker's policy without Kafka: once per trigger, breakers, dry-run, retries, allowlist."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from actions.adapters.memory import InMemoryAdapter
from actions.dispatch import Dispatcher
from actions.errors import PermanentError, TemporaryError
from actions.ledger import Ledger
from actions.registry import handler_for
from actions.settings import ActionsSettings
from centrality.slack_fake import SlackFake
from schemas.envelope import Event
from schemas.events import (
    ActionFailed,
    ActionStarted,
    ActionSucceeded,
    BenchmarkCompleted,
    FleetBaseline,
    Trigger,
)
from schemas.events.incidents import node_thread
from tests.support.slack import notifier_for
from tests.support.triggers import benchmark, notify, quarantine, release, restart


class Rig:
    def __init__(self, slack: SlackFake, **settings: Any) -> None:
        self.adapter = InMemoryAdapter()
        self.ledger = Ledger()
        self.events: list[Event] = []
        self.settings = ActionsSettings(backoff_scale=0.001, fleet_size={"test": 10}, **settings)
        notifier = notifier_for(slack)
        self.dispatcher = Dispatcher(self.settings, self.adapter, notifier, self.ledger, self._emit)

    async def _emit(self, event: Event) -> None:
        self.events.append(event)

    async def handle(self, trigger: Trigger) -> None:
        """Handle, then wait for the notifications it queued (they are posted in the background)."""
        await self.dispatcher.handle(trigger)
        await asyncio.wait_for(self.dispatcher.notifier.join(), 30)

    def of(self, cls: type[Event]) -> list[Any]:
        return [e for e in self.events if isinstance(e, cls)]


async def test_redelivered_trigger_acts_once(slack: SlackFake) -> None:
    rig = Rig(slack)
    for _ in range(3):
        await rig.handle(restart())
    assert rig.adapter.requeued == [("slurm/test/42", "s3://ckpt/step-1200")]
    assert len(rig.of(ActionStarted)) == len(rig.of(ActionSucceeded)) == 1
    assert rig.ledger.get(restart().event_id).outcome == "succeeded"  # type: ignore[union-attr]


async def test_quarantine_drains_and_taints(slack: SlackFake) -> None:
    rig = Rig(slack)
    await rig.handle(quarantine(("n1",)))
    assert rig.adapter.drained == {"n1": "centrality: 5 failures on the same nodes"}
    assert rig.adapter.taints == {"n1": {"centrality.io/quarantined"}}
    [done] = rig.of(ActionSucceeded)
    assert done.payload.detail["drain"]["drained"] == ["n1"]
    # A rule's step of a node's story is told through the node's incident, not on its own.
    assert slack.posts == [] and done.payload.detail["notified"] == {"told": "incident"}
    assert done.payload.nodes == ("n1",)  # so the streams can tell each node what happened


async def test_an_operators_quarantine_is_told_on_its_own(slack: SlackFake) -> None:
    rig = Rig(slack)
    await rig.handle(operators(quarantine(("n1",))))
    [post] = slack.posts
    assert post["text"].startswith("Drained n1: ")


async def test_breaker_trips_notifies_and_does_not_act(slack: SlackFake) -> None:
    rig = Rig(slack, quarantine_max_share=0.2)  # 2 of 10 nodes
    await rig.handle(quarantine(("n1", "n2"), window="a"))
    await rig.handle(quarantine(("n3",), window="b"))
    assert set(rig.adapter.drained) == {"n1", "n2"}
    [failed] = rig.of(ActionFailed)
    assert failed.payload.error.startswith("circuit breaker: quarantining 3 of 10 nodes")
    assert failed.payload.permanent and failed.payload.refused
    assert failed.payload.nodes == ("n3",)
    assert slack.posts == []  # the refusal is the incident's, told once there
    assert rig.ledger.get(quarantine(("n3",), window="b").event_id).outcome == "skipped"  # type: ignore[union-attr]


async def test_dry_run_changes_nothing_and_records_the_plan(slack: SlackFake) -> None:
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


async def test_a_shadow_rules_decision_is_planned_never_carried_out(slack: SlackFake) -> None:
    rig = Rig(slack, notify_on_success=frozenset({"quarantine_nodes"}))  # a live worker
    drain, message = quarantine(("n1",)).as_shadow(), notify("i", "w").as_shadow()
    for trigger in (drain, drain, message):  # redelivered too
        await rig.handle(trigger)
    assert rig.adapter.calls == [] and slack.posts == []
    planned = rig.of(ActionSucceeded)
    assert [(d.payload.shadow, d.payload.dry_run) for d in planned] == [(True, True)] * 2
    assert [c["call"] for c in planned[0].payload.detail["planned"]] == ["drain", "taint"]
    assert planned[1].payload.detail["planned"][0]["call"] == "notify"
    assert rig.ledger.get(drain.event_id).outcome == "dry_run"  # type: ignore[union-attr]
    # The live decision it shadows has an id of its own and is carried out.
    await rig.handle(quarantine(("n1",)))
    assert set(rig.adapter.drained) == {"n1"} and not rig.of(ActionSucceeded)[-1].payload.shadow


async def test_failing_adapter_retries_then_fails_and_notifies(slack: SlackFake) -> None:
    rig = Rig(slack)
    rig.adapter.fail("requeue", *(TemporaryError("slurmctld busy") for _ in range(4)))
    await rig.handle(restart())
    assert rig.adapter.calls == ["requeue"] * 4  # 1 + 3 retries
    assert [s.payload.attempt for s in rig.of(ActionStarted)] == [1, 2, 3, 4]
    [failed] = rig.of(ActionFailed)
    assert (failed.payload.attempt, failed.payload.permanent) == (4, False)
    assert "slurmctld busy" in failed.payload.error
    [post] = slack.posts
    assert post["text"].startswith("slurm/test/42 not requeued")
    assert "it failed — TemporaryError: slurmctld busy" in json_text(post)
    assert not failed.payload.refused
    await rig.handle(restart())  # redelivered after failing: still nothing more
    assert len(rig.adapter.calls) == 4


async def test_permanent_error_is_not_retried(slack: SlackFake) -> None:
    rig = Rig(slack)
    rig.adapter.fail("requeue", PermanentError("job is gone"))
    await rig.handle(restart())
    assert rig.adapter.calls == ["requeue"]
    assert rig.of(ActionFailed)[0].payload.permanent


async def test_temporary_error_then_success(slack: SlackFake) -> None:
    rig = Rig(slack)
    rig.adapter.fail("requeue", TemporaryError("blip"))
    await rig.handle(restart())
    [done] = rig.of(ActionSucceeded)
    assert done.payload.attempt == 2 and len(rig.adapter.requeued) == 1


async def test_allowlist_refuses_without_acting(slack: SlackFake) -> None:
    rig = Rig(slack, allow={"test": ["notify"]})
    await rig.handle(restart())
    assert rig.adapter.calls == []
    assert "not enabled on cluster test" in rig.of(ActionFailed)[0].payload.error


async def test_action_in_doubt_is_reported_not_repeated(slack: SlackFake) -> None:
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


async def drained(rig: Rig, *nodes: str) -> None:
    """Benchmarks run only on drained nodes: drain them first, as the quarantine story does."""
    await rig.handle(quarantine(nodes, window="drain-first"))
    assert set(nodes) <= set(rig.adapter.drained)


async def test_a_benchmark_never_runs_on_a_node_still_in_service(slack: SlackFake) -> None:
    rig = Rig(slack, quarantine_max_share=0.5)
    await drained(rig, "n1")
    await rig.handle(benchmark(("n1", "n2")))
    assert "run_on_nodes" not in rig.adapter.calls
    [refused] = rig.of(ActionFailed)
    assert refused.payload.refused and refused.payload.error == (
        "circuit breaker: n2 not drained: a benchmark runs only on drained nodes"
    )
    assert slack.posts == []
    # Released nodes are in service again: no benchmark there either.
    await rig.handle(release(("n1",)))
    await rig.handle(benchmark(("n1",), window="w2"))
    assert "run_on_nodes" not in rig.adapter.calls


async def test_benchmark_per_node_results_and_slack_table(slack: SlackFake) -> None:
    rig = Rig(slack, quarantine_max_share=0.5)
    await drained(rig, "n1", "n2")
    rig.adapter.run_stdout = (
        '{"kind": "centrality-benchmark", "node": "n1", "verdict": "pass", "gpus": '
        '[{"gpu": 0, "model": "NVIDIA H200", "matmul_tflops": 712.5, '
        '"memory_bandwidth_gbps": 3900.0}]}\n'
    )
    await rig.handle(operators(benchmark(("n1", "n2"))))
    [(nodes, command)] = rig.adapter.runs
    assert nodes == ("n1", "n2") and command[-2:] == ("--suites", "gpu,nccl")
    results = {e.subject: e.payload for e in rig.of(BenchmarkCompleted)}
    assert results["n1"].verdict == "pass" and results["n2"].verdict == "error"
    assert results["n1"].trigger_id == operators(benchmark(("n1", "n2"))).event_id
    # A pass carries its model's fleet baseline: this worker was given no history to read it.
    assert results["n1"].fleet == FleetBaseline(
        model="NVIDIA H200", window_s=7 * 86400, unavailable="the worker reads no history"
    )
    assert results["n2"].fleet is None
    table = json_text(slack.posts[-1])
    assert "712.5" in table and "n2" in table and "TFLOP/s" in table


def operators(trigger: Trigger, operator: str = "alice") -> Trigger:
    """`trigger` as an operator's command (people's: told on its own)."""
    payload = trigger.payload.model_copy(update={"operator": operator})
    return trigger.model_copy(update={"payload": payload})


def json_text(post: dict[str, Any]) -> str:
    return json.dumps(post.get("blocks", []), ensure_ascii=False)


async def test_memory_adapter_benchmark_is_a_report_the_runner_parser_accepts(
    slack: SlackFake,
) -> None:
    rig = Rig(slack, quarantine_max_share=0.5)
    await drained(rig, "n1", "n2")
    rig.adapter.unhealthy = {"n2": "gpu 3: matmul TFLOP/s 180.0 < 600"}
    await rig.handle(benchmark(("n1", "n2")))
    results = {e.subject: e.payload for e in rig.of(BenchmarkCompleted)}
    assert {n: r.verdict for n, r in results.items()} == {"n1": "pass", "n2": "fail"}
    assert len(results["n1"].gpus) == 8 and results["n1"].gpus[0].matmul_tflops == 791.2
    assert results["n2"].reasons == ("gpu 3: matmul TFLOP/s 180.0 < 600",)
    [done] = [e for e in rig.of(ActionSucceeded) if e.payload.trigger_type == "RunBenchmark"]
    assert done.payload.detail["verdicts"] == {"n1": "pass", "n2": "fail"}


async def test_a_notice_says_its_text_and_claims_no_action(slack: SlackFake) -> None:
    rig = Rig(slack)
    told = notify("test/n1", "w").model_copy(
        update={
            "payload": notify("test/n1", "w").payload.model_copy(
                update={"title": "Node n1 not quarantined: drain was refused", "text": "It stays."}
            )
        }
    )
    await rig.handle(told)
    [post] = slack.posts
    assert post["text"].startswith("Node n1 not quarantined: drain was refused: ")
    blocks = json_text(post)
    assert "It stays." in blocks and "What was done" not in blocks


class PeerLedger(Ledger):
    """A ledger that, asked to catch up, reads what another worker recorded (as Kafka would)."""

    def __init__(self, peer: Ledger) -> None:
        super().__init__()
        self.peer = peer
        self.refreshed = 0

    async def refresh(self) -> None:
        self.refreshed += 1
        self._apply(self.peer.entries())


async def test_a_tripped_guard_reads_what_other_workers_did_before_refusing(
    slack: SlackFake,
) -> None:
    drainer = Rig(slack, quarantine_max_share=0.5)
    await drained(drainer, "n1")  # another worker drained n1: this one has not read it yet
    rig = Rig(slack)
    rig.ledger = PeerLedger(drainer.ledger)
    rig.dispatcher.ledger = rig.ledger
    await rig.handle(benchmark(("n1",)))
    assert rig.ledger.refreshed == 1 and rig.adapter.calls == ["run_on_nodes"]
    assert not rig.of(ActionFailed)


async def test_a_rules_notice_about_a_nodes_story_is_told_by_its_incident(slack: SlackFake) -> None:
    rig = Rig(slack)
    lost = notify(node_thread("test", "n1"), "silent-since-0")
    await rig.handle(lost)
    [done] = rig.of(ActionSucceeded)
    assert slack.posts == [] and done.payload.detail == {"told": "incident"}
