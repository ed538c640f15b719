"""`centrality history job|node|lag` and `centrality replay`: reading the past back."""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal

import orjson
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from centrality import output
from centrality.actions_view import decided_by, result_said
from centrality.errors import UserError
from centrality.output import said, when
from centrality.progress import tracking, wanted
from schemas.envelope import Event
from schemas.events import ActionStarted, Trigger
from schemas.events.actions import ActionPayload

if TYPE_CHECKING:
    from streams.analysis.replay.clickhouse_source import ClickHouseSource
    from streams.analysis.replay.reasons import Why
    from streams.analysis.replay.rerun import Decision
    from streams.analysis.replay.source import History, Source

history_app = typer.Typer(help="Timelines of jobs and nodes, and the sink's lag.")
_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_time(text: str, now: datetime | None = None) -> datetime:
    now = now or datetime.now(UTC)
    if text == "now":
        return now
    match = _RELATIVE.match(text)
    if match:
        return now - timedelta(seconds=float(match.group(1)) * _UNIT_S[match.group(2)])
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is not a time: give an ISO time (2026-03-01T10:00:00Z), "
            "an age (30m, 2h, 7d) or now"
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def time_range(since: str, until: str, now: datetime | None = None) -> tuple[datetime, datetime]:
    """Both ends read against one instant, taken once when a command starts: `--since 26m`
    run twice names two ranges, each printed absolute so it can be asked for again."""
    now = now or datetime.now(UTC)
    return parse_time(since, now), parse_time(until, now)


def _checked_time(text: str | None) -> str | None:
    """Refused while the command line is read, so the error names the option."""
    if text is not None:
        parse_time(text)
    return text


UNTIL = typer.Option(
    "now", callback=_checked_time, help="End (exclusive): ISO time, an age, or now."
)
JSON = typer.Option(False, "--json", help="Print JSON instead of a table.")


def summary(event: Event) -> str:
    """One line a person can read: a trigger's reason, an action's result in words, otherwise
    the payload's set fields as `key=value` (whole: a table wraps it, a pipe keeps it)."""
    if isinstance(event, Trigger):
        shadow = " (shadow: not carried out)" if event.payload.shadow else ""
        return f"{decided_by(event)}{shadow}: {event.payload.reason}"
    if isinstance(event.payload, ActionPayload):
        p = event.payload
        done = "started" if isinstance(event, ActionStarted) else result_said(event)
        return f"{p.action} on {p.trigger_type} {str(p.trigger_id)[:8]}: {done}"
    return said(event.payload.model_dump(mode="json", exclude_none=True, exclude_defaults=True))


def _event_json(event: Event) -> dict[str, Any]:
    return event.model_dump(mode="json")


def _one_row_per_action(events: list[Event]) -> list[Event]:
    """An action's start is told by its result's row when the result is there too."""
    ended = {
        e.payload.trigger_id
        for e in events
        if isinstance(e.payload, ActionPayload) and not isinstance(e, ActionStarted)
    }
    return [
        e for e in events if not (isinstance(e, ActionStarted) and e.payload.trigger_id in ended)
    ]


def print_events(title: str, events: list[Event], console: Console | None = None) -> None:
    rows = _one_row_per_action(events)
    table = Table("occurred at", "type", "subject", "what", title=title)
    for e in rows:
        style = "bold red" if isinstance(e, Trigger) else "cyan" if e.topic == "actions" else ""
        table.add_row(
            when(e.occurred_at, "milliseconds"),
            Text(e.type, style=style),
            Text(e.subject),
            Text(summary(e)),
        )
    (console or output.console()).print(table)


def _timeline(
    kind: Literal["job", "node"], subject: str, since: str, until: str, noisy: bool, json: bool
) -> None:
    from streams.history.settings import ClickHouseSettings
    from streams.history.timeline import timeline

    start, end = time_range(since, until)
    events = timeline(ClickHouseSettings(), kind, subject, start, end, noisy)
    if not events:
        raise UserError(
            f"no events for {kind} {subject!r} from {when(start)} to {when(end)}",
            "check the id (job ids are scheduler-qualified, e.g. slurm/<cluster>/<id>) "
            "or widen --since" + ("" if noisy else ", or add --all for telemetry"),
        )
    if json:
        print(orjson.dumps([_event_json(e) for e in events]).decode())
        return
    print_events(f"{kind} {subject}: {len(events)} events", events)


TIMELINE_SINCE = typer.Option(
    "7d", callback=_checked_time, help="Start: ISO time or an age (30m, 2h, 7d)."
)
ALL = typer.Option(False, "--all", help="Include telemetry (samples, heartbeats).")


