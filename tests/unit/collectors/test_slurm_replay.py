"""The Slurm watcher replayed over what real Slurm 22.05 and 24.11 printed (squeue/sinfo JSON,
the jobcomp log, `scontrol show node`), step by step as tests/fixtures/realworld/slurm/capture/
produced it: every job and node must become the same events on both versions."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from collectors.sink import RecordingSink
from collectors.watchers.slurm.nodes import NodeView, from_scontrol, from_sinfo
from collectors.watchers.slurm.settings import SlurmWatchSettings
from collectors.watchers.slurm.watcher import SlurmWatcher
from schemas.envelope import Event
from schemas.events import JobExited, JobStateChanged, JobSubmitted, NodeFactsObserved
from schemas.events.jobs import JobState
from schemas.events.nodes import NodeStateObserved

SLURM = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "slurm"
VERSIONS = ("22.05", "23.11", "24.11")
STEPS = ("01-running", "02-requeued", "03-draining", "04-ended")
_OUTPUTS = {
    ("squeue",): "squeue.json",
    ("sinfo", "--json"): "sinfo.json",
    ("sacct", "--json"): "sacct.json",
    ("sacct", "-c"): "sacct-jobcomp.txt",
    ("scontrol", "show", "node"): "scontrol-show-node.txt",
}
# The captures ran without a topology plugin; what each version then prints (PROVENANCE.md,
# "Topology"), or with the tests' topology/tree when a replay asks for it.
TOPOLOGY = {False: "scontrol-show-topology-none.txt", True: "scontrol-show-topology.txt"}
RECORDS = ("accounting", "jobcomp")  # where ends of attempts come from: slurmdbd, or jobcomp


class Replayed(SlurmWatcher):
    """The watcher, its Slurm commands answered with what a real Slurm printed at `step`."""

    def __init__(self, version: str, settings: SlurmWatchSettings, sink: RecordingSink) -> None:
        super().__init__(settings, sink)
        self.version = version
        self.step = STEPS[0]
        self.without_sinfo_json = False
        self.without_accounting = False
        self.with_topology = False
        self.forgotten: set[str] = set()  # job ids squeue no longer lists (after MinJobAge)

    async def _json(self, *argv: str) -> dict[str, Any]:
        doc = await super()._json(*argv)
        if argv[0] == "squeue":
            doc["jobs"] = [j for j in doc["jobs"] if str(j["job_id"]) not in self.forgotten]
        return doc

    async def _run(self, *argv: str) -> str:
        if self.without_sinfo_json and argv[:2] == ("sinfo", "--json"):
            raise RuntimeError("sinfo: unrecognized option '--json'")
        if self.without_accounting and argv[:2] == ("sacct", "--json"):
            raise RuntimeError("sacct failed (1): Slurm accounting storage is disabled")
        for prefix, name in _OUTPUTS.items():
            if argv[: len(prefix)] == prefix:
                return (SLURM / self.version / f"{self.step}.{name}").read_text()
        if argv[:3] == ("scontrol", "show", "topology"):
            return (SLURM / self.version / TOPOLOGY[self.with_topology]).read_text()
        if argv[:3] == ("scontrol", "show", "reservation"):
            # The captures ran without reservations; what 22.05 prints for none (PROVENANCE.md).
            return (SLURM / "22.05" / "scontrol-show-reservation-none.txt").read_text()
        raise AssertionError(f"the watcher ran {argv}, which was not captured")


def jobs_of(version: str) -> dict[str, str]:
    lines = (SLURM / version / "04-ended.jobs.txt").read_text().split()
    return dict(line.split("=") for line in lines)


async def replay(
    version: str, tmp_path: Path, *, without_sinfo_json: bool = False, records: str = "accounting"
) -> list[Event]:
    sink = RecordingSink()
    settings = SlurmWatchSettings(cluster="c", state_file=tmp_path / "ledger.json")
    watcher = Replayed(version, settings, sink)
    watcher.without_sinfo_json = without_sinfo_json
    watcher.without_accounting = records == "jobcomp"
    for step in STEPS:
        watcher.step = step
        await watcher.poll_once()
    return sink.events


def story(events: list[Event], subject: str) -> list[tuple[str, str | None, str | None, int]]:
    return [
        (
            e.type,
            getattr(e.payload, "state", None),
            getattr(e.payload, "raw_state", None),
            getattr(e.payload, "attempt", 1),
        )
        for e in events
        if e.subject == subject
    ]


S, C, X = "JobSubmitted", "JobStateChanged", "JobExited"
P, R, F = JobState.PENDING, JobState.RUNNING, JobState.FAILED
SUBMITTED = (S, None, None, 1)
Story = list[tuple[str, str | None, str | None, int]]
End = tuple[int | None, int | None, tuple[str, ...]]  # exit code, signal, nodes
# job (as capture.py names it) -> its events over the four steps, and how its last attempt ended
STORIES: dict[str, tuple[Story, End | None]] = {
    "completed": (
        [SUBMITTED, (C, "SUCCEEDED", "COMPLETED", 1), (X, "SUCCEEDED", "COMPLETED", 1)],
        (0, None, ("node1",)),
    ),
    "failed_exit3_2nodes": (
        [SUBMITTED, (C, F, "FAILED", 1), (X, F, "FAILED", 1)],
        (3, None, ("node1", "node2")),
    ),
    "killed_sigkill": (
        [SUBMITTED, (C, F, "FAILED", 1), (X, F, "FAILED", 1)],
        (None, 9, ("node2",)),
    ),
    "held_pending": ([SUBMITTED, (C, P, "PENDING", 1)], None),
    "running": (
        [
            SUBMITTED,
            (C, R, "RUNNING", 1),
            (C, "CANCELLED", "CANCELLED", 1),
            (X, "CANCELLED", "CANCELLED", 1),
        ],
        (None, 15, ("node1",)),
    ),
    "timeout": (
        [SUBMITTED, (C, R, "RUNNING", 1), (C, F, "TIMEOUT", 1), (X, F, "TIMEOUT", 1)],
        (143, None, ("node2",)),  # 22.05: VERSION_ENDS
    ),
    # `scontrol requeue`: the attempt ended (not a failure), the job waits for its next one.
    "requeued": (
        [
            SUBMITTED,
            (C, R, "RUNNING", 1),
            (X, "PREEMPTED", "REQUEUED", 1),
            (C, P, "COMPLETING", 2),
            (C, P, "PENDING", 2),
        ],
        (None, None, ("node1",)),
    ),
    "node_fail": (
        [SUBMITTED, (C, F, "NODE_FAIL", 1), (X, F, "NODE_FAIL", 1)],
        None,
    ),  # VERSION_ENDS
    # Requeued by Slurm when its node failed, between two looks: that attempt is a node failure.
    "node_fail_requeued": (
        [SUBMITTED, (X, F, "NODE_FAIL", 1), (C, P, "PENDING", 2)],
        None,  # see VERSION_ENDS
    ),
}
# Where the two captures differ, as real clusters do: what each version said of a job whose node
# stopped answering (squeue: 22.05 and 23.11 exit 0, 24.11 SIGHUP; accounting: 24.11 exit 1),
# and the timeout's end (22.05's and 23.11's captures saw the SIGTERM itself, 24.11's the
# shell's 143).
VERSION_ENDS: dict[tuple[str, str, str], End] = {
    ("node_fail", "22.05", ""): (0, None, ("node3",)),
    ("node_fail", "24.11", ""): (None, 1, ("node3",)),
    ("node_fail_requeued", "22.05", "accounting"): (0, None, ("node3",)),
    ("node_fail_requeued", "22.05", "jobcomp"): (0, None, ("node3",)),
    ("node_fail_requeued", "24.11", "accounting"): (1, None, ("node3",)),
    ("node_fail_requeued", "24.11", "jobcomp"): (0, 1, ("node3",)),
    ("node_fail", "23.11", ""): (0, None, ("node3",)),
    ("node_fail_requeued", "23.11", ""): (0, None, ("node3",)),
    ("timeout", "22.05", ""): (None, 15, ("node2",)),
    ("timeout", "23.11", ""): (None, 15, ("node2",)),
}
# 22.05's capture looked once the requeued job was PENDING again, 23.11's and 24.11's while its
# old attempt was still COMPLETING (["PENDING", "COMPLETING"]).
VERSION_STORIES: dict[tuple[str, str], Story] = {
    ("requeued", "22.05"): [
        SUBMITTED,
        (C, R, "RUNNING", 1),
        (X, "PREEMPTED", "REQUEUED", 1),
        (C, P, "PENDING", 2),
    ],
}
STORIES_ARRAY = [
    (S, None, None, 1),
    (C, "SUCCEEDED", "COMPLETED", 1),
    (X, "SUCCEEDED", "COMPLETED", 1),
]


@pytest.mark.parametrize("key", sorted(STORIES))
@pytest.mark.parametrize("records", RECORDS)
@pytest.mark.parametrize("version", VERSIONS)
async def test_each_job_tells_its_story(
    version: str, records: str, key: str, tmp_path: Path
) -> None:
    events = await replay(version, tmp_path, records=records)
    subject = f"slurm/c/{jobs_of(version)[key]}"
    expected, end = STORIES[key]
    expected = VERSION_STORIES.get((key, version), expected)
    end = VERSION_ENDS.get((key, version, records), VERSION_ENDS.get((key, version, ""), end))
    assert story(events, subject) == expected
    exits = [e.payload for e in events if e.subject == subject and isinstance(e, JobExited)]
    # An attempt Slurm followed with another is told as requeued: no rule restarts it again.
    last = max(attempt for *_, attempt in expected)
    assert [x.requeued for x in exits] == [x.attempt < last for x in exits]
    if end is not None:
        assert (exits[-1].exit_code, exits[-1].signal, exits[-1].nodes) == end


@pytest.mark.parametrize("version", VERSIONS)
async def test_array_tasks_are_jobs_of_their_own(version: str, tmp_path: Path) -> None:
    events = await replay(version, tmp_path)
    array = jobs_of(version)["array"]
    for task in ("0", "1"):
        assert story(events, f"slurm/c/{array}_{task}") == STORIES_ARRAY
    submitted = [e for e in events if isinstance(e, JobSubmitted)]
    assert len({e.subject for e in submitted}) == len(submitted) == len(STORIES) + 2


async def test_both_versions_tell_the_same_stories(tmp_path: Path) -> None:
    """Beyond the table: per job, the same attempt ends (state, raw word, attempt, nodes) and the
    same last state on every version."""

    def shape(version: str, events: list[Event]) -> set[tuple[object, ...]]:
        key_of = {f"slurm/c/{v}": k for k, v in jobs_of(version).items()}
        last = {e.subject: e for e in events if isinstance(e, JobStateChanged)}
        keep = ("state", "raw_state", "attempt", "nodes")
        return {
            (e.type, key_of.get(e.subject, e.subject), *(getattr(e.payload, k) for k in keep))
            for e in [*(e for e in events if isinstance(e, JobExited)), *last.values()]
        }

    first, *others = [shape(v, await replay(v, tmp_path / v)) for v in VERSIONS]
    assert len(first) == 10 + 11  # ten attempt ends, eleven jobs
    assert all(other == first for other in others)


NODE_STORY = {
    "node1": [
        ("AVAILABLE", "ALLOCATED", None),
        ("DRAINING", "MIXED+DRAIN", "capture-draining"),
        ("DOWN", "DOWN", "capture-down"),
    ],
    "node2": [
        ("AVAILABLE", "MIXED", None),
        ("DRAINING", "MIXED+DRAIN", "capture-drained"),
        ("AVAILABLE", "IDLE", None),
    ],
    "node3": [("AVAILABLE", "IDLE", None), ("DOWN", "DOWN+NOT_RESPONDING", "Not responding")],
}
# 22.05 put node1 back in service on its own before the last look (ReturnToService=2: it answered).
VERSION_NODE_STORIES = {
    ("node1", "22.05"): [
        ("AVAILABLE", "ALLOCATED", None),
        ("DRAINING", "MIXED+DRAIN", "capture-draining"),
        ("AVAILABLE", "IDLE", None),
    ],
}


@pytest.mark.parametrize("without_sinfo_json", [False, True], ids=["sinfo-json", "scontrol"])
@pytest.mark.parametrize("version", VERSIONS)
async def test_node_states_on_change_only(
    version: str, without_sinfo_json: bool, tmp_path: Path
) -> None:
    events = await replay(version, tmp_path, without_sinfo_json=without_sinfo_json)
    for node, expected in NODE_STORY.items():
        seen = [
            (e.payload.state.value, e.payload.raw_state, e.payload.reason)
            for e in events
            if isinstance(e, NodeStateObserved) and e.subject == node
        ]
        assert seen == VERSION_NODE_STORIES.get((node, version), expected), node


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("version", VERSIONS)
def test_sinfo_json_and_scontrol_agree(version: str, step: str) -> None:
    import orjson

    sinfo = from_sinfo(orjson.loads((SLURM / version / f"{step}.sinfo.json").read_bytes()))
    scontrol = from_scontrol((SLURM / version / f"{step}.scontrol-show-node.txt").read_text())

    # The two commands ran a moment apart: a node's COMPLETING flag may clear in between.
    def settled(views: list[NodeView]) -> list[tuple[str, tuple[str, ...], str | None]]:
        return sorted(
            (v.name, tuple(w for w in v.words if w != "COMPLETING"), v.reason) for v in views
        )

    assert settled(sinfo) == settled(scontrol)
    assert {n.name for n in sinfo} == {"node1", "node2", "node3"}
    # The capture's cluster: one partition, no node features (`AvailableFeatures=(null)`).
    for views in (sinfo, scontrol):
        assert {(v.partitions, v.features) for v in views} == {(("debug",), ())}


@pytest.mark.parametrize("without_sinfo_json", [False, True], ids=["sinfo-json", "scontrol"])
@pytest.mark.parametrize("version", VERSIONS)
async def test_node_facts_once_unless_they_change(
    version: str, without_sinfo_json: bool, tmp_path: Path
) -> None:
    events = await replay(version, tmp_path, without_sinfo_json=without_sinfo_json)
    facts = [
        (e.subject, e.payload.model_dump(exclude_none=True))
        for e in events
        if isinstance(e, NodeFactsObserved)
    ]
    said = {"partitions": ("debug",), "features": ()}
    assert sorted(facts) == [(node, said) for node in ("node1", "node2", "node3")]


@pytest.mark.parametrize("version", VERSIONS)
async def test_each_nodes_leaf_switch_is_a_fact_once(version: str, tmp_path: Path) -> None:
    sink = RecordingSink()
    settings = SlurmWatchSettings(cluster="c", state_file=tmp_path / "ledger.json")
    watcher = Replayed(version, settings, sink)
    watcher.with_topology = True
    for step in STEPS:
        watcher.step = step
        await watcher.poll_once()
    switches = {
        e.subject: e.payload.switch for e in sink.events if isinstance(e, NodeFactsObserved)
    }
    assert switches == {"node1": "s1", "node2": "s1", "node3": "s2"}
    assert sum(isinstance(e, NodeFactsObserved) for e in sink.events) == 3


class Recabled(Replayed):
    """The watcher, the topology answered by the test (None: scontrol fails)."""

    topology: str | None = ""

    async def _run(self, *argv: str) -> str:
        if argv[:3] != ("scontrol", "show", "topology"):
            return await super()._run(*argv)
        if self.topology is None:
            raise RuntimeError("scontrol failed (1): Unable to contact slurm controller")
        return self.topology


async def test_a_switch_is_told_again_only_when_it_changes(tmp_path: Path) -> None:
    sink = RecordingSink()
    settings = SlurmWatchSettings(cluster="c", state_file=tmp_path / "ledger.json")
    watcher = Recabled("24.11", settings, sink)
    captured = (SLURM / "24.11" / TOPOLOGY[True]).read_text()
    watcher.topology = captured
    await watcher.poll_once()
    told = len(sink.events)
    watcher.topology = None  # unread: no change of cabling, nothing told
    await watcher.poll_once()
    assert len(sink.events) == told
    watcher.topology = captured.replace("Nodes=node[1-2]", "Nodes=node1").replace(
        "Nodes=node3", "Nodes=node[2-3]"
    )
    await watcher.poll_once()
    [moved] = [e for e in sink.events[told:] if isinstance(e, NodeFactsObserved)]
    assert (moved.subject, moved.payload.switch) == ("node2", "s2")


async def test_without_a_topology_no_switch_and_said_once_at_debug(tmp_path: Path) -> None:
    before = structlog.get_config()  # another test may have set the level above debug
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG))
    try:
        with capture_logs() as logs:
            events = await replay("22.05", tmp_path)
    finally:
        structlog.configure(**before)
    assert not any(e.payload.switch for e in events if isinstance(e, NodeFactsObserved))
    said = [(entry["log_level"], entry["event"]) for entry in logs if "topology" in entry["event"]]
    assert said == [("debug", "slurm_topology_none")]


@pytest.mark.parametrize("version", VERSIONS)
async def test_a_restarted_watcher_sends_nothing_again(version: str, tmp_path: Path) -> None:
    await replay(version, tmp_path)
    sink = RecordingSink()
    watcher = Replayed(
        version, SlurmWatchSettings(cluster="c", state_file=tmp_path / "ledger.json"), sink
    )
    watcher.step = STEPS[-1]
    await watcher.poll_once()
    assert sink.events == []


VANISHED = "from Slurm's records (accounting or job completion log)"


@pytest.mark.parametrize("records", RECORDS)
@pytest.mark.parametrize("version", VERSIONS)
async def test_jobs_gone_from_squeue_end_from_slurms_records(
    version: str, records: str, tmp_path: Path
) -> None:
    """Seen running, then gone from squeue (the watcher was down past MinJobAge): their ends
    come from accounting or the job completion log."""
    sink = RecordingSink()
    settings = SlurmWatchSettings(cluster="c", state_file=tmp_path / "ledger.json")
    watcher = Replayed(version, settings, sink)
    watcher.without_accounting = records == "jobcomp"
    await watcher.poll_once()
    jobs = jobs_of(version)
    watcher.step, watcher.forgotten = STEPS[-1], {jobs["timeout"], jobs["running"]}
    await watcher.poll_once()
    ends = {
        e.subject: (e.payload.state, e.payload.raw_state, e.payload.nodes)
        for e in sink.events
        if isinstance(e, JobExited) and e.payload.reason == VANISHED
    }
    assert ends == {
        f"slurm/c/{jobs['timeout']}": (F, "TIMEOUT", ("node2",)),
        f"slurm/c/{jobs['running']}": (JobState.CANCELLED, "CANCELLED", ("node1",)),
    }


async def test_a_real_23_02_squeue(tmp_path: Path) -> None:
    """23.02.6 (23.02/PROVENANCE.md): wrapped numbers, yet `job_state` a string and `exit_code` a
    wrapped raw wait status."""

    class Squeue2302(SlurmWatcher):
        async def _run(self, *argv: str) -> str:
            if argv[0] == "squeue":
                return (SLURM / "23.02" / "squeue-running.json").read_text()
            return '{"nodes": []}'  # sinfo: not captured with it

    sink = RecordingSink()
    settings = SlurmWatchSettings(cluster="jz", state_file=tmp_path / "ledger.json")
    await Squeue2302(settings, sink).poll_once()
    submitted, running = sink.events
    assert submitted.subject == running.subject == "slurm/jz/1618871"
    assert isinstance(submitted, JobSubmitted) and isinstance(running, JobStateChanged)
    assert (submitted.payload.name, submitted.payload.queue) == ("model_pretrain", "gpu_p2")
    assert (submitted.payload.nodes_requested, submitted.payload.gpus_requested) == (1, 8)
    assert submitted.payload.raw["tres_per_node"] == "gres:gpu:8"
    assert (running.payload.state, running.payload.raw_state) == (R, "RUNNING")
    assert running.payload.nodes == ("data-center-ia830",) and running.payload.attempt == 1
    assert running.occurred_at.timestamp() == 1701983394
