"""`make demo`: a small simulated cluster with faults, through the real workers, narrated.

A 32-node cluster of two GPU models (H100s, and eight A100s) heartbeats; five jobs and two nodes
misbehave in the ways clusters do. The streams worker decides, the action worker acts (scheduler
adapter `memory`, which records instead of draining, and answers benchmarks as a healthy GPU of
the node's model would, except for the nodes told to fail), Slack is a local fake that answers
as Slack does, and everything is read back from ClickHouse:

- a crash is restarted from its checkpoint; a finished job is left alone;
- a preempted job is requeued but never counted as a failure against its nodes;
- a fatal XID, and five failures on one node set, each end in drain → benchmark → verdict →
  release or keep, every step taken on the previous step's outcome; each verdict is judged
  against the datasheet of the node's GPU model (docs/remediation.md): the A100 at an A100's
  figures is released, the H100 at an A100's figures (its runner passes it) is kept;
- an allocation idling on its GPUs is flagged;
- on two nodes a remediation ladder is configured (docs/remediation.md): one climbs GPU reset →
  validation → reboot → validation and is released, the other is rebooted, still fails, and is
  escalated to a person (Slack, and a ticket through a local webhook). The demo plays the
  scheduler for the reboots: the node reported down, then back, as the Slurm watcher would;
- a node slows its job (its host's step times creep up to 1.8x the others'): it is taken out at
  the job's next checkpoint, not mid-interval, and the job restarts from that checkpoint without
  it; the decision says the GPU-hours it saves against taking it out at once (docs/rules.md);
- then the timelines of one job and two nodes, from ClickHouse.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.tree import Tree

from centrality.bench.run import BenchRun
from centrality.console.settings import ConsoleSettings
from centrality.history_cli import print_events, summary
from centrality.pipeline import Pipeline
from centrality.slack_fake import Channel, Message, SlackFake
from centrality.slack_render import render_thread
from centrality.stack.stack import Stack
from centrality.webhook_stub import WebhookStub
from schemas.envelope import Event, utcnow
from schemas.events import (
    BenchmarkCompleted,
    CheckpointSaved,
    GpuSampled,
    GpuXidObserved,
    JobExited,
    JobStateChanged,
    LogSignalDetected,
    NodeFactsObserved,
    NodeHeartbeat,
    NodeStateObserved,
    Notify,
    QuarantineNodes,
    ReleaseNodes,
    StepTimesObserved,
)
from schemas.events.nodes import DRAIN_REASON_PREFIX
from schemas.runtime.admin import ensure_topics
from schemas.runtime.emitter import Emitter
from schemas.signing import SigningSettings, ensure_key_file
from streams.history.migrations import migrate
from streams.history.query import HistoryRow, rows_for, wait_for
from streams.history.settings import ClickHouseSettings
from streams.history.timeline import timeline

SOURCE = "demo"
SLACK_QUIET_S = 5.0  # no call to Slack for this long: the worker told it all
CLUSTER = "demo"
FLEET = 32
GPUS = 8
H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"  # as NVML names them
A100_NODES = range(9, 17)  # the rest are H100s
SLOWED_ON = tuple(f"gpu-node-{n:02d}" for n in range(25, 29))
SLOW = SLOWED_ON[2]
# Failures are counted over any hour (hopping windows, a 5-minute hop), not clock hours, so five
# failures in 40 minutes count wherever the hour boundary falls.
RULES: dict[str, Any] = {
    "repeated_failures_on_node_set": {"window": {"window_s": 3600, "hop_s": 300}},
    # The remediation ladder, on two nodes only: the others keep the plain story.
    "quarantine_story": {"ladders": [{"nodes": "gpu-node-2[0-1]"}]},
}


def node(n: int) -> str:
    return f"gpu-node-{n:02d}"


def gpu_model(n: int) -> str:
    return A100 if n in A100_NODES else H100


@dataclass
class Story:
    """What the demo sends, and the subjects whose outcomes it waits for."""

    jobs: dict[str, str]  # role → job id
    nodes: dict[str, str]  # role → node id
    events: list[Event] = field(default_factory=list)

    @property
    def subjects(self) -> list[str]:
        return [*self.jobs.values(), *self.nodes.values()]


Stamp = Callable[[str, float], dict[str, Any]]  # (subject, minutes in) → an event's envelope


def story(run: str, now: datetime) -> Story:
    s = Story(
        jobs={
            r: f"slurm/{CLUSTER}/{run}-{r}"
            for r in ("crash", "done", "preempt", "flaky", "idle", "slowed")
        },
        nodes={
            "xid": node(11),
            "healthy": node(5),
            "broken": node(6),
            "idle": node(12),
            "ladder": node(20),
            "escalated": node(21),
            "slow": SLOW,
        },
    )
    at = _stamps(now - timedelta(minutes=75))
    j = s.jobs
    s.events += _fleet(at)
    s.events += _job_ends(j, run, at)
    s.events += _gpu_faults(at)
    s.events += _attempt(at, j["slowed"], 1, SLOWED_ON, 0, 0, tuple(_slowed(j["slowed"], at)))
    s.events += _idle(j["idle"], at)
    return s


def _stamps(t0: datetime) -> Stamp:
    def at(subject: str, minutes: float) -> dict[str, Any]:
        when = t0 + timedelta(minutes=minutes)
        return {"source": SOURCE, "cluster": CLUSTER, "subject": subject, "occurred_at": when}

    return at


def _attempt(
    at: Stamp,
    job: str,
    n: int,
    nodes: tuple[str, ...],
    start: float,
    end: float,
    during: tuple[Event, ...] = (),
    **how: Any,
) -> list[Event]:
    """One attempt of a job: it runs, `during` happens, and it exits as `how` says (with no
    `how`, it is still running)."""
    events: list[Event] = [
        JobStateChanged(
            **at(job, start),
            payload={"state": "RUNNING", "raw_state": "RUNNING", "attempt": n, "nodes": nodes},
        ),
        *during,
    ]
    if how:
        events.append(JobExited(**at(job, end), payload={"attempt": n, "nodes": nodes, **how}))
    return events


def _fleet(at: Stamp) -> list[Event]:
    # The fleet the circuit breaker counts: every node heartbeating now.
    heartbeats: list[Event] = [
        NodeHeartbeat(
            **at(node(i), 75), payload={"agent_version": "demo", "gpus": GPUS, "interval_s": 30}
        )
        for i in range(1, FLEET + 1)
    ]
    # What each node's agent read from NVML: the model its benchmarks are judged against.
    return heartbeats + [
        NodeFactsObserved(**at(node(i), 0), payload={"gpu_model": gpu_model(i), "gpu_count": GPUS})
        for i in range(1, FLEET + 1)
    ]


def _job_ends(j: dict[str, str], run: str, at: Stamp) -> list[Event]:
    """A crash after a checkpoint, a finished job, a preempted one and a failing one."""
    checkpoint = CheckpointSaved(
        **at(j["crash"], 20), payload={"step": 1200, "uri": f"s3://ckpt/{run}/step-1200"}
    )
    e = _attempt(
        at, j["crash"], 1, (node(1), node(2)), 0, 30, (checkpoint,), state="FAILED", exit_code=1
    )
    finished = LogSignalDetected(
        **at(j["done"], 39.9),
        payload={
            "signal": "TRAINING_COMPLETE",
            "line": "`Trainer.fit` stopped: `max_epochs=3` reached.",
        },
    )
    e += _attempt(
        at, j["done"], 1, (node(3), node(4)), 0, 40, (finished,), state="SUCCEEDED", exit_code=0
    )
    for n in range(1, 6):  # preempted five times on one node set: never a failure there
        e += _attempt(
            at,
            j["preempt"],
            n,
            (node(7), node(8)),
            10 * n,
            10 * n + 5,
            state="PREEMPTED",
            raw_state="PREEMPTED",
        )
    for n in range(1, 6):  # failed five times on one node set: those nodes are suspect
        e += _attempt(
            at, j["flaky"], n, (node(5), node(6)), 10 * n, 10 * n + 5, state="FAILED", exit_code=134
        )
    return e


def _gpu_faults(at: Stamp) -> list[Event]:
    """A fatal XID on an A100, and the two nodes the remediation ladder is configured on."""
    return [
        GpuXidObserved(
            **at(node(11), 70),
            payload={"gpu": 3, "xid": 79, "message": "GPU has fallen off the bus."},
        ),
        # The ladder: Xid 48 (NVIDIA: reset the GPU) on a node a reboot cures; Xid 79 (reboot)
        # on one whose GPUs nothing cures. The agent reported its boards' serials (for the
        # ticket).
        NodeFactsObserved(
            **at(node(21), 60),
            payload={"gpu_serials": [f"16537240{2536 + g}" for g in range(GPUS)]},
        ),
        GpuXidObserved(
            **at(node(20), 71), payload={"gpu": 2, "xid": 48, "message": "DBE (0x1) detected"}
        ),
        GpuXidObserved(
            **at(node(21), 72),
            payload={"gpu": 5, "xid": 79, "message": "GPU has fallen off the bus."},
        ),
    ]


def _idle(job: str, at: Stamp) -> list[Event]:
    """A job holding gpu-node-12, whose GPUs do nothing."""
    return _attempt(at, job, 1, (node(12),), 0, 0) + [
        GpuSampled(**at(node(12), minutes), payload={"gpu": g, "utilization_pct": 0.0})
        for minutes in (1, 74)
        for g in range(GPUS)
    ]


def _slowed(job: str, at: Stamp) -> list[Event]:
    """A job on four nodes that checkpoints every 15 minutes; from minute 41 one host's steps
    creep up to 1.8x the others' (a GPU heating up), a step-time summary a minute per host."""
    out: list[Event] = [
        CheckpointSaved(**at(job, m), payload={"step": 100 * m, "uri": f"s3://ckpt/slowed/{m}"})
        for m in range(5, 70, 15)
    ]
    for m in range(1, 56):
        for host in SLOWED_ON:
            seconds = min(1.8, 1.0 + 0.1 * max(0, m - 40)) if host == SLOW else 1.0
            out.append(
                StepTimesObserved(
                    **at(job, m),
                    payload={"node": host, "steps": 60, "median_s": seconds, "max_s": seconds},
                )
            )
    return sorted(out, key=lambda e: e.occurred_at)