@history_app.command("job")
def history_job(
    job_id: Annotated[str, typer.Argument(help="The job id, e.g. slurm/a/4242.")],
    since: str = TIMELINE_SINCE,
    until: str = UNTIL,
    all_: bool = ALL,
    json: bool = JSON,
) -> None:
    """A job's events, triggers and actions in time order."""
    _timeline("job", job_id, since, until, all_, json)


@history_app.command("node")
def history_node(
    node: Annotated[str, typer.Argument(help="The node's name, as `centrality nodes` shows it.")],
    since: str = TIMELINE_SINCE,
    until: str = UNTIL,
    all_: bool = ALL,
    json: bool = JSON,
) -> None:
    """A node's events, the jobs that ran on it, triggers naming it and actions on them."""
    _timeline("node", node, since, until, all_, json)


@history_app.command("lag")
def history_lag(json: bool = JSON) -> None:
    """How far the history sink's consumer group is behind, per topic."""
    from schemas.runtime.settings import KafkaSettings
    from streams.history.lag import group_lag
    from streams.history.sink import HistorySink, SinkSettings

    kafka, settings = KafkaSettings(), SinkSettings()
    lags = asyncio.run(group_lag(kafka, settings.group_id, HistorySink(kafka).topics()))
    if json:
        print(orjson.dumps([lag.__dict__ for lag in lags]).decode())
        return
    table = Table("topic", "end offset", "committed", "lag", title=f"group {settings.group_id}")
    for lag in lags:
        table.add_row(lag.topic, str(lag.end_offset), str(lag.committed), str(lag.lag))
    Console().print(table)


KAFKA_HELP = (
    "Read this Kafka offset range instead of ClickHouse: TOPIC:PARTITION:START-END, a catalog "
    "topic (the topic prefix is added), END exclusive; repeatable. The range's event time runs "
    "from its earliest to its latest event; warm-up comes from the same partitions before START, "
    "and the triggers decided then from the triggers topic over that event time."
)
KAFKA = typer.Option(None, "--kafka", help=KAFKA_HELP)


def replay(
    since: str | None = typer.Option(
        None,
        callback=_checked_time,
        help="Start: ISO time, or an age like 30m, 2h, 7d (default 1h; ClickHouse only).",
    ),
    until: str | None = typer.Option(
        None,
        callback=_checked_time,
        help="End (exclusive): ISO time, an age, or now (default now; ClickHouse only).",
    ),
    kafka: list[str] | None = KAFKA,
    warmup_s: float | None = typer.Option(
        None,
        "--warmup-s",
        min=0,
        help="Seconds of history before the start folded into state first; what they decide is "
        "neither shown nor compared. Default: the longest duration in the loaded rules' config.",
    ),
    job: str | None = typer.Option(None, help="Only this job."),
    node: str | None = typer.Option(None, help="Only this node and the jobs that ran on it."),
    into: str | None = typer.Option(None, help="Also re-drive the events into this topic."),
    explain: str | None = typer.Option(None, help="Show the chain behind this trigger id."),
    parts: int = typer.Option(
        os.cpu_count() or 1,
        min=1,
        help="Processes re-deciding a ClickHouse range, each a part of the nodes (default: one a "
        "core); --job, --node, --into and --explain read the range whole into one.",
    ),
    json: bool = JSON,
) -> None:
    """Re-decide a range of history with the current rules, next to what was decided then."""
    from streams.analysis.replay.clickhouse_source import ClickHouseSource
    from streams.analysis.replay.rerun import default_warmup_s

    source = _source(since, until, kafka or [], job, node)
    warmup = default_warmup_s() if warmup_s is None else warmup_s
    if isinstance(source, ClickHouseSource) and not (job or node or into or explain):
        _replay_in_parts(source, warmup, parts, json)
        return
    _replay_whole(source, bool(kafka), warmup, into, explain, json)


def _replay_in_parts(source: ClickHouseSource, warmup: float, parts: int, json: bool) -> None:
    """A ClickHouse range re-decided by `parts` processes, each a part of the nodes."""
    from streams.analysis.replay.parallel import rerun_parts
    from streams.analysis.replay.rerun import compare

    with tracking(wanted(json)) as progress:
        progress.phase(f"re-deciding history from ClickHouse ({parts} parts)", total=1.0)
        redecided = rerun_parts(source, warmup, parts, on_progress=progress.update)
    _print_replay(
        replayed(
            source,
            "clickhouse",
            Read(
                source.scope.since,
                source.scope.until,
                warmup,
                redecided.warmup_events,
                redecided.events - redecided.warmup_events,
                {},
            ),
            compare(redecided.decided, redecided.recorded),
            redecided.warmup_decided,
        ),
        json,
    )


