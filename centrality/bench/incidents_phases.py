"""The two stories `centrality bench incidents` plays on its fleet, each measured from the
outside: the whole fleet falls silent and comes back; a burst of fatal XIDs."""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from centrality.bench.hostile_watch import PeakRss
from centrality.bench.incidents_fleet import Agents
from centrality.bench.incidents_watch import Seen, Watch
from centrality.bench.scale import percentile_ms
from centrality.pipeline import Pipeline
from centrality.slack_fake import SlackFake
from schemas.runtime.fleet import read_fleet, read_incidents
from schemas.runtime.settings import KafkaSettings
from streams.state.node import LOST_RULE

QUIET_S = 5.0  # Slack told all it had once no call came for this long (it keeps a call a second)
SAMPLE_S = 2.0  # memory sampling period
DIGEST = "told together"  # what a digest's title says
SAID, SAID_CHARS = 40, 160  # messages quoted per story, characters of each


@dataclass
class Running:
    """What every wait does while it waits: the workers checked alive, the watch read, their
    memory sampled."""

    pipeline: Pipeline
    watch: Watch
    slack: SlackFake
    rss: PeakRss = field(default_factory=PeakRss)
    _next_sample: float = 0.0

    @property
    def seen(self) -> Seen:
        return self.watch.seen

    def pids(self) -> dict[str, int]:
        return {name: proc.pid for name, proc in self.pipeline.procs.items()}

    async def until(self, done: Callable[[], bool], timeout_s: float) -> float | None:
        """Seconds until `done()`; None if it was not within `timeout_s`."""
        began = time.monotonic()
        while not done():
            if time.monotonic() - began > timeout_s:
                return None
            self.pipeline.check()
            await self.watch.poll()
            if time.monotonic() >= self._next_sample:
                self._next_sample = time.monotonic() + SAMPLE_S
                self.rss.sample(self.pids())
        return time.monotonic() - began

    async def quiet(self, timeout_s: float) -> float | None:
        """Until Slack was told everything waiting (no call for `QUIET_S`)."""
        return await self.until(lambda: self.slack.quiet_for(QUIET_S), timeout_s)


class Beating:
    """The fleet's heartbeats, started and stopped at once as a fleet's agents are."""

    def __init__(self, agents: Agents) -> None:
        self.agents = agents
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._stop = asyncio.Event()
        self._task = asyncio.create_task(self.agents.beat(self._stop))

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


@dataclass(frozen=True)
class Phase:
    """Where a phase began: on the records' clock (wall), Slack's (monotonic), and in its
    list of refusals."""

    wall: float
    slack_at: float
    refusals: int

    @classmethod
    def now(cls, slack: SlackFake) -> Phase:
        return cls(time.time(), slack.clock(), len(slack.refusals))


def told(slack: SlackFake, since: float, until: float | None = None) -> dict[str, int]:
    """What reached the channel between two instants of Slack's clock: new messages (top-level
    ones and replies; digests among them) apart from edits of messages in place."""
    end = slack.clock() if until is None else until
    figures = Counter({"messages": 0, "top_level": 0, "replies": 0, "digests": 0, "edits": 0})
    for _, thread in slack.threads():
        for message in thread:
            if since <= message.versions[0].at < end:
                figures["messages"] += 1
                figures["replies" if message.thread_ts else "top_level"] += 1
                figures["digests"] += DIGEST in message.text
            figures["edits"] += sum(1 for v in message.versions[1:] if since <= v.at < end)
    return dict(figures)


def said(slack: SlackFake, since: float, until: float | None = None) -> list[str]:
    """The new messages' texts (their start), in the order Slack took them: what people saw."""
    end = slack.clock() if until is None else until
    new = [m for _, thread in slack.threads() for m in thread if since <= m.versions[0].at < end]
    new.sort(key=lambda m: m.versions[0].at)
    return [("↳ " if m.thread_ts else "") + m.versions[0].text[:SAID_CHARS] for m in new][:SAID]


