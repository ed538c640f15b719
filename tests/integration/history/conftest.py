"""A migrated database holding a simulated incident hour, and the environment CLI commands read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from centrality.bench.history_data import incident, insert_events, with_decisions
from centrality.stack.stack import Stack
from schemas.deadletter import DeadLetter
from schemas.envelope import Event
from schemas.events import Trigger
from streams.history.client import connect
from streams.history.rows import DEAD_LETTER_COLUMNS, dead_letter_row
from streams.history.settings import ClickHouseSettings


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
    return DashboardHistory(
        seeded=seeded,
        start=seeded.now - timedelta(hours=6),
        end=seeded.now + timedelta(minutes=1),
        variables={"cluster": "sim", "node": "n-07", "job": "slurm/sim/1001"},
    )


@pytest.fixture
def cli_env(
    stack: Stack, clickhouse_settings: ClickHouseSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in stack.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CENTRALITY_CLICKHOUSE_DATABASE", clickhouse_settings.database)
    monkeypatch.setenv("COLUMNS", "250")  # tables unwrapped, so tests can read them
