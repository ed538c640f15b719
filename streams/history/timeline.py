"""The story of one job or node: its events, the triggers about it and the actions they led to."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from schemas.envelope import Event
from schemas.events import Trigger
from streams.history.query import (
    action_results_for,
    event_time_key,
    events_between,
    events_by_id,
    jobs_on_node,
    triggers_naming,
)
from streams.history.settings import ClickHouseSettings

# Telemetry that would drown a story, and the statuses that retell it; shown with `--all`.
NOISY_TYPES = frozenset(
    {
        "GpuSampled",
        "NcclSampled",
        "NodeHeartbeat",
        "LogLinesObserved",
        "StepTimesObserved",
        "CollectivesTimed",
        "NodeStatusChanged",
        "JobStatusChanged",
    }
)


def timeline(
    settings: ClickHouseSettings,
    kind: Literal["job", "node"],
    subject: str,
    since: datetime,
    until: datetime,
    include_noisy: bool = False,
) -> list[Event]:
    subjects = [subject]
    if kind == "node":
        subjects += jobs_on_node(settings, subject, until)
    found = {str(e.event_id): e for e in events_between(settings, since, until, subjects)}
    if kind == "node":
        naming = [t for t in triggers_naming(settings, subject, since, until) if t not in found]
        found.update(events_by_id(settings, naming))
    trigger_ids = [i for i, e in found.items() if isinstance(e, Trigger)]
    found.update({str(e.event_id): e for e in action_results_for(settings, trigger_ids)})
    events = (e for e in found.values() if include_noisy or e.type not in NOISY_TYPES)
    return sorted(events, key=event_time_key)
