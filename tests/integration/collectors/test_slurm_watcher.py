"""The Slurm watcher against a real local Slurm (slurmctld + 3 slurmd, fake GPUs)."""

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from collectors.sink import RecordingSink
from collectors.watchers.slurm.settings import SlurmWatchSettings
from collectors.watchers.slurm.watcher import SlurmWatcher
from schemas.envelope import Event
from schemas.events import JobExited, JobStateChanged, JobSubmitted
from schemas.events.jobs import JobState
from schemas.events.nodes import NodeFactsObserved, NodeStateObserved, SchedulerNodeState
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.state.node import Node
from tests.integration.streams.worker import StreamsWorker, table_contents
from tests.kafka_helpers import read_events
from tests.support.slurm import SlurmCluster

pytestmark = pytest.mark.integration


def watch_settings(cluster: SlurmCluster, tmp_path: Path) -> SlurmWatchSettings:
    return SlurmWatchSettings(
        cluster=cluster.name, conf=cluster.conf, poll_s=0.3, state_file=tmp_path / "ledger.json"
    )


def of_job(events: list[Event], cluster: SlurmCluster, job: str) -> list[Event]:
    return [e for e in events if e.subject == f"slurm/{cluster.name}/{job}"]


def summary(events: list[Event]) -> list[tuple[str, Any, int]]:
    return [
        (e.type, getattr(e.payload, "state", None), getattr(e.payload, "attempt", 1))
        for e in events
    ]


async def test_a_failing_job_becomes_the_right_events_within_seconds(
    slurm_cluster: SlurmCluster, kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    stop = asyncio.Event()
    async with Emitter(kafka_settings) as emitter:
        watcher = SlurmWatcher(watch_settings(slurm_cluster, tmp_path), emitter)
        task = asyncio.create_task(watcher.run(stop))
        out = slurm_cluster.output_dir
        job = slurm_cluster.sbatch(
            "-N", "2", "--gres=gpu:1", "-o", f"{out}/slurm-%j.out", "--wrap", "sleep 1; exit 3"
        )
        submitted = time.monotonic()
        exited: list[Event] = []
        while not exited and time.monotonic() - submitted < 30:
            await asyncio.sleep(0.5)
            events = of_job(await read_events(kafka_settings, "jobs"), slurm_cluster, job)
            exited = [e for e in events if isinstance(e, JobExited)]
        took_s = time.monotonic() - submitted
        stop.set()
        await task
    assert exited, "no JobExited within 30 s"
    assert took_s < 10
    assert isinstance(events[0], JobSubmitted) and events[0].payload.nodes_requested == 2
    assert events[-1] is exited[0] and len(exited) == 1
    [end] = exited
    assert isinstance(end, JobExited)
    assert (end.payload.state, end.payload.raw_state, end.payload.exit_code) == (
        JobState.FAILED,
        "FAILED",
        3,
    )
    assert len(end.payload.nodes) == 2 and set(end.payload.nodes) <= set(slurm_cluster.node_names)
    changes = [e for e in events if isinstance(e, JobStateChanged)]
    assert changes[-1].payload.state == JobState.FAILED
    assert changes[-1].payload.nodes == end.payload.nodes


async def test_no_duplicates_after_a_restart_and_stable_ids(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    job = slurm_cluster.sbatch("--wrap", "true")
    slurm_cluster.wait_job(job, {"COMPLETED"})
    first = RecordingSink()
    await SlurmWatcher(watch_settings(slurm_cluster, tmp_path), first).poll_once()
    mine = of_job(first.events, slurm_cluster, job)
    assert summary(mine) == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.SUCCEEDED, 1),
        ("JobExited", JobState.SUCCEEDED, 1),
    ]
    again = RecordingSink()
    await SlurmWatcher(watch_settings(slurm_cluster, tmp_path), again).poll_once()
    assert of_job(again.events, slurm_cluster, job) == []
    # A watcher that lost its ledger resends, with the same ids: downstream dedupes them.
    fresh = RecordingSink()
    await SlurmWatcher(watch_settings(slurm_cluster, tmp_path / "other"), fresh).poll_once()
    assert [e.event_id for e in of_job(fresh.events, slurm_cluster, job)] == [
        e.event_id for e in mine
    ]