def missing(s: Story, rows: list[HistoryRow]) -> list[str]:
    """The outcomes the demo narrates that have not reached ClickHouse yet."""
    acted = {(r.subject, _p(r).get("trigger_type")) for r in rows if r.type == "ActionSucceeded"}
    done = {_p(r).get("trigger_id") for r in rows if r.type == "ActionSucceeded"}
    told = {(r.subject, _p(r).get("rule")) for r in rows if r.type == "Notify"}
    told_done = {
        (r.subject, _p(r).get("rule")) for r in rows if r.type == "Notify" and r.event_id in done
    }
    wanted = [
        (s.jobs["crash"], "RestartJob"),
        (s.nodes["xid"], "ReleaseNodes"),
        (s.nodes["healthy"], "ReleaseNodes"),
        (s.nodes["ladder"], "ReleaseNodes"),
        (s.nodes["escalated"], "EscalateNodes"),
        (s.nodes["slow"], "QuarantineNodes"),
        (s.jobs["slowed"], "RestartJob"),
    ]
    notices = [(s.nodes["broken"], "benchmark_verdict"), (s.jobs["idle"], "idle_allocation")]
    return [f"{t} done for {subject}" for subject, t in wanted if (subject, t) not in acted] + [
        f"{rule} told about {subject}"
        for subject, rule in notices
        if (subject, rule) not in told or (subject, rule) not in told_done
    ]


