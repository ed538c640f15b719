"""The remediation ladder through the pure Brain: each rung moves on its own outcome.

drained → the fault class's first rung (reset, reboot, validate) → a validation after each
repair → release on a pass, the next rung on a failure, escalation to a person when none is
left. A reboot is done when the scheduler shows the node back, not when the command returned.
Results are built from the triggers the brain decided, as an action worker would report them.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from schemas.envelope import Event
from schemas.events import (
    EscalateNodes,
    GpuXidObserved,
    NodeFactsObserved,
    Notify,
    QuarantineNodes,
    RebootNodes,
    ReleaseNodes,
    ResetGpus,
    RestartJob,
    RunBenchmark,
    Trigger,
)
from streams.brain.process import Brain
from streams.brain.views import node_status
from streams.rules.ladder import LadderConfig
from streams.rules.registry import RuleConfigError, RuleEngine
from streams.settings import StreamsSettings
from streams.state.story import NodeStatus, Stage
from streams.testing import T0, benchmark, ended, envelope, result, running, scheduler_says, xid

BUDGET = "circuit breaker: n1 was rebooted 2 times within 86400s (limit 2)"
OURS = "centrality: reboot (rung 2)"


def brain(*ladders: dict[str, Any], **config: dict[str, Any]) -> Brain:
    rules = {"quarantine_story": {"ladders": list(ladders or [{}])}, **config}
    return Brain(RuleEngine.load(StreamsSettings().rule_modules, rules))


def feed(b: Brain, *events: Event) -> list[Trigger]:
    return [t for e in events for t in b.handle(e)]


def one(b: Brain, *events: Event) -> Trigger:
    [decided] = feed(b, *events)
    return decided


def drained(b: Brain, code: int = 48, node: str = "n1", gpu: int = 3) -> Trigger:
    """A fatal XID, its drain decided and done: the ladder's first step."""
    drain = one(b, xid(node, code, at_s=1, gpu=gpu))
    assert isinstance(drain, QuarantineNodes)
    return one(b, result(drain, at_s=2))


def back(b: Brain, reboot: Trigger, at_s: float) -> Trigger:
    """The reboot taken, the node down, then back drained (Slurm keeps a drained node drained
    through a plain `scontrol reboot`): the validation follows."""
    assert feed(b, result(reboot, at_s=at_s)) == []
    assert b.nodes["n1"].story.stage is Stage.REBOOTING  # type: ignore[union-attr]
    flags = "IDLE+DRAIN+REBOOT_REQUESTED"
    assert feed(b, scheduler_says("n1", "DRAINED", at_s + 1, OURS, flags)) == []
    assert feed(b, scheduler_says("n1", "DOWN", at_s + 2, OURS, "DOWN+DRAIN+REBOOT_ISSUED")) == []
    assert b.nodes["n1"].story.stage is Stage.REBOOTING  # type: ignore[union-attr]
    validation = one(b, scheduler_says("n1", "DRAINED", at_s + 3, OURS, "IDLE+DRAIN"))
    assert b.nodes["n1"].story.stage is Stage.BENCHMARKING  # type: ignore[union-attr]
    return validation


def test_a_reset_then_a_reboot_repair_the_node_and_it_is_released() -> None:
    b = brain()
    reset = drained(b, 48)  # Xid 48, double-bit ECC: NVIDIA says reset the GPU
    assert isinstance(reset, ResetGpus)
    assert reset.payload.gpus == (3,) and reset.payload.ladder == ("reboot",)
    assert b.nodes["n1"].story.stage is Stage.RESETTING  # type: ignore[union-attr]
    validate = one(b, result(reset, at_s=3))  # the reset done: validate
    assert isinstance(validate, RunBenchmark) and validate.payload.ladder == ("reboot",)
    reboot = one(b, benchmark(verdict="fail", at_s=4, trigger=validate))
    assert isinstance(reboot, RebootNodes) and reboot.payload.ladder == ()
    assert "benchmark fail" in reboot.payload.reason
    validate_again = back(b, reboot, at_s=5)
    assert isinstance(validate_again, RunBenchmark) and validate_again.payload.ladder == ()
    release = one(b, benchmark(verdict="pass", at_s=10, trigger=validate_again))
    assert isinstance(release, ReleaseNodes)
    view = node_status(b.nodes["n1"])
    assert view.state == "releasing"
    assert view.ladder == ("reset: done", "validate: fail: slow", "reboot: back", "validate: pass")
    assert feed(b, result(release, at_s=11)) == []
    assert b.nodes["n1"].status is NodeStatus.IN_SERVICE


