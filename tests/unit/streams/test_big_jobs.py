"""Rules that hold for big jobs: a 2,000-node job failing five times decides valid triggers,
drains only the nodes its failures' own evidence names, and decides the same in replay."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from structlog.testing import capture_logs

from schemas.envelope import Event
from schemas.events import JobExited, Notify, QuarantineBatch, QuarantineNodes, Trigger
from schemas.limits import TEXT, listed
from schemas.registry import event_types
from streams.analysis.replay.rerun import rerun
from streams.brain.views import node_status
from streams.rules.registry import rule
from streams.state.story import NodeStatus
from streams.testing import JOB, Story, ended, health, log_signal, result, xid

BIG = tuple(f"gpu-{i:04d}.cluster.example.org" for i in range(2000))
FAULTY, SICK, PEER = BIG[7], BIG[987], BIG[512]  # an XID, a failed health check, a bad link
SUSPECTS = {
    FAULTY: "XID 13",
    SICK: "failed health check gpu",
    PEER: f"named as the failing end by 1 error line(s) on {BIG[3]}",
}
# NCCL's line (NVIDIA/nccl#1710, tests/fixtures/realworld/logs) as BIG[3]'s rank logs it about
# its short-named peer; the tailer reads `peer` from it (tests/unit/collectors/test_log_corpus).
PEER_LINE = (
    "gpu-0003:10214:10303 [0] transport/net_ib.cc:1909 NCCL WARN NET/IB : Got completion from "
    "peer gpu-0512<33057> with status=9 opcode=0 len=0 vendor err 138 (Send)"
)


def failing_five_times(nodes: tuple[str, ...] = BIG) -> list[Event]:
    """The job on `nodes` (the SUSPECTS among them) fails five times, 600 s apart; during the
    second attempt FAULTY reports an XID, SICK fails a GPU health check and a rank on BIG[3]
    logs NCCL's error naming PEER: the only evidence against any of its nodes."""
    events: list[Event] = []
    for attempt in range(1, 6):
        at = attempt * 600.0
        if attempt == 2:
            events.append(xid(FAULTY, code=13, at_s=at + 60))
            events.append(health(SICK, "gpu", "CRITICAL", at_s=at + 70, message="ECC"))
            events.append(
                log_signal(
                    signal="NCCL_ERROR", at_s=at + 80, line=PEER_LINE, node=BIG[3], peer="gpu-0512"
                )
            )
        events.append(ended(attempt=attempt, at_s=at + 300, nodes=nodes))
    return events


def _valid(trigger: Trigger) -> None:
    """Every decision passes the contract as the codec reads it."""
    event_types()[trigger.type].model_validate_json(trigger.model_dump_json())


def test_a_list_names_what_fits_and_counts_the_rest() -> None:
    assert listed(["a", "b"]) == "a, b"
    text = listed(BIG, 200)
    assert len(text) <= 200 and text.endswith(" more") and BIG[0] in text
    assert int(text.split("and ")[-1].split()[0]) == 2000 - text.count(".org")


@pytest.fixture(scope="module")
def live() -> tuple[Story, list[Trigger]]:
    story = Story()
    return story, story.tell(*failing_five_times())


def test_a_big_job_failing_five_times_drains_only_its_suspects(
    live: tuple[Story, list[Trigger]],
) -> None:
    story, decided = live
    for trigger in decided:
        _valid(trigger)
    quarantines = [t for t in decided if isinstance(t, QuarantineNodes)]
    # One trigger per suspect: each is drained and benchmarked on its own, the rest stay in.
    assert sorted(n for q in quarantines for n in q.payload.nodes) == sorted(SUSPECTS)
    for q in quarantines:
        (node,) = q.payload.nodes
        assert SUSPECTS[node] in q.payload.reason and "5 failed attempts" in q.payload.reason
        # One batch: the action workers drain them four at a time, each keyed by its node.
        assert q.payload.batch == QuarantineBatch(name=f"suspects of {JOB}", most_out=4)
        assert q.subject == node
    (told,) = [t for t in decided if isinstance(t, Notify)]
    assert "only suspects are drained" in told.payload.title
    assert "4 at a time" in told.payload.text
    assert len(told.payload.reason) <= TEXT and "more" in told.payload.reason
    out = {n for n, node in story.nodes.items() if node.status is not NodeStatus.IN_SERVICE}
    assert out == set(SUSPECTS)
    # The story goes on as any quarantine's: drained → benchmarked.
    drained = story.tell(*(result(q, at_s=3400) for q in quarantines))
    assert sorted(t.type for t in drained) == ["RunBenchmark"] * len(SUSPECTS)