def _p(row: HistoryRow) -> dict[str, Any]:
    payload: dict[str, Any] = json.loads(row.payload)
    return payload


def rebooted(rows: list[HistoryRow]) -> list[tuple[str, str]]:
    """(node, why) of every reboot the scheduler took (its action succeeded)."""
    return [
        (r.subject, str(_p(r).get("reason", "")))
        for r in rows
        if r.type == "ActionSucceeded" and _p(r).get("trigger_type") == "RebootNodes"
    ]


def back_from_reboot(node_id: str, why: str) -> list[NodeStateObserved]:
    """What the Slurm watcher reports of a node rebooted through `scontrol reboot`: down while
    it reboots, then back, still drained (it is validated before it takes work)."""
    reason = f"{DRAIN_REASON_PREFIX} {why} : reboot issued"[:1000]
    now = utcnow()
    return [
        NodeStateObserved(
            source="demo/scheduler",
            cluster=CLUSTER,
            subject=node_id,
            occurred_at=now + timedelta(milliseconds=i),
            payload={"state": state, "raw_state": raw, "reason": reason, "scheduler": "slurm"},
        )
        for i, (state, raw) in enumerate(
            (("DOWN", "DOWN+DRAIN+REBOOT_ISSUED"), ("DRAINED", "IDLE+DRAIN"))
        )
    ]


