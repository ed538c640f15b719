"""`make demo` is an end-to-end test: the story it narrates is what history holds."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from rich.console import Console

from centrality.demo import DemoResult, node, run_demo
from centrality.slack_fake import Message
from centrality.stack.stack import Stack
from schemas.envelope import Event
from schemas.events import Trigger
from streams.history.settings import ClickHouseSettings
from streams.history.timeline import timeline

pytestmark = pytest.mark.e2e


def chain(settings: ClickHouseSettings, kind: str, subject: str) -> list[Event]:
    now = datetime.now(UTC)
    return timeline(settings, kind, subject, now - timedelta(hours=3), now + timedelta(hours=1))  # type: ignore[arg-type]


QUARANTINE = ("QuarantineNodes", "RunBenchmark", "ReleaseNodes")


def types(events: list[Event], *only: str) -> list[str]:
    """The types of `only`, and action results named by the trigger they answer."""
    return [
        e.type if e.topic != "actions" else f"{e.type}:{e.payload.trigger_type}"  # type: ignore[attr-defined]
        for e in events
        if e.type in only or (e.topic == "actions" and e.type != "ActionStarted")
    ]


def quarantine_story(events: list[Event]) -> Counter[str]:
    """A node's story: the quarantine decisions, the verdict, the verdict's notice, and what
    action workers reported about them (its jobs' restarts are another story)."""
    return Counter(
        t
        for t in types(events, "BenchmarkCompleted", *QUARANTINE, "Notify")
        if t.split(":")[-1] in (*QUARANTINE, "BenchmarkCompleted")
    ) + Counter(
        "Notify"
        for e in events
        if e.type == "Notify" and e.payload.rule == "benchmark_verdict"  # type: ignore[attr-defined]
    )


def decided(story: list[Event]) -> list[str]:
    """The decisions about a node, in the order they were made."""
    return [e.type for e in story if isinstance(e, Trigger) and e.type != "Notify"]


def caused(story: list[Event]) -> None:
    """Each step was decided on the previous step's outcome, not beside the first decision."""
    [drained] = [
        e
        for e in story
        if e.type == "ActionSucceeded" and e.payload.action == "quarantine_nodes"  # type: ignore[attr-defined]
    ]
    [bench] = [e for e in story if e.type == "RunBenchmark"]
    assert bench.payload.caused_by == (drained.event_id,)  # type: ignore[attr-defined]


def thread_naming(result: DemoResult, name: str) -> list[Message]:
    """The one incident thread whose parent names the node `name`."""
    [found] = [
        t
        for _, t in result.threads
        if "centrality incident inc-" in str(t[0].blocks) and name in f"{t[0].text} {t[0].blocks}"
    ]
    return found


def test_the_demo_tells_the_whole_story(
    stack: Stack,
    worker_env: dict[str, str],
    clickhouse_settings: ClickHouseSettings,
    tmp_path: Path,
) -> None:
    console = Console(record=True, width=160)
    result = run_demo(console, stack=stack, env=worker_env, log_dir=tmp_path, timeout_s=240)
    jobs, nodes = result.story.jobs, result.story.nodes
    decisions = ("RestartJob", "QuarantineNodes", "RunBenchmark", "ReleaseNodes", "Notify")

    crash = chain(clickhouse_settings, "job", jobs["crash"])
    [restart] = [e for e in crash if e.type == "RestartJob"]
    assert restart.payload.checkpoint_uri.endswith("/step-1200")  # type: ignore[attr-defined]
    assert "ActionSucceeded:RestartJob" in types(crash)
    assert types(chain(clickhouse_settings, "job", jobs["done"]), *decisions) == []
    assert "RestartJob" in types(chain(clickhouse_settings, "job", jobs["preempt"]), *decisions)
    for preempted_on in (node(7), node(8)):
        assert "QuarantineNodes" not in types(chain(clickhouse_settings, "node", preempted_on))

    released = [
        "QuarantineNodes", "ActionSucceeded:QuarantineNodes", "RunBenchmark",
        "ActionSucceeded:RunBenchmark", "BenchmarkCompleted", "ReleaseNodes",
        "ActionSucceeded:ReleaseNodes",
    ]  # fmt: skip
    # A mixed fleet: each verdict is judged against the datasheet of the node's GPU model.
    for role, datasheet in (("xid", "A100 80GB SXM"), ("healthy", "H100 SXM")):
        story = chain(clickhouse_settings, "node", nodes[role])
        assert quarantine_story(story) == Counter(released), role
        caused(story)
        [release] = [e for e in story if e.type == "ReleaseNodes"]
        assert f"the {datasheet} datasheet" in release.payload.reason, role  # type: ignore[attr-defined]
    kept = chain(clickhouse_settings, "node", nodes["broken"])
    assert quarantine_story(kept) == Counter([*released[:5], "Notify"])
    assert "ReleaseNodes" not in types(kept)
    [verdict] = [e for e in kept if e.type == "BenchmarkCompleted"]
    # Its runner passed it at an A100's figures; the H100 datasheet is what keeps it.
    assert verdict.payload.verdict == "pass"  # type: ignore[attr-defined]
    assert {g.model for g in verdict.payload.gpus} == {"NVIDIA H100 80GB HBM3"}  # type: ignore[attr-defined]
    [notice] = [
        e
        for e in kept
        if e.type == "Notify" and e.payload.rule == "benchmark_verdict"  # type: ignore[attr-defined]
    ]
    assert notice.payload.reason.startswith("benchmark fail: gpu 0: matmul 249.6 TFLOP/s < 593")  # type: ignore[attr-defined]
    assert "of the H100 SXM datasheet's 989" in notice.payload.reason  # type: ignore[attr-defined]
    caused(kept)

    idle = chain(clickhouse_settings, "job", jobs["idle"])
    [flagged] = [e for e in idle if e.type == "Notify" and e.payload.rule == "idle_allocation"]  # type: ignore[attr-defined]
    assert flagged.payload.job_id == jobs["idle"] and flagged.payload.nodes == (nodes["idle"],)  # type: ignore[attr-defined]

    told = [p["text"] for p in result.slack]
    # Nodes' stories are told as incidents: one thread each, its parent updated in place.
    threads = {n: thread_naming(result, nodes[n]) for n in ("xid", "healthy", "broken")}
    said = {n: " ".join(f"{m.text} {m.blocks}" for m in t) for n, t in threads.items()}
    assert threads["xid"][0].text.startswith("Resolved: "), said["xid"]
    assert threads["xid"][0].edits >= 1
    assert threads["healthy"] is threads["broken"]  # one cause, one incident: their node set
    assert "back in service 1" in said["healthy"] and "quarantined 1" in said["healthy"]
    assert f"{nodes['broken']}: kept out: benchmark fail" in said["broken"]
    assert not threads["broken"][0].text.startswith("Resolved: ")  # one node is still out
    assert any("Idle GPU allocation" in t for t in told)

    # The remediation ladder, as `centrality history node` tells it: each rung decided on the
    # previous one's outcome, the reboot done when the scheduler showed the node back.
    ladder = chain(clickhouse_settings, "node", nodes["ladder"])
    assert decided(ladder) == [
        "QuarantineNodes", "ResetGpus", "RunBenchmark", "RebootNodes", "RunBenchmark",
        "ReleaseNodes",
    ]  # fmt: skip
    assert [e.payload.verdict for e in ladder if e.type == "BenchmarkCompleted"] == [  # type: ignore[attr-defined]
        "fail", "pass"
    ]  # fmt: skip
    [_, after_reboot] = [e for e in ladder if e.type == "RunBenchmark"]
    [back] = [e for e in ladder if e.event_id == after_reboot.payload.caused_by[0]]  # type: ignore[attr-defined]
    assert back.type == "NodeStateObserved" and back.payload.raw_state == "IDLE+DRAIN"  # type: ignore[attr-defined]
    assert {t.split(":")[1] for t in types(ladder) if t.startswith("ActionSucceeded")} >= {
        "QuarantineNodes", "ResetGpus", "RunBenchmark", "RebootNodes", "ReleaseNodes"
    }  # fmt: skip
    escalated = chain(clickhouse_settings, "node", nodes["escalated"])
    assert decided(escalated) == ["QuarantineNodes", "RebootNodes", "RunBenchmark", "EscalateNodes"]
    assert "ActionSucceeded:EscalateNodes" in types(escalated)
    [ticket] = result.tickets
    assert ticket["nodes"] == [nodes["escalated"]] and ticket["xids"] == [79]
    assert ticket["tried"][0] == "reboot: back" and ticket["tried"][1].startswith("validate: fail")
    assert len(ticket["serials"][nodes["escalated"]]) == 8
    assert any(f"{nodes['escalated']}: hardware service needed" in t for t in told)

    # The slow node: planned at the next checkpoint, out at it, the job moved off it.
    slow = chain(clickhouse_settings, "node", nodes["slow"])
    [plan] = [e for e in slow if e.type == "Notify" and e.payload.rule == "slow_node"]  # type: ignore[attr-defined]
    [out] = [e for e in slow if e.type == "QuarantineNodes"]
    assert plan.payload.timing.chosen == "at_checkpoint"  # type: ignore[attr-defined]
    assert out.payload.move_jobs and out.payload.timing == plan.payload.timing  # type: ignore[attr-defined]
    assert out.occurred_at > plan.occurred_at and "at checkpoint step 5000" in out.payload.reason  # type: ignore[attr-defined]
    moved = chain(clickhouse_settings, "job", jobs["slowed"])
    [again] = [e for e in moved if e.type == "RestartJob"]
    assert again.payload.exclude_nodes == (nodes["slow"],)  # type: ignore[attr-defined]
    # From the newest checkpoint when the drain was done: history the demo sent all at once.
    assert again.payload.checkpoint_uri.endswith("/65")  # type: ignore[attr-defined]

    shown = console.export_text()
    for heading in ("1. a crash", "2. a finished job", "3. preemption", "4. drain", "5. an idle",
                    "6. the remediation ladder", "the ticket", "What Slack was told",
                    "Timelines", "judged against the datasheet", "7. a slow node",
                    "GPU-h saved against taking it out at once"):  # fmt: skip
        assert heading in shown
    # What Slack was told: every message taken by the fake (its checks, its pace), in words.
    assert result.slack_refusals == []
    slack = shown[shown.index("What Slack was told") : shown.index("Timelines, read back")]
    assert not any(repr_ in slack for repr_ in ("{'", "('", "datetime(", "UUID("))
    assert f"{nodes['xid']}: runner pass → released" in shown
    assert f"{nodes['broken']}: runner pass → kept: benchmark fail: gpu 0: matmul" in shown
    assert json.dumps(jobs["crash"])[1:-1] in shown
    assert "The web console: `centrality console`, at http://127.0.0.1:" in shown
