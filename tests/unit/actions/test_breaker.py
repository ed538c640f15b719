"""Circuit breakers read the ledger: share of the fleet quarantined, restarts per job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from actions.breaker import quarantine_share, restart_rate
from actions.ledger import LedgerEntry
from actions.settings import ActionsSettings
from tests.support.triggers import quarantine, restart

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def entry(action: str, ago_s: float, **kw: Any) -> LedgerEntry:
    base: dict[str, Any] = {
        "trigger_id": "00000000-0000-0000-0000-000000000001",
        "trigger_type": "X",
        "action": action,
        "cluster": "test",
        "subject": "slurm/test/42",
        "outcome": "succeeded",
        "incident": "i",
        "recorded_at": NOW - timedelta(seconds=ago_s),
    }
    return LedgerEntry.model_validate({**base, **kw})


SETTINGS = ActionsSettings(fleet_size={"test": 20}, quarantine_max_share=0.1)


def test_quarantine_within_share_passes_and_beyond_trips() -> None:
    assert quarantine_share(quarantine(("n1", "n2")), [], SETTINGS, NOW) is None
    history = [entry("quarantine_nodes", 60, nodes=("n1", "n2"))]
    why = quarantine_share(quarantine(("n3",)), history, SETTINGS, NOW)
    assert why is not None and "3 of 20" in why


def test_released_nodes_and_old_entries_do_not_count() -> None:
    history = [
        entry("quarantine_nodes", 600, nodes=("n1", "n2")),
        entry("release_nodes", 300, nodes=("n1",)),
        entry("quarantine_nodes", 7200, nodes=("n5", "n6")),  # outside the window
        entry("quarantine_nodes", 60, nodes=("n7", "n8"), outcome="failed", error="boom"),
    ]
    assert quarantine_share(quarantine(("n3",)), history, SETTINGS, NOW) is None


def test_unknown_fleet_size_refuses() -> None:
    why = quarantine_share(quarantine(("n1",), cluster="other"), [], SETTINGS, NOW)
    assert why is not None and "not configured" in why


def test_restarts_per_window() -> None:
    settings = ActionsSettings(restart_max_per_window=2, restart_window_s=3600)
    history = [entry("restart_job", 100), entry("restart_job", 200, outcome="started")]
    why = restart_rate(restart(), history, settings, NOW)
    assert why is not None and "2 times" in why
    other_job = [entry("restart_job", 100, subject="slurm/test/7")] * 2
    assert restart_rate(restart(), other_job, settings, NOW) is None
    assert restart_rate(restart(), history[:1], settings, NOW) is None


def test_allowlist_per_cluster() -> None:
    s = ActionsSettings(allow={"prod": ["restart_job", "notify"], "*": ["notify"]})
    assert s.allows("prod", "restart_job")
    assert not s.allows("prod", "quarantine_nodes")
    assert s.allows("dev", "notify") and not s.allows("dev", "restart_job")
    assert ActionsSettings().allows("any", "quarantine_nodes")
