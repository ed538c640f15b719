"""A migrated database holding a simulated incident hour, and the environment CLI commands read."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import pytest

from centrality.bench.history_data import incident, insert_events, with_decisions
from centrality.stack.stack import Stack
from schemas.envelope import Event
from schemas.events import Trigger
from streams.history.client import connect
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


@pytest.fixture
def cli_env(
    stack: Stack, clickhouse_settings: ClickHouseSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in stack.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CENTRALITY_CLICKHOUSE_DATABASE", clickhouse_settings.database)
    monkeypatch.setenv("COLUMNS", "250")  # tables unwrapped, so tests can read them
