"""A migrated database holding a simulated incident hour, and the environment CLI commands read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from centrality.bench.history_data import incident, insert_events, job_run, with_decisions
from centrality.stack.stack import Stack
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.events import ActionFailed, ActionHeld, GpuXidObserved, QuarantineNodes, Trigger
from schemas.events.incidents import IncidentOpened, IncidentResolved, IncidentUpdated
from streams.analysis.goodput import fold, job_time
from streams.analysis.outcomes import outcomes
from streams.analysis.replay.clickhouse_source import ClickHouseSource, Scope
from streams.analysis.reports import job_histories, outcome_events, store_report
from streams.analysis.whatif.candidate import candidate
from streams.analysis.whatif.run import what_if
from streams.analysis.whatif.store import store_whatif
from streams.history.client import connect
from streams.history.rows import DEAD_LETTER_COLUMNS, dead_letter_row
from streams.history.settings import ClickHouseSettings
from streams.settings import StreamsSettings
from tests.support.incidents import incident as incident_event


@dataclass(frozen=True)
class Seeded:
    now: datetime
    node: str
    events: list[Event]

    @property
    def triggers(self) -> list[Trigger]:
        return [e for e in self.events if isinstance(e, Trigger)]


@pytest.fixture
def seeded(clickhouse_settings: ClickHouseSettings) -> Seeded:
    now = datetime.now(UTC)
    events = with_decisions(incident(now, node="n-07"))
    with connect(clickhouse_settings) as client:
        insert_events(client, events)
    return Seeded(now, "n-07", events)


@dataclass(frozen=True)
class DashboardHistory:
    """A seeded history every dashboard panel has rows in, and the time range to ask it for."""

    seeded: Seeded
    start: datetime
    end: datetime
    variables: dict[str, str]


@pytest.fixture
def dashboard_history(seeded: Seeded, clickhouse_settings: ClickHouseSettings) -> DashboardHistory:
    # The incident makes no dead letters; the dead-letter panel needs one.
    letter = DeadLetter(
        reason="malformed",
        consumer="streams",
        topic="jobs",
        partition=0,
        offset=1,
        raw=b"{",
        dead_lettered_at=seeded.now - timedelta(minutes=3),
    )
    with connect(clickhouse_settings) as client:
        client.insert("dead_letters", [dead_letter_row(letter)], column_names=DEAD_LETTER_COLUMNS)
        # n-07's incident took one job down; three more failing there, among thirty jobs that
        # ran well elsewhere, make it a lemon for the report's panel.
        insert_events(client, _lemon_on(seeded.node, seeded.now))
    _report_and_whatif(clickhouse_settings, seeded.now)
    with connect(clickhouse_settings) as client:  # after the report: it judges n-07's story
        insert_events(client, _holds(seeded.now) + _incidents(seeded.now))
    return DashboardHistory(
        seeded=seeded,
        start=seeded.now - timedelta(hours=6),
        end=seeded.now + timedelta(minutes=1),
        variables={"cluster": "sim", "node": "n-07", "job": "slurm/sim/1001"},
    )


def _holds(now: datetime) -> list[Event]:
    """Fatal XIDs' drains: one a silence held, one held before `ActionHeld` existed (a refused
    `ActionFailed` naming the silence), one the breaker refused."""
    until = now + timedelta(hours=1)
    why = f"held by silence s-seed until {until.isoformat()}"
    outcomes: list[tuple[type[Event], dict[str, Any]]] = [
        (ActionHeld, {"held_by": "s-seed", "why": why, "until": until}),
        (ActionFailed, {"error": why, "permanent": True, "refused": True, "held_by": "s-seed"}),
        (ActionFailed, {"error": "circuit breaker: 3 of 10", "permanent": True, "refused": True}),
    ]
    events: list[Event] = []
    for k, (result, said) in enumerate(outcomes):
        node, at = f"n-2{k}", now - timedelta(minutes=30 - k)
        xid = GpuXidObserved(
            source="agent",
            cluster="sim",
            subject=node,
            occurred_at=at,
            payload={"gpu": 0, "xid": 79, "message": "fallen off the bus"},
        )
        drain = QuarantineNodes.decide(
            cause=xid,
            source="streams",
            rule="fatal_xid",
            window=f"w{k}",
            reason="Xid 79",
            nodes=(node,),
        )
        body = {
            "trigger_id": drain.event_id,
            "trigger_type": drain.type,
            "action": "quarantine_nodes",
            "nodes": (node,),
            **said,
        }
        env = {"source": "actions", "cluster": "sim", "subject": node}
        done = result.model_validate({**env, "occurred_at": at + timedelta(seconds=1),
                                      "payload": body})  # fmt: skip
        events += [xid, drain, done]
    return events


def _incidents(now: datetime) -> list[Event]:
    """A switch's nodes that stopped sending heartbeats (opened, grown, resolved) and a fatal XID
    still open: every version, as the streams app publishes them."""
    lost, xid = now - timedelta(hours=2), now - timedelta(minutes=30)
    common: dict[str, Any] = {
        "cluster": "sim",
        "opened_at": lost,
        "first_fault_at": lost - timedelta(seconds=20),
        "last_fault_at": lost,
    }
    grown: dict[str, Any] = {"nodes": "n-[30-39]", "nodes_count": 10, "states": {"unreachable": 10}}
    back: dict[str, Any] = {
        "state": "resolved",
        "resolved_at": lost + timedelta(minutes=12),
        "states": {"in_service": 9, "quarantined": 1},
    }
    return [
        incident_event(
            "inc-s12",
            IncidentOpened,
            **common,
            nodes="n-[30-33]",
            nodes_count=4,
            states={"unreachable": 4},
        ),
        # Each version published when it changed (the helper dates one by its last fault).
        incident_event("inc-s12", IncidentUpdated, **common, **grown).model_copy(
            update={"occurred_at": lost + timedelta(minutes=1)}
        ),
        incident_event("inc-s12", IncidentResolved, **common, **grown | back).model_copy(
            update={"occurred_at": back["resolved_at"]}
        ),
        incident_event(
            "inc-n07",
            IncidentOpened,
            cluster="sim",
            kind="fatal_xid:79",
            title="n-07: Xid 79",
            opened_at=xid,
            first_fault_at=xid,
            last_fault_at=xid,
            nodes="n-07",
            nodes_count=1,
            states={"quarantined": 1},
            held_by=("s-seed",),
        ),
    ]


def _lemon_on(node: str, now: datetime) -> list[Event]:
    start = now - timedelta(hours=5)
    runs = [
        job_run(
            f"slurm/sim/lemon-{k}", [node], start + timedelta(minutes=20 * k), "sim", crash=True
        )
        for k in range(3)
    ]
    runs += [
        job_run(
            f"slurm/sim/well-{k}",
            [f"n-1{k % 5}", f"n-2{k % 5}"],
            start + timedelta(minutes=5 * k),
            "sim",
            crash=False,
        )
        for k in range(30)
    ]
    return [e for run in runs for e in run]


def _report_and_whatif(settings: ClickHouseSettings, now: datetime) -> None:
    """What `centrality report` and `centrality whatif` keep for the dashboards, over the
    seeded hours."""
    since, until = now - timedelta(hours=6), now
    found = outcomes(outcome_events(settings, since, until), since, until, until)
    jobs = fold(job_histories(settings, since, until)).values()
    store_report(settings, now, since, until, found, [job_time(j, until) for j in jobs], 0.01)
    restarts_off = candidate(StreamsSettings(), sets=["restart_incomplete_exit.max_restarts=0"])
    source = ClickHouseSource(settings, Scope(since, until))
    store_whatif(settings, now, what_if(source, restarts_off, 3600.0, 1, until))


@pytest.fixture
def cli_env(
    stack: Stack, clickhouse_settings: ClickHouseSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in stack.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CENTRALITY_CLICKHOUSE_DATABASE", clickhouse_settings.database)
    monkeypatch.setenv("COLUMNS", "250")  # tables unwrapped, so tests can read them
