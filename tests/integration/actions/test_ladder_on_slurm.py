"""Issue 29 on a real slurmctld: the remediation ladder and restarts that avoid bad nodes.

The whole control loop runs in the test's process (`tests/support/control_loop.py`: the Slurm
watcher, the brain, the dispatcher with the Slurm adapter; Kafka aside). GPUs are what a node
without them can offer: a stand-in `nvidia-smi` on PATH (it records every call) and a benchmark
that passes unless the test marks the node unhealthy. Reboots are real `scontrol reboot`s whose
RebootProgram the test controls: a node is back when the test restarts its slurmd as after a
boot, and only then, as slurmctld sees it, is the reboot done.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from actions.adapters.settings import SlurmSettings
from actions.adapters.slurm import SlurmAdapter
from actions.errors import PermanentError
from centrality.webhook_stub import WebhookStub
from schemas.envelope import utcnow
from schemas.events import (
    ActionFailed,
    ActionSucceeded,
    GpuXidObserved,
    NodeStateObserved,
    RestartJob,
)
from streams.brain.views import node_status
from streams.state.story import Stage
from tests.support import fake_nvidia_smi
from tests.support.control_loop import ControlLoop
from tests.support.slurm import SlurmCluster

pytestmark = [pytest.mark.integration, pytest.mark.timeout(240)]
MARKS = ("centrality.io/quarantined", "centrality.io/hardware-service")


@dataclass
class Gpus:
    """What the nodes' GPUs say: the stand-in nvidia-smi's calls, the benchmark's verdicts."""

    smi: Path
    bench: Path

    def unhealthy(self, node: str, why: str) -> None:
        (self.bench / f"unhealthy-{node}").write_text(why)

    def heal(self, node: str) -> None:
        (self.bench / f"unhealthy-{node}").unlink(missing_ok=True)

    def resets(self, node: str) -> list[str]:
        calls = (
            (self.smi / "calls").read_text().splitlines() if (self.smi / "calls").exists() else []
        )
        return [c.split(" ", 1)[1] for c in calls if c.startswith(f"{node} -r")]


@pytest.fixture
def gpus(
    slurm_cluster: SlurmCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Gpus]:
    """The stand-ins, on the PATH and in the environment the node jobs inherit; every node
    resumed and unmarked after (the cluster is the session's)."""
    found = Gpus(tmp_path / "smi", tmp_path / "bench")
    found.bench.mkdir()
    monkeypatch.setenv("PATH", f"{fake_nvidia_smi.install(found.smi)}:{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_BENCHMARK_DIR", str(found.bench))
    yield found
    adapter = SlurmAdapter(SlurmSettings(cluster=slurm_cluster.name, conf=slurm_cluster.conf))
    for node in slurm_cluster.rebooting():
        slurm_cluster.boot(node)
    adapter.resume(slurm_cluster.node_names)
    for mark in MARKS:
        adapter.untaint(slurm_cluster.node_names, key=mark)


def xid(cluster: SlurmCluster, node: str, code: int, gpu: int = 0) -> GpuXidObserved:
    return GpuXidObserved(
        source=f"agent@{node}",
        cluster=cluster.name,
        subject=node,
        occurred_at=utcnow(),
        payload={"gpu": gpu, "xid": code},
    )


async def test_a_node_is_reset_rebooted_validated_and_released(
    slurm_cluster: SlurmCluster, gpus: Gpus, tmp_path: Path
) -> None:
    node = "node2"
    gpus.unhealthy(node, "GPU 1 at 180 TFLOP/s (< 600)")  # the reset will not clear it
    loop = ControlLoop(slurm_cluster, tmp_path, rules={"quarantine_story": {"ladders": [{}]}})
    loop.reboot = lambda n: gpus.heal(n) is None  # the reboot does
    reboots = slurm_cluster.reboots().count(node)

    def released() -> bool:
        return loop.types(node)[-1:] == ["ReleaseNodes"] and loop.brain.nodes[node].story is None

    await loop.run(released, timeout_s=180, start=[xid(slurm_cluster, node, 48, gpu=1)])

    assert loop.types(node) == [
        "QuarantineNodes", "ResetGpus", "RunBenchmark", "RebootNodes", "RunBenchmark",
        "ReleaseNodes",
    ]  # fmt: skip
    assert gpus.resets(node) == ["-r -i 1"]  # the GPU of the Xid, on that node
    assert slurm_cluster.reboots().count(node) == reboots + 1  # slurmd ran the RebootProgram
    # Done when the scheduler showed the node back, not when `scontrol reboot` returned: the
    # validation after it was decided on the watcher's report.
    reboot, validation = [t for t in loop.decided if t.type in ("RebootNodes", "RunBenchmark")][1:]
    [taken] = [e for e in loop.results(reboot) if isinstance(e, ActionSucceeded)]
    [back] = [e for e in loop.seen if e.event_id == validation.payload.caused_by[0]]
    assert isinstance(back, NodeStateObserved) and back.subject == node
    assert back.occurred_at > taken.occurred_at and "REBOOT" not in back.payload.raw_state
    assert back.payload.state.value == "DRAINED"  # drained through its reboot: no work yet
    # Released in Slurm: in service, unmarked.
    assert "DRAIN" not in slurm_cluster.node_field(node, "%T").upper()
    assert not set(MARKS) & set(slurm_cluster.node_field(node, "%f").split(","))


