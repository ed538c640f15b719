"""What the page reads: the fleet and jobs (the status topic, live), one node or job with its
timeline (ClickHouse), incidents (the client), silences, the session, and the feed of changes."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

import orjson
import structlog
from aiohttp import web

from actions.silences import Silence
from centrality.console import timelines, views
from centrality.console.app import GUARD, LIVE, SETTINGS, SIGNER, json_response, refused
from centrality.console.told import told_of
from centrality.fleet import Fleet, matcher
from centrality.fleet_detail import listed as _listed
from centrality.silence_cli import row as silence_row
from schemas.envelope import Event, utcnow
from schemas.events import SilenceAdded
from schemas.events.incidents import IncidentEvent

log = structlog.get_logger("console")
PING_S = 2.0  # the feed says it is alive this often; a page that hears nothing for longer
# than a few pings calls it lost
ANSWERS_MAX = 64


@dataclass
class Kept:
    """What one console keeps between requests: rows per status record, counts and listings
    per version of what it read."""

    node_rows: views.Rows = field(default_factory=lambda: views.Rows(views.node_row))
    job_rows: views.Rows = field(default_factory=lambda: views.Rows(views.job_row))
    summaries: dict[str, tuple[int, dict[str, Any]]] = field(default_factory=dict)
    answers: dict[tuple[int, str, str], bytes] = field(default_factory=dict)


KEPT: web.AppKey[Kept] = web.AppKey("kept", Kept)


def routes(app: web.Application) -> None:
    app[KEPT] = Kept()
    app.on_startup.append(_warm)
    app.router.add_get("/api/session", session)
    app.router.add_get("/api/nodes", nodes)
    app.router.add_get("/api/jobs", jobs)
    app.router.add_get("/api/node", node)
    app.router.add_get("/api/job", job)
    app.router.add_get("/api/incidents", incidents)
    app.router.add_get("/api/incident", incident)
    app.router.add_get("/api/story", story_of)
    app.router.add_get("/api/silences", silences)
    app.router.add_get("/api/feed", feed)


async def _warm(app: web.Application) -> None:
    """Every row made before the first page asks (10,000 rows take a tenth of a second), so
    the first listing costs what any other does."""
    kept, fleet = app[KEPT], app[LIVE].fleet
    for status in fleet.nodes.values():
        kept.node_rows.of(status)
    for job in fleet.jobs.values():
        kept.job_rows.of(job)


async def session(request: web.Request) -> web.Response:
    signer, guard, live = request.app[SIGNER], request.app[GUARD], request.app[LIVE]
    cookie = request.cookies.get(guard.cookie, "")
    return json_response(
        {
            "operator": signer.operator,
            "can_act": signer.can_act,
            "why_read_only": signer.why_read_only,
            "note": signer.note,
            "csrf": guard.csrf(cookie),
            "version": live.version,
            "problem": live.problem,
        }
    )


def _listing(request: web.Request, kind: Literal["nodes", "jobs"]) -> web.Response:
    """A listing, answered again from memory while nothing changed (people open the same views
    over and over; 10,000 nodes are 1.2 MB of JSON)."""
    answers = request.app[KEPT].answers
    key = (request.app[LIVE].version, kind, request.query_string)
    body = answers.get(key)
    if body is None:
        response = _listed_now(request, kind)
        if response.status != 200 or not isinstance(response.body, bytes):
            return response
        if len(answers) >= ANSWERS_MAX or any(v != key[0] for v, _, _ in answers):
            answers.clear()
        body = answers[key] = response.body
    return web.Response(body=body, content_type="application/json")


def _listed_now(request: web.Request, kind: Literal["nodes", "jobs"]) -> web.Response:
    live = request.app[LIVE]
    table: dict[str, Any] = live.fleet.nodes if kind == "nodes" else live.fleet.jobs
    columns = views.NODE_COLUMNS if kind == "nodes" else views.JOB_COLUMNS
    kept = request.app[KEPT]
    rows = kept.node_rows if kind == "nodes" else kept.job_rows
    want = views.Selection.of(request.query, request.query.getall("state", []))
    statuses = list(table.values())
    try:
        found = views.choose(statuses, rows, columns, want)
    except ValueError as exc:
        return refused(400, str(exc))
    doc: dict[str, Any] = {
        "version": live.version,
        "total": len(statuses),
        "columns": columns,
        "rows": found,
    }
    return json_response(doc | _summary(kept.summaries, kind, live.version, statuses))


def _summary(
    summaries: dict[str, tuple[int, dict[str, Any]]], kind: str, version: int, statuses: list[Any]
) -> dict[str, Any]:
    """Counts (and the fleet's choices), made once per version of what the console read."""
    kept = summaries.get(kind)
    if kept is None or kept[0] != version:
        summary: dict[str, Any] = {"counts": views.counts(statuses)}
        if kind == "nodes":
            summary["facets"] = views.node_facets(statuses)
        kept = summaries[kind] = (version, summary)
    return kept[1]


async def nodes(request: web.Request) -> web.Response:
    return _listing(request, "nodes")


async def jobs(request: web.Request) -> web.Response:
    return _listing(request, "jobs")


async def story(request: web.Request, kind: Literal["job", "node"], subject: str) -> dict[str, Any]:
    """The subject's timeline from ClickHouse, or why there is none."""
    from streams.history.settings import ClickHouseSettings
    from streams.history.timeline import timeline

    now = utcnow()
    since = now - timedelta(days=request.app[SETTINGS].timeline_days)
    until = now + timedelta(days=1)  # what clocks ahead of this one (a simulator's) stamped
    try:
        events: list[Event] = await asyncio.to_thread(
            timeline, ClickHouseSettings(), kind, subject, since, until
        )
    except Exception as exc:  # the history is a help here, not the answer (as `centrality node`)
        return {"timeline": [], "timeline_error": f"{type(exc).__name__}: {exc}"}
    fleet = request.app[LIVE].fleet
    link = timelines.kind_in(fleet.nodes, fleet.jobs)
    return {"timeline": timelines.rows(events, link), "timeline_error": None}


async def story_of(request: web.Request) -> web.Response:
    """A node's, job's or incident's story, apart from its page: ClickHouse may take a while,
    and what the status says is shown at once."""
    kind, subject = request.query.get("kind"), request.query.get("id", "")
    if kind not in ("node", "job", "incident"):
        return refused(400, "kind is node, job or incident")
    # An incident's story is a job's: the events whose subject it is (every version of it),
    # and what was decided and done about it.
    return json_response(await story(request, "node" if kind == "node" else "job", subject))


def _detail(status: Any, kind: str) -> dict[str, Any]:
    return {kind: orjson.loads(_listed(status, kind))}


async def node(request: web.Request) -> web.Response:
    name = request.query.get("name", "")
    live = request.app[LIVE]
    status = live.fleet.nodes.get(name)
    if status is None:
        return refused(404, f"no node {name!r}")
    covering = [
        silence_row(added, live.book.expired.get(i), verified)
        for i, (added, verified) in live.book.added.items()
        if added.cluster == status.cluster and _covers(added, name)
    ]
    active = [s for s in covering if s["active"]]
    return json_response(_detail(status, "node") | {"silences": active})


def _covers(added: SilenceAdded, node: str) -> bool:
    nodes = Silence.of(added).nodes
    return nodes is None or node in nodes


async def job(request: web.Request) -> web.Response:
    job_id = request.query.get("id", "")
    status = request.app[LIVE].fleet.jobs.get(job_id)
    if status is None:
        return refused(404, f"no job {job_id!r}")
    return json_response(_detail(status, "job"))


async def silences(request: web.Request) -> web.Response:
    book = request.app[LIVE].book
    rows = [
        silence_row(added, book.expired.get(i), verified)
        for i, (added, verified) in book.added.items()
    ]
    rows.sort(key=lambda r: (not r["active"], r["starts_at"]), reverse=False)
    return json_response({"version": request.app[LIVE].version, "silences": rows})


async def feed(request: web.Request) -> web.StreamResponse:
    """Server-sent events: `state` (version, and why the feed is lost, if it is) whenever it
    changes, and a `ping` every PING_S so the page can tell a silent feed from a dead one."""
    live = request.app[LIVE]
    response = web.StreamResponse(
        headers={"Content-Type": "text/event-stream", "X-Accel-Buffering": "no"}
    )
    await response.prepare(request)
    await response.write(b"retry: 1000\n\n")
    seen: tuple[int, str | None] | None = None
    while True:
        now = (live.version, live.problem)
        if now != seen:
            state = {"version": now[0], "problem": now[1]}
            await response.write(b"event: state\ndata: " + orjson.dumps(state) + b"\n\n")
            seen = now
        else:
            await response.write(b"event: ping\ndata: {}\n\n")
        await live.wait(now, PING_S)


def _incident_doc(event: IncidentEvent) -> dict[str, Any]:
    return {"id": event.subject, "cluster": event.cluster} | event.payload.model_dump(mode="json")


async def incidents(request: web.Request) -> web.Response:
    """Open ones first, then the newest (what `centrality incidents` reads)."""
    found = sorted(
        request.app[LIVE].incidents.values(),
        key=lambda i: (i.payload.state != "open", -i.payload.opened_at.timestamp()),
    )
    return json_response({"incidents": [_incident_doc(i) for i in found]})


def _members(fleet: Fleet, found: IncidentEvent) -> list[dict[str, Any]]:
    """The nodes whose status names the incident, and those its hostlist names (a resolved
    incident's nodes have moved on), each as its status says now."""
    named = {s.subject for s in fleet.nodes.values() if s.payload.incident == found.subject}
    with contextlib.suppress(ValueError):  # a hostlist cut with `…` to fit: its statuses say
        listed = matcher(found.payload.nodes)
        named.update(listed if isinstance(listed, set) else ())
    members = []
    for node in sorted(named):
        status = fleet.nodes.get(node)
        p = status.payload if status is not None else None
        members.append(
            {
                "node": node,
                "state": p.state if p else None,
                "why": (p.problem or p.why) if p else None,
            }
        )
    return members


async def incident(request: web.Request) -> web.Response:
    incident_id = request.query.get("id", "")
    live = request.app[LIVE]
    found = live.incidents.get(incident_id)
    if found is None:
        return refused(404, f"no incident {incident_id!r}")
    doc = {
        "incident": _incident_doc(found),
        "members": _members(live.fleet, found),
        "told": told_of(found, live.told.get(incident_id)),
    }
    return json_response(doc)