def refused(slack: SlackFake, phase: Phase) -> dict[str, int]:
    """The calls Slack refused since the phase began, by method and error."""
    return dict(Counter(f"{m}: {e}" for m, e in slack.refusals[phase.refusals :]))


def s(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds, 1)


@dataclass(frozen=True)
class SilentOptions:
    beats: int  # intervals of heartbeats before the silence
    limit_s: float  # heartbeat_lost's limit as the rule applies it
    timeout_s: float


async def silent_fleet(
    run: Running, agents: Agents, beating: Beating, kafka: KafkaSettings, opts: SilentOptions
) -> dict[str, Any]:
    """Every node heartbeats for a few intervals, then all stop: measured until every node is
    unreachable, then heartbeats resume (left running) until every node is back."""
    seen, names = run.seen, set(agents.names)
    phase = Phase.now(run.slack)
    await agents.facts()
    beating.start()
    warm_s, began = opts.beats * agents.interval_s, time.monotonic()
    heard_s = await run.until(
        lambda: time.monotonic() - began >= warm_s and names <= seen.last_beat_at.keys(),
        warm_s + opts.timeout_s,
    )
    await beating.stop()
    stopped = time.time()
    await run.until(lambda: _unreachable(seen, names) == names, opts.timeout_s)
    await run.until(lambda: _members(seen, phase) >= len(names), 30)  # incidents catch up
    result = {"heard_all_s": s(heard_s), **_silence(seen, names, stopped, opts.limit_s)}
    result |= await _listed(kafka, names, phase)
    beating.start()
    resumed = time.time()
    back_s = await run.until(lambda: _back(seen, names, phase), opts.timeout_s)
    await run.quiet(opts.timeout_s)
    back = [seen.back_at[n] - resumed for n in names if n in seen.back_at]
    return result | {
        "heartbeat_lost_decisions": seen.notified[LOST_RULE],
        "nodes_lost_twice": sum(1 for n in names if seen.lost[n] > 1),
        "quarantines": seen.quarantined_since(phase.wall, names),
        "back_all": back_s is not None,
        "resume_to_back_max_ms": percentile_ms(back, 1.0),
        "incidents_opened": {i: _incident(p) for i, p in seen.incidents_since(phase.wall).items()},
        "slack_before_resume": told(run.slack, phase.slack_at, _slack_at(run.slack, resumed)),
        "slack": told(run.slack, phase.slack_at),
        "slack_refused": refused(run.slack, phase),
        "slack_said": said(run.slack, phase.slack_at),
    }


def _silence(seen: Seen, names: set[str], stopped: float, limit_s: float) -> dict[str, Any]:
    """Each node from its last heartbeat's record to the status saying it is unreachable."""
    lost = _unreachable(seen, names)
    after = [seen.unreachable_at[n] - seen.last_beat_at[n] for n in lost]
    decided = [seen.lost_at[n] - seen.last_beat_at[n] for n in lost if n in seen.lost_at]
    return {
        "unreachable": len(lost),
        "beat_to_lost_decision_p50_ms": percentile_ms(decided, 0.5),
        "beat_to_lost_decision_max_ms": percentile_ms(decided, 1.0),
        "beat_to_unreachable_p50_ms": percentile_ms(after, 0.5),
        "beat_to_unreachable_max_ms": percentile_ms(after, 1.0),
        "stop_to_all_unreachable_s": s(
            max(seen.unreachable_at[n] for n in lost) - stopped if lost == names else None
        ),
        "limit_s": limit_s,
    }


async def _listed(kafka: KafkaSettings, names: set[str], phase: Phase) -> dict[str, Any]:
    """What people read meanwhile (`centrality nodes`, `centrality incidents`)."""
    fleet, incidents = await read_fleet(kafka), await read_incidents(kafka)
    statuses = [fleet.nodes[n].payload for n in names if n in fleet.nodes]
    payloads = [e.payload for e in incidents.incidents.values()]
    opened = [p for p in payloads if p.opened_at.timestamp() >= phase.wall]
    return {
        "listed_unreachable": sum(1 for p in statuses if p.state == "unreachable"),
        "listed_incidents_named": sorted({p.incident or "none" for p in statuses}),
        "listed_incidents": len(opened),
        "listed_heartbeat_lost": [p.nodes_count for p in opened if p.kind == LOST_RULE],
    }


