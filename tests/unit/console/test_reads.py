"""What the page reads, from what the console read: a listing follows the version of what it
read, a node's page its status."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from aiohttp.test_utils import TestClient

from actions.ledger import ThreadRef, Told
from centrality.console.app import LIVE
from schemas.events.incidents import IncidentEvent, IncidentOpened, IncidentResolved
from tests.unit.console.conftest import logged_in

AT = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)


async def test_a_listing_is_new_once_what_the_console_read_changed(acting: TestClient) -> None:
    await logged_in(acting)
    first = await (await acting.get("/api/nodes", params={"state": "held"})).json()
    assert [r[0] for r in first["rows"]] == ["gpu-00002", "gpu-00102"]
    live = acting.app[LIVE]
    held = live.fleet.nodes["gpu-00002"]
    live.fleet.nodes["gpu-00002"] = held.model_copy(
        update={"payload": held.payload.model_copy(update={"state": "in_service"})}
    )
    same = await (await acting.get("/api/nodes", params={"state": "held"})).json()
    assert same == first  # the same version: the same answer
    live.version += 1
    now = await (await acting.get("/api/nodes", params={"state": "held"})).json()
    assert [r[0] for r in now["rows"]] == ["gpu-00102"]
    assert now["counts"]["states"]["held"] == 1 and now["version"] == 2


async def test_a_node_page_and_what_is_not_there(acting: TestClient) -> None:
    await logged_in(acting)
    node = await acting.get("/api/node", params={"name": "gpu-00002"})
    doc = await node.json()
    assert doc["node"]["state"] == "held" and doc["node"]["by"] == "fatal_xid"
    assert doc["silences"] == []
    asked = {"kind": "node", "id": "gpu-00002"}
    story = await (await acting.get("/api/story", params=asked)).json()
    assert story["timeline"] == [] and story["timeline_error"]  # no ClickHouse here: said
    assert (await acting.get("/api/story", params={"kind": "rack", "id": "r1"})).status == 400
    missing = await acting.get("/api/node", params={"name": "<script>"})
    assert missing.status == 404
    assert (await missing.json())["error"] == "no node '<script>'"
    bad = await acting.get("/api/nodes", params={"names": "gpu-[01"})
    assert bad.status == 400 and "neither a hostlist nor a glob" in (await bad.json())["error"]


def incident(subject: str, opened_min: int, **more: object) -> IncidentEvent:
    opened = AT + timedelta(minutes=opened_min)
    cls = IncidentResolved if more.get("state") == "resolved" else IncidentOpened
    return cls(
        source="streams",
        cluster="c1",
        subject=subject,
        occurred_at=opened,
        payload={
            "title": f"{subject}: 2 nodes of c1: fatal XID 79",
            "kind": "xid:79",
            "cause": "Xid 79 (GPU has fallen off the bus)",
            "domain": "cluster c1",
            "opened_at": opened,
            "first_fault_at": opened,
            "last_fault_at": opened,
            "nodes": "gpu-[00001,00101]",
            "nodes_count": 2,
        }
        | more,
    )


async def test_incidents_open_first_and_one_with_its_nodes_and_what_slack_was_told(
    acting: TestClient,
) -> None:
    await logged_in(acting)
    live = acting.app[LIVE]
    for found in (
        incident("inc-old", 0),
        incident("inc-new", 5),
        incident("inc-done", 9, state="resolved", resolved_at=AT + timedelta(minutes=20)),
    ):
        live.incidents[found.subject] = found
    live.told["inc-new"] = Told(
        incident="inc-new", thread=ThreadRef(channel="C1", ts="1.2"), notes=2, told_at=AT
    )
    listed = await (await acting.get("/api/incidents")).json()
    assert [i["id"] for i in listed["incidents"]] == ["inc-new", "inc-old", "inc-done"]
    doc = await (await acting.get("/api/incident", params={"id": "inc-new"})).json()
    assert [(m["node"], m["state"]) for m in doc["members"]] == [
        ("gpu-00001", "quarantined"),
        ("gpu-00101", "quarantined"),
    ]
    told = doc["told"]
    assert told["where"] == "C1 (thread 1.2)"
    assert told["steps"] == [
        "the parent message, kept up to date in place",
        "replies: 2 note(s) people must see",
    ]
    assert any("inc-new: 2 nodes of c1: fatal XID 79" in line for line in told["parent"])
    quiet = await (await acting.get("/api/incident", params={"id": "inc-old"})).json()
    assert quiet["told"] is None
    assert (await acting.get("/api/incident", params={"id": "inc-x"})).status == 404
