"""Circuit breakers read the ledger: share of the fleet quarantined, restarts per job."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from actions.breaker import quarantine_group_share, quarantine_share, restart_rate
from actions.fleet import FleetSizes, ObservedFleet
from actions.ledger import DRAIN, History, LedgerEntry
from actions.settings import ActionsSettings
from schemas.events import NodeHeartbeat, NodeStatusChanged
from schemas.runtime.fleet import Fleet
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


def status(node: str, cluster: str = "test", **facts: Any) -> NodeStatusChanged:
    return NodeStatusChanged(
        source="t",
        cluster=cluster,
        subject=node,
        occurred_at=NOW,
        payload={"state": "in_service", **facts},
    )


A100 = {"gpu_model": "NVIDIA A100-SXM4-80GB"}
GROUPS = ActionsSettings(
    fleet_size={"test": 100},
    quarantine_max_share=0.5,
    quarantine_groups=[
        {"match": {"gpu_model": "NVIDIA A100*"}, "quarantine_max_share": 0.1},
        {
            "match": {"label": {"pool": "inference"}},
            "quarantine_max_share": 0.25,
            "quarantine_window_s": 60,
        },
    ],
)


def known(*statuses: NodeStatusChanged) -> FleetSizes:
    fleet = Fleet()
    fleet.nodes = {s.subject: s for s in statuses}
    return FleetSizes(GROUPS.fleet_size, ObservedFleet(900), fleet)


def group_share(nodes: tuple[str, ...], history: History, fleets: FleetSizes) -> str | None:
    return quarantine_group_share(quarantine(nodes), history, GROUPS, NOW, fleets)


def test_a_node_group_keeps_its_own_cap_within_the_clusters() -> None:
    a100s = [status(f"a{i}", **A100) for i in range(20)]
    others = [status(f"h{i}", gpu_model="NVIDIA H100 80GB HBM3") for i in range(20)]
    fleets = known(*a100s, *others, status("a-elsewhere", cluster="b", **A100))
    # Two of 20 A100s are 10%: allowed; a third is not, though the cluster's 50% allows it.
    assert group_share(("a0", "a1"), NONE, fleets) is None
    drained = of(entry(DRAIN, 60, nodes=("a0", "h1", "h2", "h3")))
    assert group_share(("a1",), drained, fleets) is None
    twice = of(entry(DRAIN, 60, nodes=("a0", "a1", "h1")))
    assert group_share(("a2",), twice, fleets) == (
        "quarantining 3 of the 20 nodes of group gpu_model=NVIDIA A100* exceeds 10% within 3600s"
    )
    # Drains outside the group, or only of other groups' nodes, leave it alone.
    assert group_share(("h4", "h5", "h6"), twice, fleets) is None
    # Drains older than the window do not count.
    assert group_share(("a2",), of(entry(DRAIN, 4000, nodes=("a0", "a1"))), fleets) is None


def test_each_group_a_drain_touches_must_allow_it_in_its_own_window() -> None:
    pool = [status(f"i{i}", labels={"pool": "inference"}) for i in range(4)]
    fleets = known(*pool, status("a0", labels={"pool": "inference"}, **A100), status("a1", **A100))
    old = of(entry(DRAIN, 120, nodes=("i0",)))  # outside the pool's 60 s window
    assert group_share(("i1",), old, fleets) is None
    why = group_share(("i1",), of(entry(DRAIN, 30, nodes=("i0",))), fleets)
    assert why == (
        "quarantining 2 of the 5 nodes of group label.pool=inference exceeds 25% within 60s"
    )
    # a0 is in both groups: the A100s' (1 of 2 > 10%) refuses first.
    assert "group gpu_model=NVIDIA A100*" in str(group_share(("a0",), NONE, fleets))
    # A node whose facts are not known is in no group.
    assert group_share(("unknown",), NONE, fleets) is None


def test_a_group_that_selects_jobs_is_refused() -> None:
    with pytest.raises(ValidationError, match="user=ana selects no node"):
        ActionsSettings(quarantine_groups=[{"match": {"user": "ana"}, "quarantine_max_share": 0.1}])


def test_heartbeats_arriving_late_count_as_of_their_own_time() -> None:
    """A simulated day sent in a minute: its heartbeats, written now, are stamped up to a day
    ago; counted against the clock, no fleet was seen and every drain was refused (issue 40)."""
    fleet = ObservedFleet(900)
    for i in range(200):
        fleet.observe(heartbeat(f"h{i}", "sim", NOW - timedelta(hours=5)), NOW.timestamp())
    assert fleet.size("sim", NOW) == 200
    # Live heartbeats written as they happen, then silence: the window ends at the clock.
    live = ObservedFleet(900)
    for i in range(200):
        at = NOW - timedelta(seconds=1000)
        live.observe(heartbeat(f"h{i}", "sim", at), at.timestamp())
    assert live.size("sim", NOW) == 0