async def test_a_budget_stops_a_second_reboot_and_the_exhausted_ladder_escalates(
    slurm_cluster: SlurmCluster, gpus: Gpus, tmp_path: Path
) -> None:
    node = "node3"
    gpus.unhealthy(node, "GPU 0 at 180 TFLOP/s (< 600)")  # nothing clears it
    twice = {"nodes": node, "rungs": {"REBOOT_NODE": ["reboot", "reboot"]}}
    rules = {"quarantine_story": {"ladders": [twice]}}
    reboots = slurm_cluster.reboots().count(node)
    with WebhookStub() as tickets:
        loop = ControlLoop(
            slurm_cluster, tmp_path, rules=rules, actions={"reboot_max_per_window": 1},
            webhook=tickets.url,
        )  # fmt: skip

        def escalated() -> bool:
            story = loop.brain.nodes[node].story if node in loop.brain.nodes else None
            return story is not None and story.stage is Stage.ESCALATED

        await loop.run(escalated, timeout_s=180, start=[xid(slurm_cluster, node, 79)])

    assert loop.types(node) == [
        "QuarantineNodes", "RebootNodes", "RunBenchmark", "RebootNodes", "EscalateNodes"
    ]  # fmt: skip
    second = [t for t in loop.decided if t.type == "RebootNodes"][1]
    [refused] = loop.results(second)
    assert isinstance(refused, ActionFailed) and refused.payload.refused
    assert refused.payload.error == (
        f"circuit breaker: {node} was rebooted 1 times within 86400s (limit 1)"
    )
    assert slurm_cluster.reboots().count(node) == reboots + 1  # the second never reached Slurm
    # Escalated: still drained, marked for hardware service, a ticket with the story.
    assert "DRAIN" in slurm_cluster.node_field(node, "%T").upper()
    assert slurm_cluster.node_field(node, "%E").startswith("centrality: hardware service:")
    assert "centrality.io/hardware-service" in slurm_cluster.node_field(node, "%f")
    [ticket] = tickets.documents
    assert ticket["nodes"] == [node] and ticket["xids"] == [79]
    assert ticket["tried"][0] == "reboot: back"
    assert ticket["tried"][1].startswith("validate: fail (180 TFLOP/s slowest GPU")
    assert ticket["tried"][2].startswith("reboot: refused: circuit breaker")
    assert [g["serial"] for g in ticket["serials"][node]] == ["1653724025363", "1653724025364"]
    view = node_status(loop.brain.nodes[node])
    assert (view.state, view.rung) == ("escalated", "escalate")


async def test_a_restart_avoids_the_node_its_failure_implicated(
    slurm_cluster: SlurmCluster, gpus: Gpus, tmp_path: Path
) -> None:
    mark = tmp_path / "ran-once"
    script = tmp_path / "train.sh"
    script.write_text(
        f'#!/bin/sh\necho "on $SLURMD_NODENAME"\nif [ -e {mark} ]; then echo "Training Complete"; '
        f"exit 0; fi\ntouch {mark}\nsleep 6\nexit 3\n"
    )
    out = slurm_cluster.output_dir / "avoid-%j.out"
    job = slurm_cluster.sbatch(
        "--requeue", "-N1", "--open-mode=append", f"--output={out}", str(script)
    )
    slurm_cluster.wait_job(job, {"RUNNING"})
    bad = slurm_cluster.job_field(job, "NodeList")
    loop = ControlLoop(slurm_cluster, tmp_path, rules={})
    await loop.run(lambda: bool(loop.brain.jobs), timeout_s=30)  # the watcher saw it run
    jid = f"slurm/{slurm_cluster.name}/{job}"

    def restarted() -> bool:
        decided = any(isinstance(t, RestartJob) for t in loop.decided)
        return decided and slurm_cluster.job_state(job) == "COMPLETED"

    await loop.run(restarted, timeout_s=120, start=[xid(slurm_cluster, bad, 79)])

    [restart] = [t for t in loop.decided if isinstance(t, RestartJob)]
    assert restart.subject == jid and restart.payload.exclude_nodes == (bad,)
    assert f"avoiding {bad}" in restart.payload.reason
    [requeued] = [e for e in loop.results(restart) if isinstance(e, ActionSucceeded)]
    assert requeued.payload.detail["excluded"] == [bad]
    assert slurm_cluster.job_field(job, "ExcNodeList") == bad
    assert slurm_cluster.job_field(job, "NodeList") != bad  # its second attempt ran elsewhere
    assert slurm_cluster.job_field(job, "Restarts") == "1"


def test_a_job_its_exclusions_would_starve_is_not_requeued(slurm_cluster: SlurmCluster) -> None:
    adapter = SlurmAdapter(SlurmSettings(cluster=slurm_cluster.name, conf=slurm_cluster.conf))
    job = slurm_cluster.sbatch("-N3", "--requeue", "--wrap", "exit 3")
    assert slurm_cluster.wait_job(job, {"FAILED", "COMPLETED"}) == "FAILED"
    with pytest.raises(PermanentError) as refused:
        adapter.requeue(f"slurm/{slurm_cluster.name}/{job}", checkpoint_uri=None, exclude=["node2"])
    assert str(refused.value) == (
        f"job {job} needs 3 node(s); partition debug has 2 usable once node2 are excluded: "
        "not requeued"
    )
    assert (
        slurm_cluster.job_state(job) == "FAILED" and slurm_cluster.job_field(job, "Restarts") == "0"
    )
