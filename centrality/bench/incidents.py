"""`centrality bench incidents`: what people are told when many nodes fail at once (issue 39),
through the three workers as processes, Kafka, ClickHouse, and a Slack that behaves as Slack
does (`centrality.slack_fake`, in this process, told by the action worker).

A fleet of agents says what each node is, then heartbeats every `interval_s`, each agent at its
own point of the interval. On it, two stories, measured from the outside (record append times,
the status and incidents topics as people read them, what the Slack fake took):

1. **Silent fleet**: every agent stops at once. Targets: every node `unreachable` within
   twice the heartbeat limit of its last heartbeat's record; one incident (`heartbeat_lost`)
   naming every node; ≤ 3 Slack messages (edits in place not counted); no drain. Then the
   heartbeats resume: every node back in service and the incident resolved.
2. **Burst**: fatal XIDs on `burst` nodes within `burst_s`. Targets: each decided (drained, or
   refused by the circuit breaker with its reason) within 5 s p99 of its record; ≤ 10 Slack
   messages in the first minute after the first XID; every call taken by Slack (none refused
   but a 429 waited out, none given up).

A single fatal XID's latency at fleet scale (≤ 1 s p99) is `centrality bench scale`'s figure.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import orjson
import typer
from rich.console import Console

from centrality.bench.cli import bench_app
from centrality.bench.hostile_watch import cpu_s, end_offsets, partitions
from centrality.bench.incidents_fleet import Agents, node_names
from centrality.bench.incidents_phases import (
    Beating,
    BurstOptions,
    Running,
    SilentOptions,
    burst,
    lost_notifications,
    silent_fleet,
)
from centrality.bench.incidents_report import print_result, targets
from centrality.bench.incidents_watch import TOPICS, Watch
from centrality.bench.run import BenchRun, local_stack, tell_result
from centrality.bench.scale import APPEND_TIME, beside, warm_up
from centrality.pipeline import Pipeline
from centrality.slack_fake import SlackFake
from centrality.stack.stack import Stack
from schemas.runtime.admin import ensure_topics
from schemas.runtime.emitter import Emitter
from schemas.runtime.emitter.settings import EmitterSettings
from streams.history.migrations import migrate
from streams.rules.builtin.heartbeat_lost import HeartbeatLostConfig, silence_limit_s
from streams.state.node import Node

CHANNEL = "gpu-incidents"
BENCH = "bench"  # this process: the agents, the watch and the Slack fake


@dataclass(frozen=True)
class Options:
    nodes: int
    burst: int
    burst_s: float
    interval_s: float
    limit_s: float
    beats: int
    tick_s: float
    slack_window_s: float
    seed: int
    ready_timeout_s: float
    phase_timeout_s: float
    keep: bool
    # Targets
    silent_messages_max: int = 3
    burst_p99_max_ms: float = 5000.0
    burst_messages_max: int = 10

    @property
    def rule_limit_s(self) -> float:
        """heartbeat_lost's limit as the rule applies it to agents beating every `interval_s`
        (the longer of `limit_s` and `missed` intervals)."""
        node = Node(node_id=BENCH, cluster=BENCH, heartbeat_interval_s=self.interval_s)
        return silence_limit_s(node, HeartbeatLostConfig(limit_s=self.limit_s))


def worker_env(run: BenchRun, opts: Options, slack: SlackFake) -> dict[str, str]:
    env = {
        **run.env(),
        "CENTRALITY_STREAMS_RULE_CONFIG": orjson.dumps(
            {"heartbeat_lost": {"limit_s": opts.limit_s}}
        ).decode(),
        "CENTRALITY_SLACK_TOKEN": "xoxb-bench",
        "CENTRALITY_SLACK_BASE_URL": slack.base_url,
        "CENTRALITY_SLACK_CHANNEL": f"#{CHANNEL}",
        "CENTRALITY_SLACK_TELLER_GROUP_ID": f"{run.kind}-teller-{run.id}",
    }
    if opts.tick_s:
        env["CENTRALITY_STREAMS_TICK_INTERVAL_S"] = str(opts.tick_s)
    return env


async def measure(
    run: BenchRun, opts: Options, pipeline: Pipeline, slack: SlackFake, progress: Console
) -> dict[str, Any]:
    ready_s = await warm_up(run, pipeline, opts.ready_timeout_s)
    progress.log(f"workers ready in {ready_s:.1f} s; {opts.nodes} agents start")
    watch = Watch(run.kafka, await end_offsets(run.kafka, partitions(run.kafka, TOPICS)))
    running = Running(pipeline, watch, slack)
    pids, others = running.pids(), beside(run.stack)
    spool = EmitterSettings(spool_dir=run.dir / "agents-spool")
    try:
        async with Emitter(run.kafka, spool) as emitter:
            agents = Agents(emitter, node_names(opts.nodes), run.kind, opts.interval_s)
            beating = Beating(agents)
            cpu_before = {**cpu_s(pids), **cpu_s(others), BENCH: time.process_time()}
            began = time.monotonic()
            silent = SilentOptions(opts.beats, opts.rule_limit_s, opts.phase_timeout_s)
            silence = await silent_fleet(running, agents, beating, run.kafka, silent)
            progress.log(f"silent fleet measured; fatal XIDs on {opts.burst} nodes")
            told = BurstOptions(
                opts.burst, opts.burst_s, opts.slack_window_s, opts.seed, opts.phase_timeout_s
            )
            burst_ = await burst(running, agents, told)
            wall_s = time.monotonic() - began
            cpu_after = {**cpu_s(pids), **cpu_s(others), BENCH: time.process_time()}
            await beating.stop()
    finally:
        await watch.close()
    peaks = running.rss.peak_mb()
    cpu = {
        name: round(100 * (cpu_after[name] - cpu_before.get(name, 0.0)) / wall_s, 1)
        for name in cpu_after
    }
    return {
        "silent": silence,
        "burst": burst_,
        "heartbeats_sent": agents.heartbeats,
        "slack_refused": dict(Counter(f"{m}: {e}" for m, e in slack.refusals)),
        "slack_lost": lost_notifications(run.dir / "logs" / "actions.log"),
        "workers": {w: {"cpu_percent": cpu[w], "rss_peak_mb": peaks.get(w)} for w in pids},
        "beside_cpu_percent": {name: cpu[name] for name in (*others, BENCH)},
        "wall_s": round(wall_s, 1),
    }


def run_bench(stack: Stack, opts: Options, progress: Console) -> dict[str, Any]:
    run = BenchRun(stack, "incidents")
    # Latencies run from the broker's append, as in `bench scale`.
    asyncio.run(ensure_topics(run.kafka, extra_configs=APPEND_TIME))
    migrate(run.clickhouse)
    ok = False
    with SlackFake(channels=(CHANNEL,)) as slack:
        pipeline = Pipeline(worker_env(run, opts, slack), run.dir / "logs")
        pipeline.start()
        progress.log(f"workers started on {run.kafka.topic_prefix}*; logs in {run.dir / 'logs'}")
        try:
            result = asyncio.run(measure(run, opts, pipeline, slack, progress))
            result = head(opts) | result
            result["targets"] = targets(result, opts)
            ok = result["ok"] = all(result["targets"].values())
        finally:
            pipeline.stop()
            if not opts.keep:
                with contextlib.suppress(Exception):  # never hide the measurement's own failure
                    asyncio.run(run.delete_topics())
                    run.discard(keep_logs=not ok)
    result["logs"] = None if ok else str(run.dir / "logs")
    return result


def head(opts: Options) -> dict[str, Any]:
    """The run's settings, and what the figures are not."""
    return {
        "nodes": opts.nodes,
        "interval_s": opts.interval_s,
        "heartbeat_limit_s": opts.rule_limit_s,
        "burst_nodes": opts.burst,
        "burst_s": opts.burst_s,
        "notes": [
            f"heartbeat_lost.limit_s={opts.limit_s:g} (CENTRALITY_STREAMS_RULE_CONFIG); agents "
            f"beating every {opts.interval_s:g} s are lost after {opts.rule_limit_s:g} s",
            "a single fatal XID at fleet scale (≤ 1 s p99) is `centrality bench scale`'s "
            "figure (BENCHMARKS.md, Fleet scale), not measured here",
        ],
    }