def _unreachable(seen: Seen, names: set[str]) -> set[str]:
    return {n for n in names if seen.state.get(n) == "unreachable"}


def _members(seen: Seen, phase: Phase) -> int:
    lost = seen.incidents_since(phase.wall).values()
    return sum(p.nodes_count for p in lost if p.kind == LOST_RULE)


def _back(seen: Seen, names: set[str], phase: Phase) -> bool:
    ours = [i for i, p in seen.incidents_since(phase.wall).items() if p.kind == LOST_RULE]
    back = all(seen.state.get(n) == "in_service" and n in seen.back_at for n in names)
    return back and all(i in seen.resolved_at for i in ours)


def _slack_at(slack: SlackFake, wall: float) -> float:
    """A wall-clock instant on Slack's (monotonic) clock."""
    return slack.clock() - (time.time() - wall)


def _incident(p: Any) -> dict[str, Any]:
    return {"kind": p.kind, "nodes": p.nodes_count, "state": p.state, "states": p.states}


@dataclass(frozen=True)
class BurstOptions:
    nodes: int  # of the fleet, with a fatal XID each
    within_s: float
    slack_window_s: float  # the messages counted: this long after the first XID
    seed: int
    timeout_s: float


async def burst(run: Running, agents: Agents, opts: BurstOptions) -> dict[str, Any]:
    """Fatal XIDs on `opts.nodes` nodes within `opts.within_s`, the fleet still heartbeating:
    measured until each is decided and Slack was told the burst's first window."""
    seen = run.seen
    hit = sorted(random.Random(opts.seed).sample(list(agents.names), opts.nodes))
    phase = Phase.now(run.slack)
    raising = asyncio.create_task(agents.xids(hit, opts.within_s, opts.seed))
    decided_s = await run.until(
        lambda: raising.done() and all(seen.decided_at(n) for n in hit),
        opts.within_s + opts.timeout_s,
    )
    first = await raising
    window_end = first + opts.slack_window_s
    await run.until(lambda: time.monotonic() >= window_end, opts.slack_window_s + 1)
    await run.quiet(opts.timeout_s)
    latencies = [t for n in hit if (t := seen.decided_s(n)) is not None]
    return {
        "xids": len(hit),
        "xids_seen": sum(1 for n in hit if n in seen.xid_at),
        "decided": len(latencies),
        "drained": sum(1 for n in hit if n in seen.drained_at),
        "refused": sum(1 for n in hit if n in seen.refused_at and n not in seen.drained_at),
        "undecided": [n for n in hit if seen.decided_at(n) is None][:10],
        "decided_all": decided_s is not None,
        "xid_to_decided_p50_ms": percentile_ms(latencies, 0.5),
        "xid_to_decided_p99_ms": percentile_ms(latencies, 0.99),
        "xid_to_decided_max_ms": percentile_ms(latencies, 1.0),
        "refusals": dict(seen.refusals.most_common(3)),
        "incidents_opened": {i: _incident(p) for i, p in seen.incidents_since(phase.wall).items()},
        "slack_window_s": opts.slack_window_s,
        "slack_in_window": told(run.slack, first, window_end),
        "slack": told(run.slack, phase.slack_at),
        "slack_refused": refused(run.slack, phase),
        "slack_said": said(run.slack, phase.slack_at),
    }


def lost_notifications(log: Path) -> int:
    """Messages the action worker gave up on or dropped, as its log says."""
    if not log.exists():
        return 0
    text = log.read_text(errors="replace")
    return text.count('"notification_lost"') + text.count('"notification_dropped"')