def _replay_whole(
    source: Source,
    from_kafka: bool,
    warmup: float,
    into: str | None,
    explain: str | None,
    json: bool,
) -> None:
    """The range read whole and re-decided in this process; re-driven `into` a topic if asked,
    then the chain behind the trigger `explain` names, or else the comparison shown."""
    from schemas.runtime.settings import KafkaSettings
    from streams.analysis.replay.redrive import redrive
    from streams.analysis.replay.rerun import compare

    history, now, dropped = _redecide_whole(source, from_kafka, warmup, json)
    if into is not None:
        sent = asyncio.run(redrive(KafkaSettings(), into, history.inputs))
        Console(stderr=True).print(f"re-drove {sent} events into {into}")
    if explain is not None:
        _explain(source, explain, [*history.recorded, *now], json)
        return
    read = Read(
        history.since,
        history.until,
        warmup,
        len(history.warmup),
        len(history.inputs),
        history.undecodable,
    )
    _print_replay(
        replayed(
            source,
            "kafka" if from_kafka else "clickhouse",
            read,
            compare(now, history.recorded),
            dropped,
        ),
        json,
    )


def _redecide_whole(
    source: Source, from_kafka: bool, warmup: float, json: bool
) -> tuple[History, list[Trigger], dict[str, datetime]]:
    """The range and its warm-up, as read; what today's rules decide over them; and, by trigger
    id, what they decided during the warm-up (neither shown nor compared)."""
    from streams.analysis.replay.kafka_source import OffsetsUnavailable
    from streams.analysis.replay.rerun import current_brain, rerun
    from streams.settings import StreamsSettings

    dropped: dict[str, datetime] = {}
    with tracking(wanted(json)) as progress:
        progress.phase(f"reading history from {'Kafka' if from_kafka else 'ClickHouse'}")
        try:
            history = source.load(warmup)
        except OffsetsUnavailable as exc:
            raise UserError(str(exc), "ask for offsets the partition holds") from None
        events = [*history.warmup, *history.inputs]
        progress.phase("re-deciding events", len(events))
        now = rerun(
            events,
            current_brain(),
            StreamsSettings().tick_interval_s,
            history.since,
            progress.update,
            dropped,
        )
    return history, now, dropped


def _explain(source: Source, trigger_id: str, triggers: list[Trigger], json: bool) -> None:
    """The chain behind one of `triggers` (decided then or now): its causes and its actions."""
    from streams.analysis.replay import explain as explaining

    known = {str(t.event_id): t for t in triggers}
    try:
        found = explaining.explain(source, trigger_id, known)
    except explaining.UnknownTrigger as exc:
        raise UserError(
            str(exc), "check the id (`--json` lists the trigger ids) or widen --since"
        ) from None
    _print_explanation(found, json)


@dataclass(frozen=True)
class Read:
    """What a replay read: the range, its warm-up, and the messages it could not decode."""

    since: datetime
    until: datetime
    warmup_s: float
    warmup_events: int
    events: int
    undecodable: dict[str, int]


@dataclass(frozen=True)
class Replayed:
    """What a replay shows: what was read, each decision then and now, and why each one that
    is not the same is not."""

    source: str
    read: Read
    decisions: list[Decision]
    whys: dict[str, Why]


def replayed(
    source: Source,
    kind: str,
    read: Read,
    decisions: list[Decision],
    warmup_decided: dict[str, datetime],
) -> Replayed:
    from streams.analysis.replay.reasons import Edges, Lookups, name_differences
    from streams.analysis.replay.rerun import current_brain
    from streams.settings import StreamsSettings

    whys = name_differences(
        decisions,
        loaded_rules={bound.spec.name for bound in current_brain().engine.rules},
        edges=Edges(
            read.since - timedelta(seconds=read.warmup_s),
            read.since,
            read.until,
            StreamsSettings().tick_interval_s,
        ),
        decided_in_warmup=warmup_decided,
        lookups=Lookups(source.events_by_id, source.status_before),
    )
    return Replayed(kind, read, decisions, whys)