@bench_app.command("incidents")
def bench_incidents(
    nodes: int = typer.Option(2000, min=2, help="Agents of the fleet."),
    burst_nodes: int = typer.Option(375, "--burst", min=1, help="Nodes raising a fatal XID."),
    burst_s: float = typer.Option(10.0, min=0, help="The burst's XIDs come within this long."),
    interval_s: float = typer.Option(10.0, min=0.5, help="Each agent heartbeats this often."),
    limit_s: float = typer.Option(30.0, min=1, help="heartbeat_lost.limit_s for the workers."),
    beats: int = typer.Option(2, min=1, help="Heartbeat intervals before the fleet falls silent."),
    tick_s: float = typer.Option(0.0, min=0, help="The streams clock's tick; 0: its default."),
    slack_window_s: float = typer.Option(
        60.0, min=1, help="The burst's messages are counted this long after its first XID."
    ),
    seed: int = typer.Option(1, help="Which nodes the burst hits, and when."),
    ready_timeout_s: float = typer.Option(180.0, help="Longest wait for the workers to start."),
    phase_timeout_s: float = typer.Option(300.0, help="Longest wait for each step of a story."),
    keep: bool = typer.Option(False, help="Keep the run's topics, database and logs."),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """A fleet falls silent, then a burst of fatal XIDs, told to a Slack fake.

    Targets: every node unreachable within twice the heartbeat limit, one incident, ≤ 3 messages,
    no drain, all back after; every XID decided within 5 s p99, ≤ 10 messages in the first
    minute, every Slack call taken."""
    if burst_nodes > nodes:
        raise typer.BadParameter(f"a burst of {burst_nodes} in a fleet of {nodes}")
    stack, progress = local_stack()
    opts = Options(
        nodes=nodes,
        burst=burst_nodes,
        burst_s=burst_s,
        interval_s=interval_s,
        limit_s=limit_s,
        beats=beats,
        tick_s=tick_s,
        slack_window_s=slack_window_s,
        seed=seed,
        ready_timeout_s=ready_timeout_s,
        phase_timeout_s=phase_timeout_s,
        keep=keep,
    )
    tell_result(run_bench(stack, opts, progress), json=json, tables=print_result)