@dataclass
class DemoResult:
    story: Story
    rows: list[HistoryRow]
    slack: list[dict[str, Any]]  # every message posted, as posted
    tickets: list[dict[str, Any]] = field(default_factory=list)
    threads: list[tuple[Channel, list[Message]]] = field(default_factory=list)  # as seen now
    slack_refusals: list[tuple[str, str]] = field(default_factory=list)


def run_demo(
    console: Console,
    *,
    stack: Stack | None = None,
    env: dict[str, str] | None = None,
    log_dir: Path | None = None,
    timeout_s: float = 180.0,
    keep: bool = False,
) -> DemoResult:
    """Run the story through the three workers. Without `stack`, the local stack is brought up;
    a test passes its own running stack and `env` (topic prefix, database, groups). Without
    `env`, the demo names its own topics, database and groups, so its fleet never enters the
    user's history, and deletes them afterwards unless `keep`."""
    console.rule("[bold]Centrality: a small cluster having a bad day")
    if stack is None:
        ensure_key_file(SigningSettings().key_file)  # as `centrality up`: the workers sign with it
        stack = Stack()
        with console.status("bringing up the local stack (Kafka + ClickHouse)…"):
            stack.up(progress=lambda msg: console.log(msg))
    own = None
    if env is None:
        own = BenchRun(stack, "demo")
        asyncio.run(ensure_topics(own.kafka))
        migrate(own.clickhouse)
        env = own.env()
    try:
        return _run(console, stack, env, log_dir, timeout_s)
    finally:
        if own is not None and keep:
            console.log(
                f"kept: topics {own.kafka.topic_prefix}*, ClickHouse database "
                f"{own.clickhouse.database}"
            )
        elif own is not None:
            with contextlib.suppress(Exception):  # never hide the demo's own failure
                asyncio.run(own.delete_topics())
                own.discard(keep_logs=False)


def _run(
    console: Console, stack: Stack, env: dict[str, str], log_dir: Path | None, timeout_s: float
) -> DemoResult:
    clickhouse = _clickhouse(stack, env)
    s = story(uuid.uuid4().hex[:6], datetime.now(UTC))
    log_dir = log_dir or stack.settings.state_dir / "run" / "demo"
    with SlackFake() as slack, WebhookStub() as tickets:
        workers = _workers_env(stack, env, s, slack.base_url, tickets.url)
        with Pipeline(workers, log_dir) as pipeline:
            console.log(f"workers started (streams, actions, sink); their logs in {log_dir}")
            asyncio.run(_emit(stack, workers, s.events))
            console.log(
                f"a {FLEET}-node cluster sent {len(s.events)} events (jobs, XIDs, GPU samples)"
            )
            with console.status("the workers decide and act; waiting for it all in ClickHouse…"):
                rows = _settle(clickhouse, stack, workers, s, pipeline, timeout_s)
            with console.status("the action worker tells Slack, a message a second…"):
                slack.wait_quiet(SLACK_QUIET_S, timeout_s)
        result = DemoResult(
            s,
            rows,
            list(slack.posts),
            list(tickets.documents),
            slack.threads(),
            list(slack.refusals),
        )
    narrate(console, result, clickhouse)
    return result