def test_the_views_tell_the_rung() -> None:
    b = brain()
    reboot = drained(b, 79)  # off the bus: reboot first
    assert isinstance(reboot, RebootNodes)
    view = node_status(b.nodes["n1"])
    assert (view.state, view.rung, view.pending) == ("rebooting", "reboot", "reboot requested")
    feed(b, result(reboot, at_s=3))
    view = node_status(b.nodes["n1"])
    assert view.pending == "the node back from its reboot" and view.rungs_left == ()
    assert view.ladder == ("reboot: under way",)


def test_an_exhausted_ladder_escalates_and_the_node_stays_drained() -> None:
    b = brain()
    serials = ("1653724025363", "1653724025364")
    feed(b, NodeFactsObserved(**envelope("n1", 0), payload={"gpu_serials": serials}))
    reboot = drained(b, 79)
    validate = back(b, reboot, at_s=3)
    escalate = one(b, benchmark(verdict="fail", at_s=9, trigger=validate))
    assert isinstance(escalate, EscalateNodes)
    p = escalate.payload
    assert p.xids == (79,) and p.nodes == ("n1",) and p.serials == serials
    assert p.tried[0] == "reboot: back" and p.tried[1].startswith("validate: fail")
    assert p.benchmarks and "slow" in p.benchmarks[0]
    assert "ladder exhausted" in p.reason and "Xid 79" in p.reason
    assert feed(b, result(escalate, at_s=10)) == []
    n = b.nodes["n1"]
    assert n.quarantined and n.story and n.story.stage is Stage.ESCALATED
    assert node_status(n).state == "escalated"
    # A failing benchmark after that changes nothing; a passing one (after the repair) releases.
    assert feed(b, benchmark(verdict="fail", at_s=20)) == []
    assert b.nodes["n1"].story.stage is Stage.ESCALATED  # type: ignore[union-attr]
    assert isinstance(one(b, benchmark(verdict="pass", at_s=30)), ReleaseNodes)


def test_a_reboot_refused_by_its_budget_escalates_instead() -> None:
    b = brain()
    reboot = drained(b, 79)
    escalate = one(b, result(reboot, at_s=3, error=BUDGET, refused=True))
    assert isinstance(escalate, EscalateNodes)
    assert escalate.payload.tried == (f"reboot: refused: {BUDGET}",)
    assert "reboot was refused" in escalate.payload.reason
    assert b.nodes["n1"].quarantined


def test_a_node_not_back_in_time_climbs_on() -> None:
    b = brain(remediation_ladder={"reboot_timeout_s": 600})
    reboot = drained(b, 79)
    feed(b, result(reboot, at_s=3))
    assert b.tick(T0 + timedelta(seconds=300)) == []  # not yet
    [escalate] = b.tick(T0 + timedelta(seconds=700))
    assert isinstance(escalate, EscalateNodes)
    assert escalate.payload.tried == ("reboot: not back from its reboot within 600 s",)
    assert b.tick(T0 + timedelta(seconds=900)) == []  # decided once


def test_a_node_back_before_the_reboots_result_is_validated_once() -> None:
    b = brain()
    reboot = drained(b, 79)
    assert feed(b, scheduler_says("n1", "DOWN", 3, OURS, "DOWN+DRAIN+REBOOT_ISSUED")) == []
    validate = one(b, scheduler_says("n1", "DRAINED", 4, OURS, "IDLE+DRAIN"))
    assert isinstance(validate, RunBenchmark)
    assert feed(b, result(reboot, at_s=5)) == []  # the result after: already back


def test_a_held_rung_waits_for_people() -> None:
    b = brain()
    reset = drained(b, 48)
    [told] = feed(
        b, result(reset, at_s=3, error="silenced: maintenance", held_by="s-1", refused=True)
    )
    assert isinstance(told, Notify)
    assert told.payload.title == "Node n1 stays drained: GPU reset was held (s-1)"
    assert b.nodes["n1"].story.stage is Stage.RUNG_FAILED  # type: ignore[union-attr]


def test_a_fault_for_hardware_service_escalates_at_once() -> None:
    b = brain()
    escalate = drained(b, 54)  # auxiliary power not connected: hands-on
    assert isinstance(escalate, EscalateNodes) and escalate.payload.tried == ()


