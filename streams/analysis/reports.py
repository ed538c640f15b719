"""What `centrality report` reads of history and keeps of what it found (migration 006); a
what-if's own rows are `streams.analysis.whatif.store`'s.

Reads go through `events FINAL`: an event the sink wrote twice is read once, as the dashboard
aggregates count it once. What is kept is keyed by the decision (or the job), so a later report
over the same range replaces a pending outcome rather than adding one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from schemas.envelope import Event
from schemas.events import Trigger
from schemas.limits import MIN_TIME
from streams.analysis.goodput import JobTime
from streams.analysis.outcomes import TYPES, Outcomes
from streams.history.client import connect
from streams.history.query import events_by_id, stream_events_between
from streams.history.settings import ClickHouseSettings

JOB_TYPES = ("JobSubmitted", "JobStateChanged", "JobExited", "CheckpointSaved", "LogSignalDetected")


def events_of(
    settings: ClickHouseSettings,
    types: Sequence[str],
    since: datetime,
    until: datetime,
    subjects: Sequence[str] | None = None,
) -> list[Event]:
    """Events of `types` with `since <= occurred_at < until` (of `subjects` if given), once each,
    in event-time order; a range read a page at a time, a set of subjects in one query."""
    narrowed = ("has({types:Array(String)}, type)", {"types": list(types)})
    pages = None if subjects is not None else 50_000
    return list(stream_events_between(settings, since, until, subjects, pages, narrowed))


def outcome_events(
    settings: ClickHouseSettings, since: datetime, observed_until: datetime
) -> list[Event]:
    """What judging the decisions from `since` needs, up to `observed_until`: the decisions,
    what was done about them and what happened next, and the events their causes name."""
    found = events_of(settings, TYPES, since, observed_until)
    causes = sorted(
        {
            str(c)
            for e in found
            if isinstance(e, Trigger) and e.type == "QuarantineNodes"
            for c in e.payload.caused_by
        }
    )
    return [*found, *events_by_id(settings, causes).values()] if causes else found


def job_histories(settings: ClickHouseSettings, since: datetime, until: datetime) -> list[Event]:
    """Every event of the jobs active in [since, until), from each one's first, up to `until`:
    a job's time counts from its first attempt, however long before the range that was."""
    with connect(settings) as client:
        rows = client.query(
            "SELECT DISTINCT job_id FROM job_events "
            "WHERE occurred_at >= {since:DateTime64(6, 'UTC')} "
            "AND occurred_at < {until:DateTime64(6, 'UTC')}",
            parameters={"since": since, "until": until},
        ).result_rows
    jobs = sorted(r[0] for r in rows)
    return events_of(settings, JOB_TYPES, MIN_TIME, until, jobs) if jobs else []


def node_facts(
    settings: ClickHouseSettings, nodes: Sequence[str], before: datetime
) -> tuple[dict[str, int], dict[str, str]]:
    """Each node's GPUs, as its last heartbeat before `before` counted them, and GPU model, as
    the last status that named one said (nodes without are left out)."""
    with connect(settings) as client:
        rows = client.query(
            "SELECT subject, "
            "argMaxIf(JSONExtractUInt(payload, 'gpus'), occurred_at, type = 'NodeHeartbeat'), "
            "argMaxIf(JSONExtractString(payload, 'gpu_model'), occurred_at, "
            "type = 'NodeStatusChanged' AND JSONExtractString(payload, 'gpu_model') != '') "
            "FROM events WHERE type IN ('NodeHeartbeat', 'NodeStatusChanged') "
            "AND subject IN {nodes:Array(String)} "
            "AND occurred_at < {before:DateTime64(6, 'UTC')} GROUP BY subject",
            parameters={"nodes": list(nodes), "before": before},
        ).result_rows
    gpus = {node: int(n) for node, n, _ in rows if n}
    models = {node: model for node, _, model in rows if model}
    return gpus, models


def store_report(
    settings: ClickHouseSettings,
    reported_at: datetime,
    since: datetime,
    until: datetime,
    found: Outcomes,
    times: Iterable[JobTime],
    lemon_alpha: float,
) -> uuid.UUID:
    report_id = uuid.uuid4()
    with connect(settings) as client:
        client.insert(
            "reports",
            [
                [
                    report_id,
                    reported_at,
                    since,
                    until,
                    found.nodes_judged,
                    found.failure_rate,
                    lemon_alpha,
                ]
            ],
            column_names=[
                "report_id",
                "reported_at",
                "since",
                "until",
                "nodes_judged",
                "failure_rate",
                "lemon_alpha",
            ],
        )
        rows = [*_story_rows(found, reported_at), *_restart_rows(found, reported_at)]
        if rows:
            client.insert("rule_outcomes", rows, column_names=OUTCOME_COLUMNS)
        lemons = [
            [
                report_id,
                reported_at,
                x.cluster,
                x.node,
                x.jobs_ran,
                x.jobs_failed,
                x.expected,
                x.p_value,
            ]
            for x in found.lemons
        ]
        if lemons:
            client.insert("lemon_nodes", lemons, column_names=LEMON_COLUMNS)
        jobs = [
            [t.job_id, t.cluster, t.gpus, t.productive_s, t.lost_s, t.open_s, until, reported_at]
            for t in times
        ]
        if jobs:
            client.insert("job_ettr", jobs, column_names=ETTR_COLUMNS)
    return report_id


OUTCOME_COLUMNS = (
    "trigger_id",
    "kind",
    "rule",
    "cluster",
    "subject",
    "decided_at",
    "symptom_at",
    "drained_at",
    "validated_at",
    "verdict",
    "released_at",
    "requeued_at",
    "started_at",
    "again_at",
    "outcome",
    "why",
    "reported_at",
)
LEMON_COLUMNS = (
    "report_id",
    "reported_at",
    "cluster",
    "node",
    "jobs_ran",
    "jobs_failed",
    "expected",
    "p_value",
)
ETTR_COLUMNS = (
    "job_id",
    "cluster",
    "gpus",
    "productive_s",
    "lost_s",
    "open_s",
    "as_of",
    "reported_at",
)


def _story_rows(found: Outcomes, reported_at: datetime) -> list[list[Any]]:
    return [
        [
            uuid.UUID(s.trigger_id),
            "quarantine",
            s.rule,
            s.cluster,
            s.node,
            s.decided_at,
            s.symptom_at,
            s.drained_at,
            s.validated_at,
            s.verdict or "",
            s.released_at,
            None,
            None,
            s.failed_again_at,
            s.outcome,
            s.why,
            reported_at,
        ]
        for s in found.stories
    ]


def _restart_rows(found: Outcomes, reported_at: datetime) -> list[list[Any]]:
    return [
        [
            uuid.UUID(r.trigger_id),
            "restart",
            r.rule,
            r.cluster,
            r.job,
            r.decided_at,
            None,
            None,
            None,
            "",
            None,
            r.requeued_at,
            r.started_at,
            r.ended_at,
            r.outcome,
            r.why,
            reported_at,
        ]
        for r in found.restarts
    ]