async def test_requeue_counts_attempts_and_ends_each_once(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    sink = RecordingSink()
    watcher = SlurmWatcher(watch_settings(slurm_cluster, tmp_path), sink)
    job = slurm_cluster.sbatch("--requeue", "--wrap", "sleep 60")
    slurm_cluster.wait_job(job, {"RUNNING"})
    await watcher.poll_once()
    slurm_cluster.scontrol("requeue", job)
    slurm_cluster.wait_job(job, {"PENDING"})
    await watcher.poll_once()
    slurm_cluster.scontrol("update", f"jobid={job}", "StartTime=now")
    slurm_cluster.wait_job(job, {"RUNNING"})
    await watcher.poll_once()
    await asyncio.to_thread(subprocess.run, ["scancel", job], env=slurm_cluster.env(), check=True)
    slurm_cluster.wait_job(job, {"CANCELLED"})
    await watcher.poll_once()
    await watcher.poll_once()
    got = summary(of_job(sink.events, slurm_cluster, job))
    assert got == [
        ("JobSubmitted", None, 1),
        ("JobStateChanged", JobState.RUNNING, 1),
        ("JobExited", JobState.PREEMPTED, 1),
        ("JobStateChanged", JobState.PENDING, 2),
        ("JobStateChanged", JobState.RUNNING, 2),
        ("JobStateChanged", JobState.CANCELLED, 2),
        ("JobExited", JobState.CANCELLED, 2),
    ]
    running = [e for e in of_job(sink.events, slurm_cluster, job) if isinstance(e, JobStateChanged)]
    assert running[0].payload.nodes and running[0].payload.nodes[0] in slurm_cluster.node_names


async def test_node_drain_and_resume(slurm_cluster: SlurmCluster, tmp_path: Path) -> None:
    sink = RecordingSink()
    watcher = SlurmWatcher(watch_settings(slurm_cluster, tmp_path), sink)
    await watcher.poll_once()
    first = {e.subject: e.payload.state for e in sink.of_type(NodeStateObserved)}
    assert first == {n: SchedulerNodeState.AVAILABLE for n in slurm_cluster.node_names}
    sink.events.clear()
    try:
        slurm_cluster.scontrol("update", "nodename=node3", "state=drain", "reason=centrality-test")
        await watcher.poll_once()
        await watcher.poll_once()
        [drained] = sink.of_type(NodeStateObserved)
        assert drained.subject == "node3" and drained.payload.state == SchedulerNodeState.DRAINED
        assert (drained.payload.raw_state, drained.payload.reason) == (
            "IDLE+DRAIN",
            "centrality-test",
        )
        assert drained.payload.scheduler == "slurm"
    finally:
        slurm_cluster.scontrol("update", "nodename=node3", "state=resume")
    # After a resume slurmctld may briefly show NOT_RESPONDING until slurmd re-registers.
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        await watcher.poll_once()
        last = sink.of_type(NodeStateObserved)[-1]
        if last.payload.state == SchedulerNodeState.AVAILABLE:
            break
        await asyncio.sleep(0.5)
    assert last.subject == "node3" and last.payload.state == SchedulerNodeState.AVAILABLE
    # Only changes are sent, and a restarted watcher sends none of them again.
    count = len(sink.of_type(NodeStateObserved))
    await SlurmWatcher(watch_settings(slurm_cluster, tmp_path), sink).poll_once()
    assert len(sink.of_type(NodeStateObserved)) == count


async def test_a_job_gone_from_squeue_is_completed_from_the_jobcomp_log(
    slurm_cluster: SlurmCluster, tmp_path: Path
) -> None:
    job = slurm_cluster.sbatch("--wrap", "sleep 2; exit 4")
    slurm_cluster.wait_job(job, {"RUNNING", "FAILED"})
    sink = RecordingSink()
    await SlurmWatcher(watch_settings(slurm_cluster, tmp_path), sink).poll_once()
    slurm_cluster.wait_job(job, {"FAILED"})

    class Forgetful(SlurmWatcher):
        """squeue no longer lists the job (as after MinJobAge while the watcher was down)."""

        async def _json(self, *argv: str) -> dict[str, Any]:
            doc = await super()._json(*argv)
            if argv[0] == "squeue":
                doc["jobs"] = [j for j in doc["jobs"] if str(j["job_id"]) != job]
            return doc

    await Forgetful(watch_settings(slurm_cluster, tmp_path), sink).poll_once()
    [end] = [e for e in of_job(sink.events, slurm_cluster, job) if isinstance(e, JobExited)]
    assert (end.payload.state, end.payload.exit_code) == (JobState.FAILED, 4)
    assert (
        end.payload.nodes
        and end.payload.reason == "from Slurm's records (accounting or job completion log)"
    )


def test_each_nodes_leaf_switch_reaches_its_facts_in_the_streams_worker(
    slurm_cluster: SlurmCluster,
    kafka_settings: KafkaSettings,
    worker_env: dict[str, str],
    tmp_path: Path,
) -> None:
    """The cluster's topology/tree (topology.conf: s1 node[1-2], s2 node3), read by the watcher
    from the real `scontrol show topology`, is each node's `switch` in the streams worker's node
    table: the failure domain its incidents name."""

    async def watch_once() -> list[Event]:
        async with Emitter(kafka_settings) as emitter:
            return await SlurmWatcher(watch_settings(slurm_cluster, tmp_path), emitter).poll_once()

    told = {
        e.subject: e.payload.switch
        for e in asyncio.run(watch_once())
        if isinstance(e, NodeFactsObserved)
    }
    assert told == slurm_cluster.leaf_switches == {"node1": "s1", "node2": "s1", "node3": "s2"}
    app_id = worker_env["CENTRALITY_STREAMS_APP_ID"]
    worker = StreamsWorker(worker_env, tmp_path / "run")
    worker.start()
    try:
        deadline, switches = time.monotonic() + 90, dict[str, str | None]()
        while switches != told and time.monotonic() < deadline:
            worker.check()
            time.sleep(1)
            nodes = table_contents(app_id, "nodes", kafka_settings).values()
            switches = {n["node_id"]: Node.model_validate(n).facts.switch for n in nodes}
    finally:
        worker.stop()
    assert switches == told
