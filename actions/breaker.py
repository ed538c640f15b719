"""Circuit breakers: guards a handler declares; they read the ledger, so they survive restarts.

A guard returns why the action must not run now, or None. A cluster's fleet size is
`CENTRALITY_ACTIONS_FLEET_SIZE` where configured, else the nodes observed heartbeating (see
`actions.fleet`), never what the scheduler says: a breaker must still hold when the scheduler is
what misbehaves. A cluster with no node seen is never quarantined. A node group's size
(`CENTRALITY_ACTIONS_QUARANTINE_GROUPS`) is its nodes the streams app knows, by their facts.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from actions.fleet import FleetSizes
from actions.ledger import DRAIN, RELEASE, History, LedgerEntry
from actions.registry import Guard
from actions.settings import ActionsSettings
from schemas.events import QuarantineNodes, RestartJob, Trigger

# The remediation ladder's actions that repair a node, and those that end its remediation.
RESET, REBOOT, ESCALATE = "reset_gpus", "reboot_nodes", "escalate_nodes"
_NEVER = datetime.min.replace(tzinfo=UTC)
_WHAT = {"RunBenchmark": "a benchmark", "ResetGpus": "a GPU reset", "RebootNodes": "a reboot"}


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
    share, window_s = settings.quarantine_max_share, settings.quarantine_window_s
    wanted = _out_with(trigger, history, now - timedelta(seconds=window_s))
    if len(wanted) > share * fleet:
        return (
            f"quarantining {len(wanted)} of {fleet} nodes ({counted}) exceeds "
            f"{share:.0%} within {window_s:g}s"
        )
    return None


def _out_with(trigger: QuarantineNodes, history: History, since: datetime) -> set[str]:
    """The nodes of the trigger's cluster drained since `since`, with those it asks for."""
    drained = history.drained(trigger.cluster).items()
    return {n for n, at in drained if at >= since} | set(trigger.payload.nodes)


def quarantine_group_share(
    trigger: QuarantineNodes,
    history: History,
    settings: ActionsSettings,
    now: datetime,
    fleets: FleetSizes,
) -> str | None:
    """Each node group the drain touches keeps its own cap, whatever its cluster's allows."""
    asked = set(trigger.payload.nodes)
    for group in settings.quarantine_groups:
        members = fleets.group(trigger.cluster, group.match)
        if not asked & members:
            continue
        window_s = group.quarantine_window_s or settings.quarantine_window_s
        wanted = _out_with(trigger, history, now - timedelta(seconds=window_s)) & members
        if len(wanted) > group.quarantine_max_share * len(members):
            return (
                f"quarantining {len(wanted)} of the {len(members)} nodes of group "
                f"{group.match.said()} exceeds {group.quarantine_max_share:.0%} within "
                f"{window_s:g}s"
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
    trigger: Trigger,
    history: History,
    settings: ActionsSettings,
    now: datetime,
    fleets: FleetSizes,
) -> str | None:
    """A benchmark, GPU reset or reboot runs only on nodes this worker's ledger shows drained
    and not yet released: never on a node still in service, whatever asked for it."""
    nodes: Sequence[str] = getattr(trigger.payload, "nodes", ())
    drained = set()
    for node in nodes:
        latest = None
        for e in history.moves(trigger.cluster, node):
            done = e.outcome != "started" and e.error is None  # in doubt is not drained
            if done and (latest is None or e.recorded_at >= latest.recorded_at):
                latest = e
        if latest is not None and latest.action == DRAIN:
            drained.add(node)
    missing = [n for n in nodes if n not in drained]
    if missing:
        what = _WHAT.get(trigger.type, "this")
        return f"{', '.join(missing)} not drained: {what} runs only on drained nodes"
    return None


def _acted_on(history: History, cluster: str, action: str, node: str) -> list[LedgerEntry]:
    return [e for e in history.acted(cluster, action) if e.error is None and node in e.nodes]


def rung_budget(action: str, what: str, most: str, window: str) -> Guard:
    """At most `settings.<most>` of `action` on one node within `settings.<window>` seconds
    (e.g. two reboots a day): a node that needs more needs a person."""

    def guard(
        trigger: Trigger,
        history: History,
        settings: ActionsSettings,
        now: datetime,
        fleets: FleetSizes,
    ) -> str | None:
        limit, window_s = int(getattr(settings, most)), float(getattr(settings, window))
        since = now - timedelta(seconds=window_s)
        for node in getattr(trigger.payload, "nodes", ()):
            done = [
                e
                for e in _acted_on(history, trigger.cluster, action, node)
                if e.recorded_at >= since
            ]
            if len(done) >= limit:
                return f"{node} was {what} {len(done)} times within {window_s:g}s (limit {limit})"
        return None

    return guard


def in_remediation(history: History, cluster: str, now: datetime, window_s: float) -> set[str]:
    """Nodes of `cluster` being repaired: reset or rebooted within `window_s`, and neither
    released nor escalated since."""
    since = now - timedelta(seconds=window_s)
    began: dict[str, datetime] = {}
    ended: dict[str, datetime] = {}
    for actions, latest in (((RESET, REBOOT), began), ((RELEASE, ESCALATE), ended)):
        for action in actions:
            for e in history.acted(cluster, action):
                if e.error is not None:
                    continue
                for node in e.nodes:
                    latest[node] = max(latest.get(node, e.recorded_at), e.recorded_at)
    return {n for n, at in began.items() if at >= since and ended.get(n, _NEVER) < at}


def remediation_share(
    trigger: Trigger,
    history: History,
    settings: ActionsSettings,
    now: datetime,
    fleets: FleetSizes,
) -> str | None:
    """At most `remediation_max_nodes` nodes of a cluster in remediation at once: a rack-wide
    fault is a person's to look at, not a reason to reboot the rack."""
    busy = in_remediation(history, trigger.cluster, now, settings.remediation_window_s)
    wanted = busy | set(getattr(trigger.payload, "nodes", ()))
    if len(wanted) > settings.remediation_max_nodes:
        others = ", ".join(sorted(busy)[:8])
        return (
            f"{len(wanted)} nodes of {trigger.cluster} would be in remediation at once "
            f"(limit {settings.remediation_max_nodes}; already: {others})"
        )
    return None


def all_of(*guards: Guard) -> Guard:
    """The first refusal of `guards`, in order."""

    def guard(
        trigger: Any, history: History, settings: ActionsSettings, now: datetime, fleets: FleetSizes
    ) -> str | None:
        for each in guards:
            tripped = each(trigger, history, settings, now, fleets)
            if tripped is not None:
                return tripped
        return None

    return guard