def _workers_env(
    stack: Stack, env: dict[str, str], s: Story, slack_url: str, tickets_url: str
) -> dict[str, str]:
    """The workers' environment: the stack's and `env`, the local Slack and ticket webhook, and
    what the memory adapter is to answer for the story's nodes."""
    return {
        **stack.env(),
        **env,
        "CENTRALITY_SLACK_TOKEN": "xoxb-demo",
        "CENTRALITY_SLACK_BASE_URL": slack_url,
        "CENTRALITY_SLACK_CHANNEL": "#gpu-incidents",
        # The demo plays hours of a cluster's day in a minute: every message is told on its
        # own at Slack's pace (a message a second), none folded into a digest.
        "CENTRALITY_SLACK_BACKLOG_MAX": "200",
        "CENTRALITY_WEBHOOK_URL": tickets_url,
        "CENTRALITY_STREAMS_RULE_CONFIG": json.dumps(RULES),
        # Six nodes are drained within the hour: a fifth of the fleet may be.
        "CENTRALITY_ACTIONS_QUARANTINE_MAX_SHARE": "0.2",
        "CENTRALITY_MEMORY_UNHEALTHY": json.dumps(
            {
                s.nodes["ladder"]: "GPU 2 at 180 TFLOP/s (< 600)",
                s.nodes["escalated"]: "GPU 5 at 0 TFLOP/s: not found",
            }
        ),
        "CENTRALITY_MEMORY_HEALED_BY": json.dumps({s.nodes["ladder"]: "reboot"}),
        "CENTRALITY_MEMORY_GPU_MODELS": json.dumps(
            {node(i): gpu_model(i) for i in range(1, FLEET + 1)}
        ),
        # Its runner (no thresholds) passes it; the H100 datasheet does not.
        "CENTRALITY_MEMORY_PERFORMS_AS": json.dumps({s.nodes["broken"]: A100}),
    }


def _settle(
    clickhouse: ClickHouseSettings,
    stack: Stack,
    workers: dict[str, str],
    s: Story,
    pipeline: Pipeline,
    timeout_s: float,
) -> list[HistoryRow]:
    """The story's rows once nothing the demo narrates is missing from ClickHouse."""
    booted: set[str] = set()

    def settled(rows: list[HistoryRow]) -> bool:
        """Done once nothing is missing; meanwhile, as the scheduler, each node whose
        reboot was taken comes back."""
        back: list[Event] = [
            e for n, why in rebooted(rows) if n not in booted for e in back_from_reboot(n, why)
        ]
        if back:
            asyncio.run(_emit(stack, workers, back))
            booted.update(e.subject for e in back)
        return not missing(s, rows)

    try:
        return wait_for(clickhouse, s.subjects, settled, timeout_s, pipeline.check)
    except TimeoutError as exc:
        still = missing(s, rows_for(clickhouse, s.subjects))
        raise TimeoutError(f"{exc}; still missing: {still}") from None


def _clickhouse(stack: Stack, env: dict[str, str]) -> ClickHouseSettings:
    database = env.get("CENTRALITY_CLICKHOUSE_DATABASE")
    return (
        stack.clickhouse.model_copy(update={"database": database}) if database else stack.clickhouse
    )


async def _emit(stack: Stack, env: dict[str, str], events: list[Event]) -> None:
    prefix = env.get("CENTRALITY_KAFKA_TOPIC_PREFIX")
    kafka = stack.kafka.model_copy(update={"topic_prefix": prefix}) if prefix else stack.kafka
    async with Emitter(kafka) as emitter:
        for event in events:
            await emitter.emit(event)
        await emitter.flush()


