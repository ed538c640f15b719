"""`centrality bench hostile`: the three workers as their own processes under a storm of hostile
messages on every topic and through every codec, then one valid crash story.

Targets (exit 1 if one is missed): every worker alive at the end; every worker consumed the
storm; the story's `ActionSucceeded` comes at most 5 s after the deciding workers (streams,
actions) consumed the storm; no action on an unsigned trigger; every worker stops within 10 s
of SIGTERM. Consumption is read from the workers' consumer groups (committed offsets reaching
the ends of their input topics as they were when the storm was sent), so a wedged worker shows
as a group that stops moving, and the bench gives up on it after `--stall-s` instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass

import typer
from rich.console import Console

from centrality.bench.cli import bench_app
from centrality.bench.hostile_report import Outcome, print_outcome
from centrality.bench.hostile_send import Senders
from centrality.bench.hostile_storm import Hostile, Storm, aimed
from centrality.bench.hostile_watch import (
    Group,
    Groups,
    Offsets,
    PeakRss,
    StoryWatch,
    acted_on,
    cpu_s,
    dead_letters,
    end_offsets,
    partitions,
    sink_dead_letters,
)
from centrality.bench.run import INPUTS, BenchRun, local_stack
from centrality.pipeline import WORKERS, Pipeline
from centrality.stack.stack import Stack
from schemas.runtime import kafka_clients
from schemas.runtime.admin import ensure_topics
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.history.migrations import migrate

DECIDING = ("streams", "actions")
DECIDING_TOPICS = ("triggers", "actions")  # where the story's decision and action appear
MARKED = INPUTS["streams"]  # the Faust worker's inputs: it holds back its last offset
UNSIGNED_PREFIX = b"hostile-unsigned/"


@dataclass(frozen=True)
class Options:
    messages: int
    timeout_s: float
    stall_s: float
    story_timeout_s: float
    stop_timeout_s: float
    ready_timeout_s: float
    decide_within_s: float = 5.0
    stop_within_s: float = 10.0
    seed: int = 12
    kinds: tuple[str, ...] = ()  # empty: every kind
    topics: tuple[str, ...] = ()  # empty: every topic a storm goes to
    keep: bool = False


@dataclass
class Episode:
    """A story sent and watched until decided, with the workers' groups since `since`."""

    groups: Groups
    watch: StoryWatch
    since: float
    story_at: float

    def consumed_s(self) -> dict[str, float | None]:
        return {
            g.worker: None if g.consumed_at is None else g.consumed_at - self.since
            for g in self.groups.groups
        }

    @property
    def decided_s(self) -> float | None:
        decided = self.watch.decided_at
        return None if decided is None else decided - self.story_at

    @property
    def decided_after_consumed_s(self) -> float | None:
        deciding = [g.consumed_at for g in self.groups.groups if g.worker in DECIDING]
        if self.watch.decided_at is None or any(at is None for at in deciding):
            return None
        return self.watch.decided_at - max(at for at in deciding if at is not None)


async def episode(
    run: BenchRun,
    opts: Options,
    pipeline: Pipeline,
    markers: list[Hostile],
    job: str,
    since: float,
    timeout_s: float,
) -> Episode:
    """Notes the ends of the workers' inputs, sends the markers and the story for `job`, then
    waits (see `wait`)."""
    kafka = run.kafka
    pids = {name: proc.pid for name, proc in pipeline.procs.items()}
    groups = Groups(
        kafka,
        [Group(w, run.groups[w], await input_ends(kafka, w), pids.get(w)) for w in WORKERS],
    )
    watch = StoryWatch(kafka, job, await end_offsets(kafka, partitions(kafka, DECIDING_TOPICS)))
    await send_markers(kafka, markers)
    story_at = await run.send_story(job)
    try:
        await wait(opts, pipeline, groups, watch, since + timeout_s)
    finally:
        await groups.close()
        await watch.close()
    return Episode(groups, watch, since, story_at)


async def input_ends(kafka: KafkaSettings, worker: str) -> Offsets:
    return await end_offsets(kafka, partitions(kafka, INPUTS[worker]))


async def send_markers(kafka: KafkaSettings, markers: list[Hostile]) -> None:
    producer = kafka_clients.producer(kafka)
    await producer.start()
    try:
        for m in markers:
            await producer.send(
                topic_name(m.topic, kafka), m.value, key=m.key, partition=m.partition
            )
        await producer.flush()
    finally:
        await producer.stop()