def _print_replay(replayed: Replayed, json: bool) -> None:
    from streams.analysis.replay.reasons import counts

    r, decisions = replayed.read, replayed.decisions
    same = sum(d.status == "same" for d in decisions)
    named = counts(replayed.whys)
    if json:
        print(
            orjson.dumps(
                {
                    "source": replayed.source,
                    "since": r.since.isoformat(),
                    "until": r.until.isoformat(),
                    "warmup_s": r.warmup_s,
                    "warmup_events": r.warmup_events,
                    "events": r.events,
                    "undecodable": r.undecodable,
                    "reproduced": same,
                    "not_reproduced": named,
                    "decisions": [
                        _decision_json(d, replayed.whys.get(d.trigger_id)) for d in decisions
                    ],
                }
            ).decode()
        )
        return
    colour = {"same": "green", "changed": "yellow", "new": "cyan", "missing": "red"}
    skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(r.undecodable.items()))
    why_not = ", ".join(f"{n} {reason}" for reason, n in named.items())
    table = Table(
        "status",
        "trigger id",
        "type",
        "subject",
        "rule",
        "occurred at",
        "reason",
        *(["why not the same"] if replayed.whys else []),
        title=f"replay of {r.events} events from {replayed.source}, "
        f"{r.since:%Y-%m-%d %H:%M:%S} → {r.until:%Y-%m-%d %H:%M:%S} UTC",
        caption=f"{same} of {len(decisions)} decisions reproduced"
        + (f"; not reproduced: {why_not}" if why_not else "")
        + f"; warm-up: {r.warmup_events} events over {r.warmup_s:.0f} s"
        + (f"; undecodable messages skipped: {skipped}" if skipped else ""),
    )
    for d in decisions:
        t = d.trigger
        why = replayed.whys.get(d.trigger_id)
        table.add_row(
            f"[{colour[d.status]}]{d.status}[/]",
            d.trigger_id,
            t.type,
            t.subject,
            t.payload.rule,
            t.occurred_at.strftime("%H:%M:%S.%f")[:-3],
            t.payload.reason,
            *([f"{why.reason}: {why.words}" if why else ""] if replayed.whys else []),
        )
    Console().print(table)


def _decision_json(d: Decision, why: Why | None) -> dict[str, Any]:
    return {
        "trigger_id": d.trigger_id,
        "status": d.status,
        "type": d.trigger.type,
        "subject": d.trigger.subject,
        "rule": d.trigger.payload.rule,
        "window": d.trigger.payload.window,
        "occurred_at": d.trigger.occurred_at.isoformat(),
        "then": d.then.payload.model_dump(mode="json") if d.then else None,
        "now": d.now.payload.model_dump(mode="json") if d.now else None,
        "why": None if why is None else {"reason": why.reason, "words": why.words},
    }


def _source(
    since: str | None, until: str | None, kafka: list[str], job: str | None, node: str | None
) -> Source:
    """ClickHouse over a time range, or Kafka over offset ranges; both narrowed the same way."""
    if not kafka:
        from streams.analysis.replay.clickhouse_source import ClickHouseSource, Scope
        from streams.history.settings import ClickHouseSettings

        start, end = time_range(since or "1h", until or "now")
        scope = Scope(start, end, job=job, node=node)
        return ClickHouseSource(ClickHouseSettings(), scope)
    from schemas.runtime.settings import KafkaSettings
    from streams.analysis.replay.kafka_source import KafkaSource, OffsetRange

    if since is not None or until is not None:
        raise typer.BadParameter("--since/--until select ClickHouse history; --kafka offsets do")
    try:
        ranges = [OffsetRange.parse(text) for text in kafka]
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--kafka") from None
    return KafkaSource(KafkaSettings(), ranges, job=job, node=node)


def _cause_json(cause: Any) -> dict[str, Any]:
    return {
        "event_id": cause.event_id,
        "event": _event_json(cause.event) if cause.event else None,
        "causes": [_cause_json(c) for c in cause.causes],
    }


def _print_explanation(found: Any, json: bool) -> None:
    if json:
        print(
            orjson.dumps(
                {
                    "trigger": _event_json(found.trigger),
                    "causes": [_cause_json(c) for c in found.causes],
                    "results": [_event_json(r) for r in found.results],
                }
            ).decode()
        )
        return
    t = found.trigger
    tree = Tree(f"[bold]{t.type}[/] {t.event_id} on {t.subject} — {summary(t)}")
    causes = tree.add("caused by")

    def add(node: Tree, cause: Any) -> None:
        e = cause.event
        label = (
            f"{when(e.occurred_at)} {e.type} {e.subject} — {summary(e)}"
            if e
            else f"{cause.event_id} (not in history)"
        )
        branch = node.add(label)
        for c in cause.causes:
            add(branch, c)

    for c in found.causes:
        add(causes, c)
    results = tree.add("actions")
    for r in found.results:
        results.add(f"{when(r.occurred_at)} {r.type} — {summary(r)}")
    Console().print(tree)


def register(app: typer.Typer) -> None:
    app.add_typer(history_app, name="history")
    app.command("replay")(replay)