STORY_TYPES = frozenset(
    {
        "RestartJob", "QuarantineNodes", "RunBenchmark", "BenchmarkCompleted", "ReleaseNodes",
        "Notify", "CancelJob", "ActionSucceeded", "ActionFailed", "ResetGpus", "RebootNodes",
        "EscalateNodes", "NodeStateObserved",
    }
)  # fmt: skip


def _chain(title: str, events: list[Event], skip: str = "") -> Tree:
    """`skip`: a trigger type told elsewhere (a node's jobs' restarts in a node's story)."""
    tree = Tree(title)
    for e in events:
        answers = getattr(e.payload, "trigger_type", None)
        if e.type in STORY_TYPES and skip not in (e.type, answers):
            tree.add(f"{e.occurred_at:%H:%M:%S}  [bold]{e.type}[/] {escape(summary(e))}")
    return tree


def _judged(node_id: str, events: list[Event]) -> str:
    """One line: the runner's verdict, and what the streams made of it, and why."""
    runner = [e.payload.verdict for e in events if isinstance(e, BenchmarkCompleted)]
    for e in events:
        if isinstance(e, ReleaseNodes):
            return f"{node_id}: runner {'/'.join(runner)} → [green]released[/]: {e.payload.reason}"
        if isinstance(e, Notify) and e.payload.rule == "benchmark_verdict":
            first, *more = e.payload.reason.split("; ")
            also = f" (and {len(more)} more)" if more else ""
            return f"{node_id}: runner {'/'.join(runner)} → [red]kept[/]: {first}{also}"
    return f"{node_id}: no verdict yet"


def _planned(events: list[Event]) -> list[Event]:
    """The slow node's own decisions (its plan, its quarantine and what was done about it)."""
    return [e for e in events if e.type in STORY_TYPES and e.type != "NodeStateObserved"]


def _saving(events: list[Event]) -> str:
    """The quarantine carried out at the checkpoint, with the figures the rule weighed."""
    for e in events:
        if isinstance(e, QuarantineNodes) and e.payload.timing is not None:
            t = e.payload.timing
            ways = ", ".join(f"{k.replace('_', ' ')} {v:.1f}" for k, v in t.gpu_h.of().items())
            return (
                f"{e.payload.nodes[0]} out {t.chosen.replace('_', ' ')}: "
                f"{t.saved_gpu_h:.1f} GPU-h saved against taking it out at once "
                f"(expected GPU-h of each way: {ways})"
            )
    return "no timed quarantine yet"


Timelines = Callable[[Literal["job", "node"], str], list[Event]]  # a subject's, from ClickHouse


def narrate(console: Console, r: DemoResult, clickhouse: ClickHouseSettings) -> None:
    j, n = r.story.jobs, r.story.nodes
    since, until = datetime.now(UTC) - timedelta(hours=2), datetime.now(UTC) + timedelta(minutes=1)

    def of(kind: Literal["job", "node"], subject: str) -> list[Event]:
        return timeline(clickhouse, kind, subject, since, until)

    crash = of("job", j["crash"])
    _tell_jobs(console, r.story, crash, of)
    _tell_verdicts(console, n, of)
    idle = [e for e in of("job", j["idle"]) if e.type in STORY_TYPES]
    console.print(
        Panel(_chain(f"{j['idle']} holds {n['idle']}", idle), title="5. an idle allocation")
    )
    _tell_ladder(console, n, of)
    _tell_slow_node(console, r.story, of)
    _tell_tickets(console, r.tickets)
    console.rule("[bold]What Slack was told")
    for channel, thread in r.threads:
        console.print(render_thread(channel.name, thread))
    console.rule("[bold]Timelines, read back from ClickHouse")
    print_events(f"job {j['crash']}", crash, console)
    print_events(f"node {n['broken']}", of("node", n["broken"]), console)
    print_events(f"node {n['ladder']}", of("node", n["ladder"]), console)
    console.print(
        "The stack keeps running; `make down` stops it. "
        "`centrality history job|node ID` tells any other story."
    )
    where = ConsoleSettings().address()
    console.print(f"The web console: `centrality console`, at {where} (with its login token).")


