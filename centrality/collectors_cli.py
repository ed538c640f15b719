"""Collector commands: `agent`, `tail`, `checkpoints`, `nccl`, `simulate`, `watch …`."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import orjson
import typer
from pydantic_settings import BaseSettings
from rich.console import Console
from rich.table import Table

from centrality.progress import tracking, wanted
from centrality.runner import run_until_signalled
from collectors.sink import EventSink, RecordingSink
from schemas.runtime.logs import configure_logging

if TYPE_CHECKING:
    from collectors.nccl.output import NcclOutput
    from collectors.nccl.ras import RasProcess
    from collectors.simulate.config import SimConfig
    from collectors.simulate.runner import SimStats
    from schemas.events import NcclSampled

console = Console(stderr=True)
S = TypeVar("S", bound=BaseSettings)

DRY_RUN = typer.Option(False, "--dry-run", help="Count events instead of sending them to Kafka.")
# What collectors send to: observations, never a decision, a result or an operator's word.
COLLECTED = ("jobs", "logs", "nodes", "gpu")


@contextlib.asynccontextmanager
async def open_sink(dry_run: bool, *, one_shot: bool = False) -> AsyncIterator[EventSink]:
    """Where a collector's events go. A long-running collector spools what Kafka does not take
    and sends it later; a `one_shot` command fails instead (`centrality.oneshot`)."""
    if dry_run:
        yield RecordingSink(keep=False)
        return
    from centrality.oneshot import sending
    from schemas.runtime.metrics.server import watch_kafka
    from schemas.runtime.settings import KafkaSettings

    kafka = KafkaSettings()
    watch_kafka(kafka)
    async with sending(kafka, spool=not one_shot) as emitter:
        yield emitter


def _override(settings: S, **options: Any) -> S:
    """Command-line options win over the environment; unset options leave it alone."""
    return settings.model_validate(
        {**settings.model_dump(), **{k: v for k, v in options.items() if v is not None}}
    )


def _serve(
    worker: str,
    dry_run: bool,
    make: Callable[[EventSink], Callable[[asyncio.Event], Coroutine[Any, Any, None]]],
) -> None:
    from schemas.runtime.settings import KafkaSettings
    from schemas.topics import topic_name

    configure_logging()

    async def main(stop: asyncio.Event) -> None:
        async with open_sink(dry_run) as sink:
            await make(sink)(stop)

    # Kafka away is waited out (events spool meanwhile); Kafka without the topics is not.
    kafka = None if dry_run else KafkaSettings()
    topics = [topic_name(name, kafka) for name in COLLECTED] if kafka else []
    run_until_signalled(main, worker=worker, kafka=kafka, topics=topics)


def agent(
    backend: str | None = typer.Option(None, help="nvml or fake (CENTRALITY_AGENT_BACKEND)."),
    fake_gpus: int | None = typer.Option(None, help="GPUs of the fake backend."),
    fault: Annotated[
        list[str] | None, typer.Option(help="Fake fault kind:gpu:at_s[:value[:every_s]].")
    ] = None,
    interval_s: float | None = typer.Option(None, help="GPU sampling interval."),
    checks_dir: Annotated[Path | None, typer.Option(help="Directory of executable checks.")] = None,
    dry_run: bool = DRY_RUN,
) -> None:
    """Run the node agent: GPU samples, XIDs, heartbeats, health checks."""
    from collectors.agent.agent import NodeAgent
    from collectors.agent.backends import make_backend
    from collectors.agent.settings import AgentSettings

    settings = _override(
        AgentSettings(),
        backend=backend,
        fake_gpus=fake_gpus,
        fake_faults=tuple(fault) if fault else None,
        interval_s=interval_s,
        checks_dir=checks_dir,
    )
    _serve("agent", dry_run, lambda sink: NodeAgent(settings, make_backend(settings), sink).run)


def tail(
    paths: Annotated[
        list[str] | None, typer.Argument(help="Globs to follow (CENTRALITY_TAIL_PATHS).")
    ] = None,
    dry_run: bool = DRY_RUN,
) -> None:
    """Follow log files: lines per job, and signals (Training Complete, NCCL, CUDA, OOM, …)."""
    from collectors.logs.settings import TailSettings
    from collectors.logs.tailer import LogTailer

    settings = _override(TailSettings(), paths=tuple(paths) if paths else None)
    _serve("tail", dry_run, lambda sink: LogTailer(settings, sink).run)


def checkpoints(
    roots: Annotated[list[str] | None, typer.Argument(help="Checkpoint directory globs.")] = None,
    job: str | None = typer.Option(None, help="Job id the checkpoints belong to."),
    dry_run: bool = DRY_RUN,
) -> None:
    """Watch checkpoint directories and `*.COMPLETE` sentinels → CheckpointSaved."""
    from collectors.checkpoints.settings import CheckpointSettings
    from collectors.checkpoints.watcher import CheckpointWatcher

    settings = _override(CheckpointSettings(), roots=tuple(roots) if roots else None, job=job)
    _serve("checkpoints", dry_run, lambda sink: CheckpointWatcher(settings, sink).run)


def nccl(
    path: Annotated[Path, typer.Argument(help="nccl-tests output (NCCL debug lines too).")],
    node: str | None = typer.Option(None, help="Node id (default: this host)."),
    job: str | None = typer.Option(None, help="Job the measurement belongs to."),
    collective: str | None = typer.Option(None, help="e.g. all_reduce, if the file never says."),
    cluster: str = typer.Option("default", help="Cluster name."),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
    dry_run: bool = DRY_RUN,
) -> None:
    """Parse an NCCL output file and send its rows as NcclSampled (one message).

    Runs that failed nccl-tests' correctness check are reported, never sent; the exit code is
    1 when any did. A RAS report (`ncclras` output, NCCL 2.24+) is read too: the processes RAS
    declared dead or could not reach, and its errors (exit code 1 when it has any); with --job,
    each such process is sent as the job's LogSignalDetected naming its node as the peer.
    """
    from collectors.events import Stamp, hostname
    from collectors.nccl.events import nccl_events, ras_events, rejected
    from collectors.nccl.parse import parse_nccl_output
    from collectors.nccl.ras import read_ras

    text = path.read_text(errors="replace")
    output = parse_nccl_output(text.splitlines(), collective)
    ras = read_ras(text)
    name = node or hostname()
    stamp = Stamp(f"nccl@{name}", cluster)
    events = nccl_events(output, stamp, name, job)
    signals = ras_events(ras, stamp, name, job) if ras is not None and job else []

    async def send() -> None:
        async with open_sink(dry_run) as sink:
            if events:
                await sink.emit_batch(events)
            for signal in signals:
                await sink.emit(signal)

    asyncio.run(send())
    failed = rejected(output)
    summary = _nccl_summary(output, events, failed)
    if ras is not None:
        summary["ras"] = {
            "errors": ras.errors,
            "warnings": ras.warnings,
            "dead": [_process(p) for p in ras.dead],
            "unreachable": [_process(p) for p in ras.unreachable],
            "nodes": ras.nodes,
            "signals_sent": len(signals),
        }
    if json:
        print(orjson.dumps(summary).decode())
    else:
        console.print(summary)
    if failed or (ras is not None and ras.failed):
        raise typer.Exit(1)


def _nccl_summary(
    output: NcclOutput, events: list[NcclSampled], failed: list[str]
) -> dict[str, Any]:
    slowest = output.slowest_init
    return {
        "rows": len(output.rows),
        "sent": len(events),
        "ranks": output.nranks,
        "avg_busbw_gbps": [r.avg_busbw_gbps for r in output.runs],
        "max_busbw_gbps": max((e.payload.busbw_gbps for e in events), default=None),
        "invalid_runs": failed,
        "warnings": output.warnings,
        "nccl_version": output.nccl_version,
        "communicators": len(output.comm_ranks),
        "nodes_per_communicator": sorted(set(output.comm_nodes.values())),
        "slowest_init": vars(slowest) if slowest else None,
        "ran_alone": output.alone,
    }


def _process(p: RasProcess) -> dict[str, Any]:
    return {"pid": p.pid, "node": p.node, "gpus": list(p.gpus), "rank": p.rank}


BAD_NODES = typer.Option(
    0,
    help="Nodes with a recurring fatal XID whose benchmark fails, so they stay out: written "
    "to CENTRALITY_MEMORY_UNHEALTHY_FILE, which the action worker's memory adapter reads.",
)
GpuModels = Annotated[
    list[str] | None,
    typer.Option(help="GPU model of the nodes (repeat for a mixed fleet, given in turn)."),
]
SPOOL = typer.Option(
    False,
    "--spool",
    help="Keep what Kafka does not take in the spool for later, as an agent does; "
    "without it, anything undelivered at the end fails the command (exit 1).",
)


def simulate(
    nodes: int = typer.Option(16, help="Nodes in the cluster."),
    gpus: int = typer.Option(8, help="GPUs per node."),
    jobs: int = typer.Option(4, help="Jobs running at once."),
    seed: int = typer.Option(0, help="The same seed, the same nodes, jobs and faults."),
    duration_s: float = typer.Option(600.0, help="Simulated time."),
    speed: float = typer.Option(0.0, help="1 real time, 60 a minute a second, 0 flat out."),
    interval_s: float = typer.Option(10.0, help="Sampling interval (tick)."),
    xid_nodes: int = typer.Option(0, help="Nodes with a recurring fatal XID (benchmark passes)."),
    bad_nodes: int = BAD_NODES,
    crash_jobs: int = typer.Option(0, help="Jobs that crash without completing."),
    preempt_jobs: int = typer.Option(0, help="Jobs that are preempted."),
    slow_nccl_jobs: int = typer.Option(0, help="Jobs whose NCCL runs at ~20% of its busbw."),
    lost_heartbeat_nodes: int = typer.Option(0, help="Nodes whose agent dies."),
    cluster: str = typer.Option("sim", help="The cluster its events name."),
    gpu_model: GpuModels = None,
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
    dry_run: bool = DRY_RUN,
    spool: bool = SPOOL,
) -> None:
    """Simulate a cluster (N nodes x G GPUs, M jobs, faults) through the Emitter.

    Unpaced (--speed 0) the simulated period ends now; paced faster than real time, when the run
    does: no event is stamped ahead of the clock. Prints which nodes and jobs it faulted, and
    how."""
    from collectors.simulate.config import SimConfig

    config = SimConfig(
        nodes=nodes,
        gpus=gpus,
        jobs=jobs,
        seed=seed,
        cluster=cluster,
        interval_s=interval_s,
        xid_nodes=xid_nodes,
        bad_nodes=bad_nodes,
        crash_jobs=crash_jobs,
        preempt_jobs=preempt_jobs,
        slow_nccl_jobs=slow_nccl_jobs,
        lost_heartbeat_nodes=lost_heartbeat_nodes,
        **({"gpu_models": tuple(gpu_model)} if gpu_model else {}),
    )
    configure_logging(level="WARNING")
    _tell_the_benchmark(config, dry_run)

    async def main(stop: asyncio.Event) -> None:
        stats = await _run_simulation(config, stop, duration_s, speed, dry_run, spool, json)
        _report_simulation(stats, config, speed, json)

    run_until_signalled(main)


async def _run_simulation(
    config: SimConfig,
    stop: asyncio.Event,
    duration_s: float,
    speed: float,
    dry_run: bool,
    spool: bool,
    json: bool,
) -> SimStats:
    """The simulation, sent to Kafka (or counted, on a dry run) with its progress shown."""
    from collectors.simulate.runner import simulate as run_sim

    with tracking(wanted(json)) as progress:
        progress.phase(
            f"simulating {config.nodes} nodes x {config.gpus} GPUs, seconds of cluster time",
            duration_s,
        )
        async with open_sink(dry_run, one_shot=not spool) as sink:
            stats = await run_sim(
                config,
                sink,
                duration_s=duration_s,
                speed=speed,
                stop=stop,
                on_tick=progress.update,
            )
    return stats


def _report_simulation(stats: SimStats, config: SimConfig, speed: float, json: bool) -> None:
    """What was sent, as one JSON line or tables, warned of first if the simulator fell behind."""
    result = _simulated(stats, config)
    if stats.fell_behind:
        _warn_fell_behind(stats, speed)
    if json:
        print(orjson.dumps(result).decode())
        return
    _print_simulated(result, Console())


def _simulated(stats: SimStats, config: SimConfig) -> dict[str, Any]:
    ratio = stats.realtime_ratio
    return {
        "nodes": config.nodes,
        "gpus": config.gpus,
        "ticks": stats.ticks,
        "events": stats.events,
        "messages": stats.messages,
        "wall_s": round(stats.wall_s, 3),
        "events_per_s": round(stats.events_per_s, 1),
        "realtime_ratio": None if ratio is None else round(ratio, 3),
        "behind_s_max": round(stats.behind_s_max, 3),
        "first_at": None if stats.first_at is None else stats.first_at.isoformat(),
        "last_at": None if stats.last_at is None else stats.last_at.isoformat(),
        "by_type": stats.by_type,
        "faulted": [f.as_json() for f in stats.faulted],
    }


def _warn_fell_behind(stats: SimStats, speed: float) -> None:
    # Said on stderr as well as in the result: whoever reads the pipeline's numbers must know
    # the load was lighter than asked for.
    Console(stderr=True).print(
        f"[yellow]warning:[/] the simulator fell behind real time x{speed:g}: "
        f"{stats.scheduled_s:.0f}s of schedule took {stats.wall_s:.0f}s "
        f"(realtime_ratio {stats.realtime_ratio:.2f}, up to {stats.behind_s_max:.1f}s late); "
        "the pipeline got less load than asked for: fewer nodes, a longer --interval-s, "
        "or the simulator on another machine"
    )


def _tell_the_benchmark(config: Any, dry_run: bool) -> None:
    """The bad nodes, in the file the memory adapter reads at each benchmark (the rest of the
    fleet passes); a fleet without any leaves the file, if any, saying so of its nodes. A dry
    run changes nothing."""
    from actions.adapters.memory import write_unhealthy
    from actions.adapters.settings import MemorySettings
    from centrality.errors import UserError
    from collectors.simulate.model import ClusterModel
    from schemas.envelope import utcnow

    path = MemorySettings().unhealthy_file
    if path is None:
        if config.bad_nodes:
            raise UserError(
                "--bad-nodes needs the file the action worker's memory adapter reads",
                "set CENTRALITY_MEMORY_UNHEALTHY_FILE for it and for simulate (a .env file "
                "both read), e.g. to ~/.local/share/centrality/unhealthy.json",
            )
        return
    if dry_run:
        return
    model = ClusterModel(config, utcnow())
    write_unhealthy(path, model.unhealthy(), model.names)


def _print_simulated(result: dict[str, Any], console: Console) -> None:
    table = Table("event", "count")
    for name, count in sorted(result["by_type"].items()):
        table.add_row(name, str(count))
    console.print(table)
    faults = Table("subject", "kind", "fault", "times", "first", "last", title="faulted")
    for f in result["faulted"]:
        faults.add_row(f["subject"], f["kind"], f["how"], str(f["count"]), f["first_at"],
                       f["last_at"])  # fmt: skip
    console.print(faults if result["faulted"] else "faulted: nothing")
    console.print(
        f"{result['events']} events in {result['messages']} messages, {result['wall_s']:.2f}s "
        f"wall, {result['events_per_s']:,.0f} events/s; simulated {result['first_at']} → "
        f"{result['last_at']}"
    )


watch_app = typer.Typer(
    help="Scheduler watchers: job lifecycle and node state.", no_args_is_help=True
)


@watch_app.command("slurm")
def watch_slurm(dry_run: bool = DRY_RUN) -> None:
    """squeue/sinfo --json, completions from sacct -c (CENTRALITY_SLURM_WATCH_*)."""
    from collectors.watchers.slurm.settings import SlurmWatchSettings
    from collectors.watchers.slurm.watcher import SlurmWatcher

    settings = SlurmWatchSettings()
    _serve("watch-slurm", dry_run, lambda sink: SlurmWatcher(settings, sink).run)


@watch_app.command("ray")
def watch_ray(dry_run: bool = DRY_RUN) -> None:
    """The Ray Jobs API, driver logs and node deaths (CENTRALITY_RAY_WATCH_*)."""
    from collectors.watchers.ray.settings import RayWatchSettings
    from collectors.watchers.ray.watcher import RayWatcher

    settings = RayWatchSettings()
    _serve("watch-ray", dry_run, lambda sink: RayWatcher(settings, sink).run)


@watch_app.command("k8s")
def watch_k8s(dry_run: bool = DRY_RUN) -> None:
    """Jobs, PyTorchJobs, their Pods, and Nodes (CENTRALITY_K8S_WATCH_*)."""
    from collectors.watchers.k8s.settings import K8sWatchSettings
    from collectors.watchers.k8s.watcher import K8sWatcher

    settings = K8sWatchSettings()
    _serve("watch-k8s", dry_run, lambda sink: K8sWatcher(settings, sink).run)


def register(app: typer.Typer) -> None:
    app.add_typer(watch_app, name="watch")
    app.command("agent")(agent)
    app.command("tail")(tail)
    app.command("checkpoints")(checkpoints)
    app.command("nccl")(nccl)
    app.command("simulate")(simulate)
