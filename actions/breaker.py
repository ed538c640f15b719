"""Circuit breakers: guards a handler declares; they read the ledger, so they survive restarts.

A guard returns why the action must not run now, or None. A cluster's fleet size is
`CENTRALITY_ACTIONS_FLEET_SIZE` where configured, else the nodes observed heartbeating (see
`actions.fleet`), never what the scheduler says: a breaker must still hold when the scheduler is
what misbehaves. A cluster with no node seen is never quarantined.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from actions.fleet import FleetSizes
from actions.ledger import DRAIN, History, LedgerEntry
from actions.settings import ActionsSettings
from schemas.events import QuarantineNodes, RestartJob, RunBenchmark


def _recent(
    history: History, cluster: str, action: str, since: datetime, subject: str | None = None
) -> list[LedgerEntry]:
    return [
        e
        for e in history.acted(cluster, action, subject)
        if e.error is None and e.recorded_at >= since
    ]


def quarantine_share(
    trigger: QuarantineNodes,
    history: History,
    settings: ActionsSettings,
    now: datetime,
    fleets: FleetSizes,
) -> str | None:
    fleet, counted = fleets.size(trigger.cluster, now)
    if not fleet:
        return (
            f"no fleet known for cluster {trigger.cluster!r}: no {counted}, and "
            "CENTRALITY_ACTIONS_FLEET_SIZE does not name it"
        )
    since = now - timedelta(seconds=settings.quarantine_window_s)
    quarantined = {n for n, at in history.drained(trigger.cluster).items() if at >= since}
    wanted = quarantined | set(trigger.payload.nodes)
    limit = settings.quarantine_max_share * fleet
    if len(wanted) > limit:
        return (
            f"quarantining {len(wanted)} of {fleet} nodes ({counted}) exceeds "
            f"{settings.quarantine_max_share:.0%} within {settings.quarantine_window_s:g}s"
        )
    return None


def restart_rate(
    trigger: RestartJob,
    history: History,
    settings: ActionsSettings,
    now: datetime,
    fleets: FleetSizes,
) -> str | None:
    since = now - timedelta(seconds=settings.restart_window_s)
    done = _recent(history, trigger.cluster, "restart_job", since, subject=trigger.subject)
    if len(done) >= settings.restart_max_per_window:
        return (
            f"job {trigger.subject} was restarted {len(done)} times within "
            f"{settings.restart_window_s:g}s (limit {settings.restart_max_per_window})"
        )
    return None


def drained_first(
    trigger: RunBenchmark,
    history: History,
    settings: ActionsSettings,
    now: datetime,
    fleets: FleetSizes,
) -> str | None:
    """A benchmark runs only on nodes this worker's ledger shows drained and not yet released:
    never on a node still in service, whatever asked for it."""
    drained = set()
    for node in trigger.payload.nodes:
        latest = None
        for e in history.moves(trigger.cluster, node):
            done = e.outcome != "started" and e.error is None  # in doubt is not drained
            if done and (latest is None or e.recorded_at >= latest.recorded_at):
                latest = e
        if latest is not None and latest.action == DRAIN:
            drained.add(node)
    missing = [n for n in trigger.payload.nodes if n not in drained]
    if missing:
        return f"{', '.join(missing)} not drained: a benchmark runs only on drained nodes"
    return None