def _tell_jobs(console: Console, s: Story, crash: list[Event], of: Timelines) -> None:
    """1-3: a crash restarted, a finished job left alone, a preempted one requeued."""
    j = s.jobs
    console.print(Panel(_chain(f"{j['crash']} crashed after its step-1200 checkpoint", crash),
                        title="1. a crash is restarted from its checkpoint"))  # fmt: skip
    decided = [e for e in of("job", j["done"]) if e.type in STORY_TYPES]
    verdict = "[green]left alone[/]" if not decided else f"[red]{len(decided)} decisions[/]"
    console.print(Panel(f"{j['done']} logged `Trainer.fit` stopped and exited 0: {verdict}",
                        title="2. a finished job is left alone"))  # fmt: skip
    drained = [
        e for n7 in (node(7), node(8)) for e in of("node", n7) if e.type == "QuarantineNodes"
    ]
    requeued = [e for e in of("job", j["preempt"]) if e.type == "RestartJob"]
    counted = "[green]no failure counted against its nodes[/]" if not drained else "[red]drained[/]"
    console.print(Panel(f"{j['preempt']} was preempted 5 times on gpu-node-07/08: requeued "
                        f"({len(requeued)} RestartJob) and {counted}",
                        title="3. preemption is not failure"))  # fmt: skip


def _tell_verdicts(console: Console, n: dict[str, str], of: Timelines) -> None:
    """4: three nodes drained, benchmarked and judged against their GPU model's datasheet."""
    benchmarked = {role: of("node", n[role]) for role in ("xid", "healthy", "broken")}
    for role, why in (
        ("xid", "an A100: a fatal XID 79"),
        ("healthy", "an H100: 5 failed attempts on gpu-node-05/06"),
        ("broken", "an H100: the same 5 failed attempts; its GPUs reach an A100's figures"),
    ):
        console.print(Panel(_chain(f"{n[role]}: {why}", benchmarked[role], skip="RestartJob"),
                            title="4. drain → benchmark → verdict → release or keep"))  # fmt: skip
    console.print(
        Panel(
            "\n".join(_judged(n[role], benchmarked[role]) for role in ("xid", "broken")),
            title="each verdict is judged against the datasheet of the node's GPU model",
        )
    )


def _tell_ladder(console: Console, n: dict[str, str], of: Timelines) -> None:
    """6: one node climbs the remediation ladder back, the other is escalated."""
    for role, why in (
        ("ladder", "Xid 48 (double-bit ECC): reset, validate, reboot, validate"),
        ("escalated", "Xid 79 (off the bus): reboot, validate, escalate"),
    ):
        console.print(Panel(_chain(f"{n[role]}: {why}", of("node", n[role]), skip="RestartJob"),
                            title="6. the remediation ladder"))  # fmt: skip


def _tell_slow_node(console: Console, s: Story, of: Timelines) -> None:
    """7: the slow node, out at its job's checkpoint, and what waiting for it saved."""
    j, n = s.jobs, s.nodes
    slow = of("node", n["slow"])
    console.print(Panel(_chain(f"{n['slow']} slows {j['slowed']}", [*_planned(slow),
                        *of("job", j["slowed"])]), title="7. a slow node, out at its job's "
                        "checkpoint"))  # fmt: skip
    console.print(Panel(_saving(slow), title="what waiting for the checkpoint saved"))


def _tell_tickets(console: Console, tickets: list[dict[str, Any]]) -> None:
    for ticket in tickets:
        console.print(
            Panel(
                "\n".join(
                    [f"nodes: {', '.join(ticket['nodes'])}   XIDs: {ticket['xids']}"]
                    + [f"tried: {t}" for t in ticket["tried"]]
                    + [f"serials: {ticket['serials']}"]
                ),
                title="the ticket the escalation filed (webhook)",
            )
        )