def test_replay_decides_the_same_suspects(live: tuple[Story, list[Trigger]]) -> None:
    again = rerun(failing_five_times(), Story().brain, 5.0)
    assert [t.event_id for t in again] == [t.event_id for t in live[1]]


def test_no_evidence_drains_nothing_and_says_so() -> None:
    events = [ended(attempt=a, at_s=a * 600.0, nodes=BIG[:100]) for a in range(1, 6)]
    decided = [t for t in Story().tell(*events) if t.type != "RestartJob"]
    assert [t.type for t in decided] == ["Notify"]
    assert "No such evidence anywhere: nothing is drained" in decided[0].payload.text


def test_a_small_job_still_drains_its_node_set() -> None:
    nodes = ("n1", "n2", "n3")
    events = [ended(attempt=a, at_s=a * 60.0, nodes=nodes) for a in range(1, 6)]
    decided = Story().tell(*events)
    (q,) = [t for t in decided if isinstance(t, QuarantineNodes)]
    assert q.payload.nodes == nodes


@rule("test_big_jobs_invalid", on=(JobExited,))
def _invalid(job: object, event: JobExited, config: object) -> Iterator[Trigger]:
    yield Notify.decide(
        cause=event, source="test", rule="x", window="w", reason="r" * (TEXT + 1), title="t"
    )


def test_an_invalid_decision_is_told_and_the_fold_goes_on() -> None:
    story = Story(rules=[__name__], config={"repeated_failures_on_node_set": {"threshold": 1}})
    with capture_logs() as logs:
        decided = story.tell(ended(nodes=("n1", "n2")))
    assert [e["rule"] for e in logs if e["event"] == "decision_invalid"] == [
        "test_big_jobs_invalid"
    ]
    assert {"QuarantineNodes", "Notify"} <= {t.type for t in decided}  # the other rules'
    assert story.jobs["slurm/test/42"].state == "FAILED"


def test_a_fatal_xid_on_a_suspect_waiting_its_turn_asks_for_its_drain_at_once() -> None:
    story = Story()
    (waiting,) = [
        t for t in story.tell(*failing_five_times(BIG[:20])) if t.type == "QuarantineNodes"
    ]
    node = story.nodes[FAULTY]
    assert node.waiting_turn and node_status(node).pending == "drain: its turn in a batch"
    # More failures of the job: the suspect was asked for once, nothing new.
    again = ended(attempt=6, at_s=3350, nodes=BIG[:20])
    assert [t.type for t in story.tell(again) if t.type == "QuarantineNodes"] == []
    # A fatal XID does not wait for the batch: asked for at once, the story keeps both.
    (now,) = [t for t in story.tell(xid(FAULTY, code=79, at_s=3400)) if t.type == "QuarantineNodes"]
    assert now.payload.batch is None and now.payload.rule == "fatal_xid"
    node = story.nodes[FAULTY]
    assert not node.waiting_turn and node.story is not None
    assert set(node.story.triggers) == {waiting.event_id, now.event_id}
    assert node_status(node).pending == "drain requested"
    # Whichever drain is done first moves the story; the other's result changes nothing.
    assert [t.type for t in story.tell(result(waiting, at_s=3410))] == ["RunBenchmark"]
    assert story.tell(result(now, at_s=3420)) == []


def test_a_launchers_crashed_rank_names_its_host_as_a_suspect() -> None:
    # Open MPI's line of fedml-588 (tests/fixtures/realworld/logs), about this job's rank on a
    # node of its own, as the tailer reads it on the node running mpirun.
    line = (
        "mpirun noticed that process rank 336 with PID 636815 on node gpu-0042 exited on signal 11 "
        "(Segmentation fault)."
    )
    crash = log_signal(signal="NATIVE_CRASH", at_s=1290, line=line, node=BIG[0], peer="gpu-0042")
    events = [ended(attempt=a, at_s=a * 600.0, nodes=BIG[:50]) for a in range(1, 6)]
    decided = Story().tell(*events[:2], crash, *events[2:])
    (q,) = [t for t in decided if isinstance(t, QuarantineNodes)]
    assert q.payload.nodes == (BIG[42],)
    assert f"named as the failing end by 1 error line(s) on {BIG[0]}" in q.payload.reason
