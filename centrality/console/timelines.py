"""A node's, a job's or an incident's story as the console shows it: the events `centrality
history` reads from ClickHouse, each with one line of what it says (`history_cli.summary`) and
links to every subject it names that the console can show."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from centrality.history_cli import summary
from schemas.envelope import Event
from schemas.events import Trigger
from schemas.events.incidents import INCIDENT_PREFIX

Kind = Callable[[str], str | None]  # a subject's kind (node, job, incident), None: not shown


def _named(event: Event) -> list[str]:
    """The subjects an event names: its own, and the nodes, jobs and trigger it is about."""
    p = event.payload
    names = [event.subject]
    for attr in ("nodes", "jobs"):
        value = getattr(p, attr, ())
        if isinstance(value, tuple | list):
            names += [str(v) for v in value]
    incident = getattr(p, "incident", None)
    if incident:
        names.append(str(incident))
    return names


def links(event: Event, kind: Kind) -> list[dict[str, str]]:
    seen: dict[str, dict[str, str]] = {}
    for name in _named(event):
        found = kind(name)
        if found is not None and name not in seen:
            seen[name] = {"kind": found, "id": name}
    return list(seen.values())


def _category(event: Event) -> str:
    if isinstance(event, Trigger):
        return "operator" if event.payload.operator else "decision"
    if event.topic == "actions":
        return "result"
    if event.topic in ("silences", "incidents"):
        return event.topic[:-1]
    return "event"


def rows(events: Iterable[Event], kind: Kind) -> list[dict[str, Any]]:
    return [
        {
            "at": e.occurred_at.isoformat(),
            "type": e.type,
            "subject": e.subject,
            "category": _category(e),
            "what": summary(e),
            "links": links(e, kind),
            "event": e.model_dump(mode="json"),
        }
        for e in events
    ]


def kind_in(nodes: Iterable[str], jobs: Iterable[str]) -> Kind:
    """Subjects the console can link to: the fleet's nodes and jobs, and incidents."""
    node_names, job_ids = set(nodes), set(jobs)

    def kind(name: str) -> str | None:
        if name in node_names:
            return "node"
        if name in job_ids:
            return "job"
        if name.startswith(INCIDENT_PREFIX):
            return "incident"
        return None

    return kind