async def storm_and_story(
    run: BenchRun, opts: Options, pipeline: Pipeline, outcome: Outcome, progress: Console
) -> None:
    rss = PeakRss()
    pids = {name: proc.pid for name, proc in pipeline.procs.items()}

    async def sample_rss() -> None:
        while True:
            rss.sample(pids)
            await asyncio.sleep(0.5)

    sampler = asyncio.create_task(sample_rss())
    built = time.perf_counter()
    hostile = Storm(run.key, seed=opts.seed, only=opts.kinds, topics=opts.topics)
    outcome.build_s = time.perf_counter() - built
    markers = hostile.markers(MARKED)
    try:
        if not await warmed_up(run, opts, pipeline, markers, outcome, progress):
            return
        progress.log(f"workers ready in {outcome.ready_s:.1f} s; sending the storm")
        before = {w: await input_ends(run.kafka, w) for w in WORKERS}
        cpu_before = cpu_s(pids)
        await send_storm(run, hostile, opts, outcome, progress)
        job = f"slurm/hostile-story/{run.id}"
        progress.log(f"story sent for {job}; waiting for the storm to be consumed and the decision")
        story = await episode(run, opts, pipeline, markers, job, time.monotonic(), opts.timeout_s)
    finally:
        sampler.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampler
        rss.sample(pids)
        outcome.peak_rss_mb = rss.peak_mb()
    note_storm(outcome, story, hostile, before, cpu_before, opts.stall_s)


async def warmed_up(
    run: BenchRun,
    opts: Options,
    pipeline: Pipeline,
    markers: list[Hostile],
    outcome: Outcome,
    progress: Console,
) -> bool:
    """Whether the workers decided a first story on the idle pipeline in time. The storm starts
    once every worker is up (Faust takes seconds to join and recover), so start-up is not
    counted as the storm's."""
    started = time.monotonic()
    warmup = await episode(
        run,
        opts,
        pipeline,
        markers,
        f"slurm/hostile-warmup/{run.id}",
        started,
        opts.ready_timeout_s,
    )
    outcome.ready_s = time.monotonic() - started
    outcome.warmup_decided_s = warmup.decided_s
    if warmup.decided_s is None or None in warmup.consumed_s().values():
        progress.log(f"the workers were not ready within {opts.ready_timeout_s:g} s")
        return False
    return True


def note_storm(
    outcome: Outcome,
    story: Episode,
    hostile: Storm,
    before: dict[str, Offsets],
    cpu_before: dict[str, float],
    stall_s: float,
) -> None:
    """What the storm did to each worker, read from the story's episode: from `before` (its
    inputs' ends) and `cpu_before` (its CPU), both read as the storm was about to be sent."""
    outcome.consumed_s = story.consumed_s()
    outcome.storm_read = {
        g.worker: sum(g.targets.values()) - sum(before[g.worker].values())
        for g in story.groups.groups
    }
    reached = {w for w in WORKERS if hostile.reaches(INPUTS[w])}
    outcome.storm_cpu_s = {
        g.worker: None
        if g.cpu_at_consumed_s is None or g.worker not in reached
        else g.cpu_at_consumed_s - cpu_before[g.worker]
        for g in story.groups.groups
    }
    outcome.lag = {g.worker: g.lag for g in story.groups.groups}
    now = time.monotonic()
    outcome.wedged = [g.worker for g in story.groups.groups if g.stalled(now, stall_s)]
    outcome.story_decided_s = story.decided_s
    outcome.decided_after_storm_s = story.decided_after_consumed_s
    outcome.restart_seen = story.watch.restart_at is not None


async def send_storm(
    run: BenchRun, hostile: Storm, opts: Options, outcome: Outcome, progress: Console
) -> None:
    senders = Senders(run.kafka)
    await senders.start()
    try:
        await senders.send_all(hostile.messages(opts.messages))
    finally:
        await senders.stop()
    outcome.sent = senders.sent
    outcome.unsigned = hostile.unsigned
    progress.log(
        f"storm sent: {senders.sent.summary()['total']} messages in {senders.sent.send_s:.1f} s"
    )


async def wait(
    opts: Options, pipeline: Pipeline, groups: Groups, watch: StoryWatch, deadline: float
) -> None:
    """Until every worker consumed its inputs and the story is decided, or nothing more can
    come: a worker dead or stalled, the story overdue, the deadline passed."""
    while time.monotonic() < deadline:
        await groups.poll()
        await watch.poll()
        now = time.monotonic()
        dead = {name for name, proc in pipeline.procs.items() if proc.poll() is not None}
        pending = [
            g
            for g in groups.groups
            if g.consumed_at is None and g.worker not in dead and not g.stalled(now, opts.stall_s)
        ]
        story_open = watch.decided_at is None and not _story_hopeless(groups, dead, now, opts)
        if not pending and not story_open:
            return
        await asyncio.sleep(0.2)