def test_a_failed_benchmark_without_an_xid_reboots_once_then_escalates() -> None:
    b = brain()
    events: list[Event] = []
    for i in range(5):
        events += [running(f"j{i}", at_s=i * 60), ended(f"j{i}", at_s=i * 60 + 30)]
    [drain] = [t for t in feed(b, *events) if isinstance(t, QuarantineNodes)]
    assert drain.payload.jobs == ("j0", "j1", "j2", "j3", "j4")
    first = {t.subject: t for t in feed(b, result(drain, at_s=400))}
    validate = first["n1"]
    assert isinstance(validate, RunBenchmark) and validate.payload.ladder == ("reboot",)
    reboot = one(b, benchmark("n1", verdict="fail", at_s=401, trigger=validate))
    assert isinstance(reboot, RebootNodes)
    validate_again = back_at(b, reboot, 402)
    assert isinstance(one(b, benchmark("n1", "fail", 500, validate_again)), EscalateNodes)


def back_at(b: Brain, reboot: Trigger, at_s: float) -> Trigger:
    feed(b, result(reboot, at_s=at_s), scheduler_says("n1", "DOWN", at_s + 1, OURS))
    return one(b, scheduler_says("n1", "DRAINED", at_s + 2, OURS, "IDLE+DRAIN"))


def test_nodes_outside_every_ladder_keep_the_plain_story() -> None:
    b = brain({"nodes": "gpu-[01-04]"})
    bench = drained(b, 48)  # n1 is no gpu-0N: benchmark, then people
    assert isinstance(bench, RunBenchmark) and bench.payload.ladder is None
    [kept] = feed(b, benchmark(verdict="fail", at_s=3, trigger=bench))
    assert isinstance(kept, Notify) and "stays quarantined" in kept.payload.title
    assert isinstance(drained(b, 48, node="gpu-02"), ResetGpus)


def test_the_ladder_is_data() -> None:
    custom = LadderConfig(nodes="gpu-*", rungs={"REBOOT_NODE": ("reboot", "reboot")})
    assert custom.rungs["REBOOT_NODE"] == ("reboot", "reboot")
    assert custom.rungs["RESET_GPU"] == ("reset", "reboot")  # left out: the default
    b = brain({"rungs": {"RESET_GPU": ("reboot",)}})
    assert isinstance(drained(b, 95), RebootNodes)  # uncontained ECC, rebooted here
    with pytest.raises(ValidationError):
        LadderConfig(rungs={"MELTED": ("reboot",)})  # type: ignore[dict-item]
    with pytest.raises(ValidationError):
        LadderConfig(nodes="gpu-[01")
    with pytest.raises(RuleConfigError):
        brain({"rungs": {"REBOOT_NODE": ("pray",)}})


def test_a_restart_avoids_the_nodes_its_failure_implicated() -> None:
    b = brain()
    job = "slurm/test/7"
    feed(b, running(job, at_s=0, nodes=("n1", "n2")))
    drain = one(b, xid("n1", 79, at_s=10))
    assert isinstance(drain, QuarantineNodes) and drain.payload.jobs == (job,)
    feed(b, result(drain, at_s=11))  # the quarantine's result tells the job
    assert [i.node for i in b.jobs[job].implicated] == ["n1"]
    [restart] = feed(b, ended(job, at_s=12, nodes=("n1", "n2")))
    assert isinstance(restart, RestartJob)
    assert restart.payload.exclude_nodes == ("n1",) and "avoiding n1" in restart.payload.reason


def test_an_implication_that_comes_after_the_restart_changes_nothing() -> None:
    b = brain()
    job = "slurm/test/8"
    feed(b, running(job, at_s=0, nodes=("n1", "n2")))
    [restart] = feed(b, ended(job, at_s=5, nodes=("n1", "n2")))
    assert isinstance(restart, RestartJob) and restart.payload.exclude_nodes == ()


def test_replay_climbs_the_same_ladder() -> None:
    live = brain()
    inputs: list[Event] = [xid("n1", 48, at_s=1, gpu=3)]
    drain = one(live, inputs[0])
    decided = [drain]
    for make in (
        lambda: result(drain, at_s=2),
        lambda: result(decided[-1], at_s=3),
        lambda: benchmark(verdict="fail", at_s=4, trigger=decided[-1]),
    ):
        inputs.append(make())
        decided.append(one(live, inputs[-1]))
    replay = brain()
    assert [t.event_id for t in feed(replay, *inputs)] == [t.event_id for t in decided]
    assert replay.nodes["n1"].model_dump() == live.nodes["n1"].model_dump()


def test_an_xid_154_climbs_the_ladder_its_message_names() -> None:
    b = brain()
    message = "GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)"
    drain = one(
        b, GpuXidObserved(**envelope("n1", 1), payload={"gpu": 0, "xid": 154, "message": message})
    )
    assert isinstance(one(b, result(drain, at_s=2)), RebootNodes)
