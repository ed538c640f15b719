"""What the page reads, from what the console read: a listing follows the version of what it
read, a node's page its status."""

from __future__ import annotations

from aiohttp.test_utils import TestClient

from centrality.console.app import LIVE
from tests.unit.console.conftest import logged_in


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
    assert doc["node"]["state"] == "held" and doc["node"]["held_by"] is None
    assert doc["silences"] == []
    assert doc["timeline"] == [] and doc["timeline_error"]  # no ClickHouse here: said
    missing = await acting.get("/api/node", params={"name": "<script>"})
    assert missing.status == 404
    assert (await missing.json())["error"] == "no node '<script>'"
    bad = await acting.get("/api/nodes", params={"names": "gpu-[01"})
    assert bad.status == 400 and "neither a hostlist nor a glob" in (await bad.json())["error"]