def _story_hopeless(groups: Groups, dead: set[str], now: float, opts: Options) -> bool:
    deciding = [g for g in groups.groups if g.worker in DECIDING]
    if any(g.worker in dead or g.stalled(now, opts.stall_s) for g in deciding):
        return True
    consumed = [g.consumed_at for g in deciding]
    return all(at is not None for at in consumed) and (
        now - max(a for a in consumed if a) > opts.story_timeout_s
    )


async def readback(run: BenchRun, outcome: Outcome) -> None:
    by_reason, by_consumer = await dead_letters(run.kafka)
    workers = {group: worker for worker, group in run.groups.items()}
    deciders = [run.groups[w] for w in DECIDING]
    for reason, n in sink_dead_letters(run.clickhouse, deciders).items():
        by_reason[reason] += n
        by_consumer[(run.groups["sink"], reason)] += n
    outcome.dead_letters = dict(by_reason.most_common())
    by_worker: dict[str, dict[str, int]] = {}
    for (consumer, reason), n in sorted(by_consumer.items()):
        by_worker.setdefault(workers.get(consumer, consumer), {})[reason] = n
    outcome.dead_letters_by_worker = by_worker
    outcome.unsigned_obeyed = await acted_on(run.kafka, outcome.unsigned, {}, UNSIGNED_PREFIX)


def run_bench(stack: Stack, opts: Options, progress: Console) -> Outcome:
    run = BenchRun(stack, "hostile")
    outcome = Outcome(messages=opts.messages, opts=opts)
    asyncio.run(ensure_topics(run.kafka))
    migrate(run.clickhouse)
    pipeline = Pipeline(run.env(), run.dir / "logs")
    pipeline.start()
    progress.log(f"workers started on {run.kafka.topic_prefix}*; logs in {run.dir / 'logs'}")
    try:
        asyncio.run(storm_and_story(run, opts, pipeline, outcome, progress))
        outcome.alive = {name: proc.poll() is None for name, proc in pipeline.procs.items()}
        outcome.exit_codes = {
            name: proc.returncode
            for name, proc in pipeline.procs.items()
            if not outcome.alive[name]
        }
        outcome.log_tails = {name: pipeline.log_tail(name, 15) for name in outcome.exit_codes}
    finally:
        stopped = pipeline.stop(opts.stop_timeout_s)
    outcome.stop_s = {name: stopped.get(name) for name in WORKERS}
    asyncio.run(readback(run, outcome))
    outcome.logs = None if outcome.ok else str(run.dir / "logs")
    if not opts.keep:
        asyncio.run(run.delete_topics())
        run.discard(keep_logs=not outcome.ok)
    return outcome


@bench_app.command("hostile")
def bench_hostile(
    messages: int = typer.Option(20_000, min=1, help="Hostile messages in the storm."),
    timeout_s: float = typer.Option(900.0, help="Longest wait for the storm and the story."),
    stall_s: float = typer.Option(
        60.0, help="A worker whose group has not moved for this long while lagging is wedged."
    ),
    story_timeout_s: float = typer.Option(
        30.0, help="Longest wait for the story once the deciding workers consumed the storm."
    ),
    stop_timeout_s: float = typer.Option(30.0, help="SIGKILL a worker still running after this."),
    ready_timeout_s: float = typer.Option(
        180.0, help="Longest wait for the workers to decide a first story before the storm."
    ),
    seed: int = typer.Option(12, help="Seed of the storm: the same seed, the same messages."),
    kinds: str = typer.Option(
        "", help="Only these kinds, comma-separated (e.g. `truncated,json-edge`); default all."
    ),
    topics: str = typer.Option(
        "",
        help="Only to these topics, comma-separated (e.g. `triggers`: what one worker costs "
        "alone, with no decision of the others' to act on); default every one.",
    ),
    keep: bool = typer.Option(False, help="Keep the run's topics, database and logs."),
    json: bool = typer.Option(False, "--json", help="Print one JSON line."),
) -> None:
    """Workers under hostile input on every topic and codec, then a valid story.

    Targets: all alive, storm consumed, story decided ≤ 5 s after it, no unsigned trigger obeyed,
    stop ≤ 10 s."""
    try:  # before a stack is started for them
        aimed(_listed(kinds), _listed(topics))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    stack, progress = local_stack()
    opts = Options(
        messages=messages,
        timeout_s=timeout_s,
        stall_s=stall_s,
        story_timeout_s=story_timeout_s,
        stop_timeout_s=stop_timeout_s,
        ready_timeout_s=ready_timeout_s,
        seed=seed,
        kinds=_listed(kinds),
        topics=_listed(topics),
        keep=keep,
    )
    outcome = run_bench(stack, opts, progress)
    print_outcome(outcome, json=json, console=Console(), progress=progress)
    if not outcome.ok:
        raise typer.Exit(1)


def _listed(names: str) -> tuple[str, ...]:
    return tuple(n.strip() for n in names.split(",") if n.strip())
