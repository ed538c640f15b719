"""The simulated cluster: advance it tick by tick and get the events each tick produced.

Everything is drawn from one `random.Random(seed)` and event ids count up from a uuid5 of the
seed, so a seed replays exactly the same story (the demo, rule backtests and benchmarks
rely on that). GPUs are read through the fake NVML backend on the simulation's clock.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal

from collectors.events import Stamp
from collectors.gpu.fake import FakeGpuBackend, Fault
from collectors.simulate.config import SimConfig
from collectors.simulate.faulted import Faulted, Kind
from collectors.simulate.slow import SlowSpell, step_times
from collectors.simulate.slow import draw as draw_spells
from collectors.simulate.taxonomy import TAXONOMIES, Cause, PlannedFault, draw
from schemas.envelope import Event
from schemas.events import (
    CheckpointSaved,
    GpuSampled,
    GpuXidObserved,
    JobExited,
    JobState,
    JobStateChanged,
    JobSubmitted,
    LogSignalDetected,
    NcclSampled,
    NodeFactsObserved,
    NodeHealthChecked,
    NodeHeartbeat,
    NodeStateObserved,
    StepTimesObserved,
)
from schemas.events.checkpoints import CheckpointSavedPayload
from schemas.events.gpus import GpuXidObservedPayload, NcclSampledPayload
from schemas.events.jobs import JobExitedPayload, JobStateChangedPayload, JobSubmittedPayload
from schemas.events.logs import LogSignal, LogSignalDetectedPayload
from schemas.events.nodes import (
    HealthStatus,
    NodeFactsObservedPayload,
    NodeHealthCheckedPayload,
    NodeHeartbeatPayload,
    NodeStateObservedPayload,
    SchedulerNodeState,
)

_NAMESPACE = uuid.UUID("0b1f4a63-5d3e-4f0e-8a43-7c2d9e3f6a10")
Fate = Literal["complete", "crash", "preempt"]


@dataclass
class SimJob:
    id: str
    nodes_wanted: int
    duration_s: float  # the work it does, in running seconds
    fate: Fate
    slow_nccl: bool
    submitted_s: float
    fate_at: float = 1.0  # share of the duration at which a crash or preemption happens
    nodes: tuple[str, ...] = ()
    started_s: float | None = None
    next_checkpoint_s: float = 0.0
    next_nccl_s: float = 0.0
    step: int = 0
    attempt: int = 1
    base_s: float = 0.0  # the work done when this attempt started (its checkpoint's)
    saved_s: float = 0.0  # the work its last checkpoint kept
    avoid: frozenset[str] = frozenset()  # nodes its requeue excluded (Slurm's --exclude)
    not_before_s: float = 0.0  # a requeued job's way back (`SimConfig.restart_s`) ends then
    # Slow nodes: what this attempt's work lags its running time, accounted up to `paced_s`;
    # of that lag, what was run since the last checkpoint (lost with the attempt if it ends
    # without saving, else lost to slowness); a checkpoint asked for, written at the next tick.
    lag_s: float = 0.0
    paced_s: float = 0.0
    slow_unsaved_s: float = 0.0
    checkpoint_asked: bool = False

    def progress_s(self, now_s: float) -> float:
        ran_s = now_s - self.started_s if self.started_s is not None else 0.0
        return self.base_s + ran_s - self.lag_s


@dataclass
class SimNode:
    name: str
    backend: FakeGpuBackend
    loses_heartbeat: bool = False
    lost_told: bool = False  # its agent's death is in `ClusterModel.faulted`
    next_heartbeat_s: float = 0.0
    job: str | None = None
    drained: bool = False  # by whoever: the scheduler places nothing here
    down_until_s: float | None = None  # silent and out (lost, or in maintenance) until then
    next_check_s: float | None = None  # a failing health check's next report

    def takes_work(self, now_s: float, lost_at_s: float) -> bool:
        agent_dead = self.loses_heartbeat and now_s >= lost_at_s
        return self.job is None and not (self.drained or self.down_until_s or agent_dead)


@dataclass
class TickStats:
    events: int = 0
    by_type: dict[str, int] = field(default_factory=dict)


class ClusterModel:
    def __init__(self, config: SimConfig, start: datetime) -> None:
        self.config = config
        self.start = start
        self.now_s = 0.0
        self.rng = random.Random(config.seed)
        self._counter = 0
        # Counting up from the seed's own id: a uuid5 per event (a SHA-1) cost more than the
        # GPU sample it names, 80,000 of them per interval at 10,000 nodes.
        self._first_id = uuid.uuid5(_NAMESPACE, str(config.seed)).int
        self.stamp_nodes = Stamp(source="simulator/agent", cluster=config.cluster)
        self.stamp_jobs = Stamp(source="simulator/scheduler", cluster=config.cluster)
        self.stamp_logs = Stamp(source="simulator/tailer", cluster=config.cluster)
        names = [f"{config.node_prefix}{i:04d}" for i in range(config.nodes)]
        xid_nodes = set(self.rng.sample(names, min(config.xid_nodes, len(names))))
        lost = set(self.rng.sample(names, min(config.lost_heartbeat_nodes, len(names))))
        # Drawn only when asked for, so a seed without them tells the story it always told.
        sound = [n for n in names if n not in xid_nodes]
        bad = set(self.rng.sample(sound, min(config.bad_nodes, len(sound))))
        self.nodes = self._make_nodes(names, xid_nodes | bad, lost)
        self.xid_nodes = sorted(xid_nodes)
        self.lost_nodes = sorted(lost)
        self.bad_nodes = sorted(bad)
        self.faulted: list[Faulted] = []  # what it did to nodes and jobs, as it happened
        self.names = names
        self.planned = self._plan_faults()
        self.struck: list[tuple[PlannedFault, str | None]] = []  # applied: the job it took down
        # Slow spells have a generator of their own (their draws and the step times' noise):
        # a seed without them draws everything else as it always did.
        self._slow_rng = random.Random(f"slow/{config.seed}")
        self.spells = draw_spells(config, names, self._slow_rng) if config.slow_nodes else []
        self._spells_due = list(self.spells)
        self.slow: dict[str, SlowSpell] = {}  # node → its spell, while it lasts
        self._stretch_slow: dict[str, float] = {}  # node → its factor since the last tick
        # job → GPU-seconds its slow nodes cost in work it kept: running time (1 - 1/factor
        # of it) that the job's checkpoints count productive although no work was done.
        self.slow_lost_gpu_s: dict[str, float] = {}
        self.broken: dict[str, Cause] = {}  # node → what is wrong with it (the truth)
        self._faulty_gpu: dict[str, int] = {}
        self.failed: dict[str, tuple[SimJob, float]] = {}  # jobs waiting for a requeue, since
        self.jobs: dict[str, SimJob] = {}
        self.pending: list[str] = []
        self._next_job = 0
        self._initial = self._initial_jobs()

    def _make_nodes(
        self, names: list[str], xid_nodes: set[str], lost: set[str]
    ) -> dict[str, SimNode]:
        """Each node with its GPUs open; `xid_nodes` throw XIDs (their draws, from the model's
        generator, in the nodes' order), `lost` stop their heartbeats."""
        config = self.config
        nodes = {
            name: SimNode(
                name,
                FakeGpuBackend(
                    config.gpus,
                    self._xid_faults(i) if name in xid_nodes else (),
                    seed=config.seed * 100_003 + i,
                    clock=lambda: self.now_s,
                    model=config.gpu_models[i % len(config.gpu_models)],
                ),
                loses_heartbeat=name in lost,
            )
            for i, name in enumerate(names)
        }
        for node in nodes.values():
            node.backend.open()
        return nodes

    def _plan_faults(self) -> list[PlannedFault]:
        """The taxonomy's faults, drawn apart from the rest, so a table's faults leave the jobs
        drawn as without them."""
        config = self.config
        if not config.taxonomy:
            return []
        return draw(
            TAXONOMIES[config.taxonomy],
            config.nodes,
            config.gpus,
            config.horizon_s,
            config.acceleration,
            random.Random(f"faults/{config.seed}"),
        )

    def _initial_jobs(self) -> list[tuple[Fate, bool]]:
        """The fate of each job submitted at the start, and whether its NCCL is slow."""
        config = self.config
        crash: list[Fate] = ["crash"]
        preempt: list[Fate] = ["preempt"]
        complete: list[Fate] = ["complete"]
        fates = crash * config.crash_jobs + preempt * config.preempt_jobs
        fates += complete * max(0, config.jobs - len(fates))
        slow = set(self.rng.sample(range(config.jobs), min(config.slow_nccl_jobs, config.jobs)))
        return [(fate, i in slow) for i, fate in enumerate(fates[: config.jobs])]

    def _xid_faults(self, index: int) -> tuple[Fault, ...]:
        gpu = index % self.config.gpus
        first = self.rng.uniform(0, self.config.xid_every_s)
        return (Fault("xid", gpu, first, "79", self.config.xid_every_s),)

    # -- events ------------------------------------------------------------------------------

    @property
    def at(self) -> datetime:
        """The simulated instant, as this tick's events are stamped."""
        return self.start + timedelta(seconds=self.now_s)

    def _fault(self, subject: str, kind: Kind, how: str) -> None:
        self.faulted.append(Faulted(subject, kind, how, self.at))

    def _make(self, stamp: Stamp, cls: type[Event], subject: str, payload: Any) -> Event:
        self._counter += 1
        return stamp.make(
            cls,
            subject,
            payload,
            occurred_at=self.at,
            event_id=uuid.UUID(int=(self._first_id + self._counter) % 2**128),
        )

    def tick(self, now_s: float) -> list[Event]:
        """Advance to `now_s` and return what happened, in order."""
        self._pace(now_s)
        self.now_s = now_s
        out: list[Event] = []
        if now_s == 0.0:
            for name in self.bad_nodes:
                self._fault(name, "node", "benchmark fails (a broken GPU)")
            for fate, slow in self._initial:
                out.extend(self._submit(fate, slow))
        out.extend(self._come_back())
        self._slow_spells()
        while self.planned and self.planned[0].at_s <= now_s:
            out.extend(self._strike(self.planned.pop(0)))
        out.extend(self._schedule())
        for node in self.nodes.values():
            out.extend(self._node_events(node))
        for job in list(self.jobs.values()):
            out.extend(self._job_events(job))
        out.extend(self._schedule())
        return out

    def _node_events(self, node: SimNode) -> list[Event]:
        if node.loses_heartbeat and self.now_s >= self.config.lost_heartbeat_at_s:
            if not node.lost_told:
                node.lost_told = True
                self._fault(node.name, "node", "agent died: no heartbeats, no samples")
            return []  # the agent died: no samples, no heartbeats
        if node.down_until_s is not None:
            return []  # lost, or in maintenance: silent
        out: list[Event] = [
            self._make(self.stamp_nodes, GpuSampled, node.name, node.backend.sample(g))
            for g in range(self.config.gpus)
        ]
        if self.now_s == 0.0:  # as an agent says what its GPUs are when it starts
            out.append(
                self._make(self.stamp_nodes, NodeFactsObserved, node.name, self._facts(node))
            )
        for xid in node.backend.pending_xids():
            self._fault(node.name, "node", f"XID {xid.xid}")
            out.append(
                self._make(
                    self.stamp_nodes,
                    GpuXidObserved,
                    node.name,
                    GpuXidObservedPayload(gpu=xid.gpu, uuid=xid.uuid, xid=xid.xid),
                )
            )
            if node.job is not None and node.job in self.jobs:
                out.extend(self._end(self.jobs[node.job], "crash", f"XID {xid.xid} on {node.name}"))
        if self.now_s >= node.next_heartbeat_s:
            node.next_heartbeat_s = self.now_s + self.config.heartbeat_s
            payload = NodeHeartbeatPayload(
                agent_version="sim",
                gpus=self.config.gpus,
                uptime_s=self.now_s,
                interval_s=self.config.heartbeat_s,
            )
            out.append(self._make(self.stamp_nodes, NodeHeartbeat, node.name, payload))
        cause = self.broken.get(node.name)
        if cause is not None and cause.check and self.now_s >= (node.next_check_s or 0.0):
            node.next_check_s = self.now_s + self.config.check_resend_s
            check = NodeHealthCheckedPayload(
                check=cause.check, status=HealthStatus.CRITICAL, message=cause.component
            )
            out.append(self._make(self.stamp_nodes, NodeHealthChecked, node.name, check))
        return out

    def _facts(self, node: SimNode) -> NodeFactsObservedPayload:
        """What its GPUs are, and the leaf switch it hangs off: `nodes_per_switch` nodes in a
        row (by the number in its name) share one, as a scheduler's topology would say."""
        number = int(node.name.removeprefix(self.config.node_prefix))
        switch = f"s{number // self.config.nodes_per_switch}"
        return node.backend.facts().model_copy(update={"switch": switch})

    def _submit(self, fate: Fate, slow: bool) -> list[Event]:
        self._next_job += 1
        job_id = f"slurm/{self.config.cluster}/{self._next_job}"
        lo, hi = self.config.nodes_per_job
        job = SimJob(
            id=job_id,
            nodes_wanted=min(self.rng.randint(lo, hi), self.config.nodes),
            duration_s=self.rng.uniform(*self.config.job_duration_s),
            fate=fate,
            slow_nccl=slow,
            submitted_s=self.now_s,
            fate_at=self.rng.uniform(0.3, 0.8),
        )
        self.jobs[job_id] = job
        self.pending.append(job_id)
        payload = JobSubmittedPayload(
            name=f"train-{self._next_job}",
            user="sim",
            queue="gpu",
            nodes_requested=job.nodes_wanted,
            gpus_requested=job.nodes_wanted * self.config.gpus,
            command="torchrun train.py",
        )
        return [
            self._make(self.stamp_jobs, JobSubmitted, job_id, payload),
            self._state(job, JobState.PENDING, None, "PENDING"),
        ]

    def _schedule(self) -> list[Event]:
        lost_at_s = self.config.lost_heartbeat_at_s
        free = [n.name for n in self.nodes.values() if n.takes_work(self.now_s, lost_at_s)]
        out: list[Event] = []
        for job_id in list(self.pending):
            job = self.jobs[job_id]
            if job.not_before_s > self.now_s:
                continue  # on its way back from a requeue: not a candidate yet
            allowed = [n for n in free if n not in job.avoid]
            if job.nodes_wanted > len(allowed):
                break  # FIFO: the head of the queue waits for room
            job.nodes = tuple(allowed[: job.nodes_wanted])
            free = [n for n in free if n not in job.nodes]
            for name in job.nodes:
                self.nodes[name].job = job.id
            job.started_s = job.paced_s = self.now_s
            job.lag_s = job.slow_unsaved_s = 0.0
            job.next_checkpoint_s = self.now_s + self.config.checkpoint_every_s
            job.next_nccl_s = self.now_s
            self.pending.remove(job_id)
            if job.slow_nccl:
                self._fault(job.id, "job", "NCCL at a fifth of its bus bandwidth")
            out.append(self._state(job, JobState.RUNNING, JobState.PENDING, "RUNNING"))
        return out

    def _job_events(self, job: SimJob) -> list[Event]:
        if job.started_s is None or job.id not in self.jobs:
            return []
        out: list[Event] = []
        ran_s = self.now_s - job.started_s
        stepped = int(job.progress_s(self.now_s)) - job.step
        job.step += stepped
        if self.config.slow_nodes and stepped > 0:
            out.extend(self._step_times(job, stepped))
        if self.now_s >= job.next_nccl_s:
            job.next_nccl_s += self.config.nccl_every_s
            out.append(self._nccl(job))
        due = self.now_s >= job.next_checkpoint_s
        if due or job.checkpoint_asked:
            if due:
                job.next_checkpoint_s += self.config.checkpoint_every_s
            out.append(self._save(job))
        faulty = [n for n in job.nodes if n in self.broken]
        if faulty and ran_s >= self.config.crash_after_s:
            # What broke the node breaks every job placed there, the same way.
            node = self.nodes[faulty[0]]
            self._fault_signs(node, self.broken[node.name], self._faulty_gpu[node.name])
            out.extend(self._crash(job, self.broken[node.name], node.name))
        elif job.fate != "complete" and ran_s >= job.fate_at * job.duration_s:
            reason = "node failure" if job.fate == "crash" else "preempted by higher priority"
            out.extend(self._end(job, job.fate, reason))
        elif job.progress_s(self.now_s) >= job.duration_s:
            out.extend(self._end(job, "complete", None))
        return out

    def _save(self, job: SimJob) -> Event:
        job.checkpoint_asked = False
        job.saved_s = job.progress_s(self.now_s)
        self._keep_slow(job)
        payload = CheckpointSavedPayload(
            step=job.step, uri=f"s3://sim-ckpt/{job.id}/step-{job.step}"
        )
        return self._make(self.stamp_jobs, CheckpointSaved, job.id, payload)

    def _nccl(self, job: SimJob) -> Event:
        healthy = self.config.nccl_busbw_gbps * self.rng.uniform(0.95, 1.02)
        busbw = healthy * (0.2 if job.slow_nccl else 1.0)
        ranks = len(job.nodes) * self.config.gpus
        size = 1 << 30
        factor = 2 * (ranks - 1) / ranks if ranks > 1 else 1.0
        algbw = busbw / factor
        payload = NcclSampledPayload(
            collective="all_reduce",
            size_bytes=size,
            algbw_gbps=round(algbw, 2),
            busbw_gbps=round(busbw, 2),
            duration_us=round(size / (algbw * 1e9) * 1e6, 1),
            ranks=ranks,
            job_id=job.id,
            source_kind="nccl-tests",
        )
        return self._make(self.stamp_nodes, NcclSampled, job.nodes[0], payload)

    def _end(
        self, job: SimJob, fate: Fate, reason: str | None, raw_state: str | None = None
    ) -> list[Event]:
        out: list[Event] = []
        if fate != "complete":
            self._fault(job.id, "job", f"{'crashed' if fate == 'crash' else 'preempted'}: {reason}")
        if fate == "complete":
            self._keep_slow(job)
            signal = LogSignalDetectedPayload(
                signal=LogSignal.TRAINING_COMPLETE,
                line=f"Training Complete at step {job.step}",
                node=job.nodes[0],
                rank=0,
                pattern="training_complete",
            )
            out.append(self._make(self.stamp_logs, LogSignalDetected, job.id, signal))
        state, raw, code, sig = {
            "complete": (JobState.SUCCEEDED, "COMPLETED", 0, None),
            "crash": (JobState.FAILED, "FAILED", 1, None),
            "preempt": (JobState.PREEMPTED, "PREEMPTED", None, 15),
        }[fate]
        raw = raw_state or raw
        out.append(self._state(job, state, JobState.RUNNING, raw, reason))
        exited = JobExitedPayload(
            state=state,
            raw_state=raw,
            exit_code=code,
            signal=sig,
            reason=reason,
            nodes=job.nodes,
            gpus=len(job.nodes) * self.config.gpus,
            attempt=job.attempt,
        )
        out.append(self._make(self.stamp_jobs, JobExited, job.id, exited))
        for name in job.nodes:
            self.nodes[name].job = None
        del self.jobs[job.id]
        if fate == "crash" and self.config.taxonomy:
            self.failed[job.id] = (job, self.now_s)  # until someone requeues it
            return out
        out.extend(self._submit("complete", False))  # keep `jobs` jobs in the queue
        return out

    def _state(
        self,
        job: SimJob,
        state: JobState,
        previous: JobState | None,
        raw: str,
        reason: str | None = None,
    ) -> Event:
        payload = JobStateChangedPayload(
            state=state,
            raw_state=raw,
            previous_state=previous,
            nodes=job.nodes,
            reason=reason,
            attempt=job.attempt,
        )
        return self._make(self.stamp_jobs, JobStateChanged, job.id, payload)

    # -- faults from a table, and what people and automation do about them -------------------

    def _strike(self, fault: PlannedFault) -> list[Event]:
        """A drawn fault: the node shows what the cause shows, and the job there (for a cause
        of the job's own, the job there or else none) goes down with it."""
        node = self.nodes[self.names[fault.node]]
        if node.down_until_s is not None:
            return []  # already out: nothing runs there to interrupt
        if node.name in self.slow:
            self._recover(node.name)  # what is wrong with it now shows instead
        cause, out = fault.cause, []
        job = self.jobs.get(node.job) if node.job else None
        self.struck.append((fault, job.id if job else None))
        self._fault(node.name, "node", cause.component)
        if cause.breaks_node and not cause.maintenance:
            self.broken[node.name] = cause
            self._faulty_gpu[node.name] = fault.gpu
        if cause.emits == "node_lost":
            out.append(self._scheduler_says(node.name, SchedulerNodeState.DOWN, cause.component))
            back_s = self.config.maintenance_s if cause.maintenance else self.config.repair_s
            node.down_until_s = self.now_s + back_s
        else:
            self._fault_signs(node, cause, fault.gpu)
        if job is not None:
            out.extend(self._crash(job, cause, node.name))
        return out

    def _fault_signs(self, node: SimNode, cause: Cause, gpu: int) -> None:
        """What the node's agent shows of the cause from now on: its GPUs read anew (an XID
        once, an ECC count or throttling while it lasts), a check reported failing."""
        faults = {
            "xid": (Fault("xid", gpu, 0.0, str(cause.xid)),),
            "ecc": (Fault("ecc_dbe", gpu, 0.0, "1"), Fault("xid", gpu, 0.0, str(cause.xid))),
            "thermal": (Fault("throttle", gpu, 0.0, "HwThermalSlowdown"),),
        }.get(cause.emits)
        if faults is not None:
            node.backend = self._backend(node, faults)
        if cause.check:
            node.next_check_s = self.now_s

    def _backend(self, node: SimNode, faults: tuple[Fault, ...]) -> FakeGpuBackend:
        index = self.names.index(node.name)
        backend = FakeGpuBackend(
            self.config.gpus,
            faults,
            seed=self.config.seed * 100_003 + index,
            clock=lambda: self.now_s,
            model=self.config.gpu_models[index % len(self.config.gpu_models)],
        )
        backend.open()
        return backend

    def _crash(self, job: SimJob, cause: Cause, node: str) -> list[Event]:
        signal = LogSignalDetectedPayload(signal=cause.signal, line=cause.line, node=node, rank=0)
        lost = cause.emits == "node_lost"
        return [
            self._make(self.stamp_logs, LogSignalDetected, job.id, signal),
            *self._end(job, "crash", cause.component, "NODE_FAIL" if lost else None),
        ]

    def _scheduler_says(self, node: str, state: SchedulerNodeState, reason: str | None) -> Event:
        payload = NodeStateObservedPayload(
            state=state, raw_state=state.value, reason=reason, scheduler="sim"
        )
        return self._make(self.stamp_jobs, NodeStateObserved, node, payload)

    def _come_back(self) -> list[Event]:
        """Nodes whose maintenance or repair is over take work again."""
        out = []
        for node in self.nodes.values():
            if node.down_until_s is not None and node.down_until_s <= self.now_s:
                node.down_until_s = None
                out.extend(self.repair(node.name))
        return out

    def requeue(self, job_id: str, avoid: Iterable[str] = ()) -> list[Event]:
        """The job runs again (automation's requeue, or a person's), from its last checkpoint,
        as its next attempt, never on the nodes to `avoid`: a failed job, or a running one,
        whose attempt then ends as Slurm's requeue ends it (its work since the checkpoint
        lost). It is placed `restart_s` later, the time a requeue takes to run again."""
        found = self.failed.pop(job_id, None)
        running = self.jobs.get(job_id)
        if found is not None:
            job, out = found[0], []
        elif running is not None and running.started_s is not None:
            job, out = running, self._stop(running)
        else:
            return []
        job.attempt += 1
        job.avoid = frozenset(avoid)
        job.base_s = job.saved_s
        job.started_s, job.nodes = None, ()
        job.not_before_s = self.now_s + self.config.restart_s
        self.jobs[job.id] = job
        self.pending.append(job.id)
        return [*out, self._state(job, JobState.PENDING, None, "PENDING"), *self._schedule()]

    def _stop(self, job: SimJob) -> list[Event]:
        """A running attempt requeued: it ends (the scheduler's word REQUEUED, a preemption to
        the job) and gives its nodes back."""
        exited = JobExitedPayload(
            state=JobState.PREEMPTED,
            raw_state="REQUEUED",
            reason="requeued while running",
            nodes=job.nodes,
            gpus=len(job.nodes) * self.config.gpus,
            attempt=job.attempt,
            requeued=True,
        )
        for name in job.nodes:
            self.nodes[name].job = None
        job.checkpoint_asked = False
        return [self._make(self.stamp_jobs, JobExited, job.id, exited)]

    def checkpoint(self, job_id: str) -> None:
        """The running job was asked for a checkpoint now (a signal its trainer honours): it
        writes one at its next tick."""
        job = self.jobs.get(job_id)
        if job is not None and job.started_s is not None:
            job.checkpoint_asked = True

    def drain(self, nodes: Iterable[str], reason: str | None = None) -> list[Event]:
        """Nothing new is placed on `nodes`; with `reason`, a person drained them and the
        scheduler says so (automation's drains are the adapter's, told by its results)."""
        out = []
        for name in nodes:
            self.nodes[name].drained = True
            if reason is not None:
                out.append(self._scheduler_says(name, SchedulerNodeState.DRAINED, reason))
        return out

    def resume(self, nodes: Iterable[str]) -> None:
        for name in nodes:
            self.nodes[name].drained = False

    def repair(self, name: str) -> list[Event]:
        """The node is mended (its GPUs read afresh) and back in service, as the scheduler
        then says."""
        node = self.nodes[name]
        if self.broken.pop(name, None) is not None:
            node.backend = self._backend(node, ())
        node.drained, node.next_check_s = False, None
        return [self._scheduler_says(name, SchedulerNodeState.AVAILABLE, None)]

    def unhealthy(self) -> dict[str, str]:
        """Nodes whose benchmark would fail now, and why (the truth, for a benchmark to tell)."""
        bad = {node: "a broken GPU: benchmark below thresholds" for node in self.bad_nodes}
        slow = {
            node: f"throttled ({s.reason}): benchmark below thresholds"
            for node, s in self.slow.items()
        }
        return (
            bad
            | slow
            | {
                node: f"{cause.component}: benchmark below thresholds"
                for node, cause in self.broken.items()
                if cause.benchmark_sees
            }
        )

    # -- slow nodes --------------------------------------------------------------------------

    def _slow_spells(self) -> None:
        """Spells over by now end; those due begin, on a node in service and sound (on another,
        what is wrong with it already shows)."""
        for name, spell in list(self.slow.items()):
            if spell.until_s <= self.now_s:
                self._recover(name)
        while self._spells_due and self._spells_due[0].at_s <= self.now_s:
            spell = self._spells_due.pop(0)
            node = self.nodes[spell.node]
            if (
                node.down_until_s is None
                and spell.node not in self.broken
                and spell.node not in self.slow
            ):
                self.slow[spell.node] = spell
                throttled = (
                    Fault("throttle", g, 0.0, spell.reason) for g in range(self.config.gpus)
                )
                node.backend = self._backend(node, tuple(throttled))
                self._fault(spell.node, "node", spell.said)

    def _recover(self, name: str) -> None:
        del self.slow[name]
        if name not in self.broken:
            self.nodes[name].backend = self._backend(self.nodes[name], ())

    def _pace(self, now_s: float) -> None:
        """Each running job's work since the last tick: a job runs at its slowest node's pace
        (its all-reduces wait for that node's ranks), so a node `factor` times slow leaves
        `1 - 1/factor` of the time undone, and the checkpoint and end its work reaches later."""
        self._stretch_slow = {name: spell.factor for name, spell in self.slow.items()}
        for job in self.jobs.values():
            if job.started_s is None:
                continue
            factor = max((self._stretch_slow.get(n, 1.0) for n in job.nodes), default=1.0)
            behind = (now_s - job.paced_s) * (1 - 1 / factor)
            job.lag_s += behind
            job.next_checkpoint_s += behind
            job.slow_unsaved_s += behind
            job.paced_s = now_s

    def _keep_slow(self, job: SimJob) -> None:
        """The job saved its work: the time its slow nodes cost since its last save is kept as
        lost to slowness (were it not saved, the attempt's end would lose all of it anyway)."""
        if job.slow_unsaved_s:
            gpus = job.nodes_wanted * self.config.gpus
            lost = self.slow_lost_gpu_s.get(job.id, 0.0) + job.slow_unsaved_s * gpus
            self.slow_lost_gpu_s[job.id] = lost
            job.slow_unsaved_s = 0.0

    def _step_times(self, job: SimJob, steps: int) -> list[Event]:
        """Each host's step times over its last `steps` steps (the stretch since the last tick,
        at the slowness that held over it), as its trainer's log shows them."""
        out = []
        for i, name in enumerate(job.nodes):
            factor = self._stretch_slow.get(name, 1.0)
            payload = step_times(
                name, i * self.config.gpus, steps, job.step, factor, self._slow_rng
            )
            out.append(self._make(self.stamp_logs, StepTimesObserved, job.id, payload))
        return out
