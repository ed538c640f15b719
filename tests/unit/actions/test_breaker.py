"""Circuit breakers read the ledger: share of the fleet quarantined, restarts per job."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from actions.breaker import quarantine_share, restart_rate
from actions.fleet import FleetSizes, ObservedFleet
from actions.ledger import History, LedgerEntry
from actions.settings import ActionsSettings
from schemas.events import NodeHeartbeat
from tests.support.triggers import quarantine, restart

NOW = datetime(2026, 1, 1, 12, tzinfo=UTC)


def entry(action: str, ago_s: float, **kw: Any) -> LedgerEntry:
    base: dict[str, Any] = {
        "trigger_id": uuid.uuid4(),
        "trigger_type": "X",
        "action": action,
        "cluster": "test",
        "subject": "slurm/test/42",
        "outcome": "succeeded",
        "incident": "i",
        "recorded_at": NOW - timedelta(seconds=ago_s),
    }
    return LedgerEntry.model_validate({**base, **kw})


def of(*entries: LedgerEntry) -> History:
    return History.of(entries)


NONE = History(planned=False)


SETTINGS = ActionsSettings(fleet_size={"test": 20}, quarantine_max_share=0.1)
NO_FLEET_SEEN = FleetSizes(SETTINGS.fleet_size, ObservedFleet(900))


def seen(cluster: str, nodes: int, ago_s: float, window_s: float = 900) -> ObservedFleet:
    fleet = ObservedFleet(window_s)
    for i in range(nodes):
        fleet.observe(heartbeat(f"h{i}", cluster, NOW - timedelta(seconds=ago_s)))
    return fleet


def heartbeat(node: str, cluster: str, at: datetime) -> NodeHeartbeat:
    return NodeHeartbeat(
        source="t",
        cluster=cluster,
        subject=node,
        occurred_at=at,
        payload={"agent_version": "t", "gpus": 8, "interval_s": 30},
    )


def test_quarantine_within_share_passes_and_beyond_trips() -> None:
    assert quarantine_share(quarantine(("n1", "n2")), NONE, SETTINGS, NOW, NO_FLEET_SEEN) is None
    history = of(entry("quarantine_nodes", 60, nodes=("n1", "n2")))
    why = quarantine_share(quarantine(("n3",)), history, SETTINGS, NOW, NO_FLEET_SEEN)
    assert why is not None and "3 of 20 nodes (configured)" in why


def test_released_nodes_and_old_entries_do_not_count() -> None:
    history = of(
        entry("quarantine_nodes", 600, nodes=("n1", "n2")),
        entry("release_nodes", 300, nodes=("n1",)),
        entry("quarantine_nodes", 7200, nodes=("n5", "n6")),  # outside the window
        entry("quarantine_nodes", 60, nodes=("n7", "n8"), outcome="failed", error="boom"),
    )
    assert quarantine_share(quarantine(("n3",)), history, SETTINGS, NOW, NO_FLEET_SEEN) is None


def test_a_cluster_with_no_fleet_configured_nor_seen_refuses() -> None:
    why = quarantine_share(quarantine(("n1",), cluster="other"), NONE, SETTINGS, NOW, NO_FLEET_SEEN)
    assert why == (
        "no fleet known for cluster 'other': no nodes with a heartbeat within 900s, and "
        "CENTRALITY_ACTIONS_FLEET_SIZE does not name it"
    )


def test_without_configuration_the_fleet_is_the_nodes_seen_heartbeating() -> None:
    settings = ActionsSettings(quarantine_max_share=0.1)
    fleets = FleetSizes(settings.fleet_size, seen("sim", 200, ago_s=60))
    assert quarantine_share(quarantine(("n1",), cluster="sim"), NONE, settings, NOW, fleets) is None
    history = of(
        entry("quarantine_nodes", 60, cluster="sim", nodes=tuple(f"x{i}" for i in range(20)))
    )
    why = quarantine_share(quarantine(("n1",), cluster="sim"), history, settings, NOW, fleets)
    assert why is not None and "21 of 200 nodes (nodes with a heartbeat within 900s)" in why
    # Heartbeats older than the window do not count; a configured size wins over what is seen.
    stale = FleetSizes({}, seen("sim", 200, ago_s=1000))
    assert quarantine_share(quarantine(("n1",), cluster="sim"), NONE, settings, NOW, stale)
    configured = FleetSizes({"sim": 5}, seen("sim", 200, ago_s=60))
    assert configured.size("sim", NOW) == (5, "configured")


def test_restarts_per_window() -> None:
    settings = ActionsSettings(restart_max_per_window=2, restart_window_s=3600)
    done = [entry("restart_job", 100), entry("restart_job", 200, outcome="started")]
    why = restart_rate(restart(), of(*done), settings, NOW, NO_FLEET_SEEN)
    assert why is not None and "2 times" in why
    other_job = of(*(entry("restart_job", 100, subject="slurm/test/7") for _ in range(2)))
    assert restart_rate(restart(), other_job, settings, NOW, NO_FLEET_SEEN) is None
    assert restart_rate(restart(), of(done[0]), settings, NOW, NO_FLEET_SEEN) is None


def test_allowlist_per_cluster() -> None:
    s = ActionsSettings(allow={"prod": ["restart_job", "notify"], "*": ["notify"]})
    assert s.allows("prod", "restart_job")
    assert not s.allows("prod", "quarantine_nodes")
    assert s.allows("dev", "notify") and not s.allows("dev", "restart_job")
    assert ActionsSettings().allows("any", "quarantine_nodes")
