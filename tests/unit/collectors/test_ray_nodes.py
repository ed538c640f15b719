"""Ray node deaths, from the node list's real shape (recorded from Ray 2.60's /api/v0/nodes).

A second raylet on this host cannot join the test head (Ray resolves the loopback bootstrap
address to the host's address, where the head does not listen), so the death itself is played
here by the recorded document changing, not by a real node dying.
"""

from pathlib import Path
from typing import Any, ClassVar

from collectors.sink import RecordingSink
from collectors.watchers.ray.settings import RayWatchSettings
from collectors.watchers.ray.watcher import RayWatcher
from schemas.events import NodeHealthChecked
from schemas.events.nodes import HealthStatus


def node(node_id: str, state: str, head: bool, message: str | None = None) -> dict[str, Any]:
    return {
        "node_id": node_id,
        "node_ip": "10.0.0.7" if not head else "10.0.0.1",
        "is_head_node": head,
        "state": state,
        "state_message": message,
        "node_name": "10.0.0.7" if not head else "10.0.0.1",
        "start_time_ms": 1795317130842,
        "end_time_ms": 0,
    }


class Recorded(RayWatcher):
    nodes: ClassVar[list[dict[str, Any]]] = []

    async def _get(self, path: str) -> Any:
        if path.startswith("/api/v0/nodes"):
            return {"result": True, "data": {"result": {"total": 2, "result": self.nodes}}}
        assert path == "/api/jobs/"
        return []


async def test_a_node_turning_dead_is_critical_once(tmp_path: Path) -> None:
    sink = RecordingSink()
    settings = RayWatchSettings(cluster="r", state_file=tmp_path / "ledger.json")
    watcher = Recorded(settings, sink)
    watcher.nodes = [node("aa", "ALIVE", True), node("bb", "ALIVE", False)]
    await watcher.poll_once()
    await watcher.poll_once()
    assert [e.payload.status for e in sink.of_type(NodeHealthChecked)] == [HealthStatus.OK] * 2
    watcher.nodes = [
        node("aa", "ALIVE", True),
        node("bb", "DEAD", False, "Unexpected termination: health check failed"),
    ]
    await watcher.poll_once()
    await watcher.poll_once()
    [dead] = [e for e in sink.of_type(NodeHealthChecked) if e.payload.status != HealthStatus.OK]
    assert dead.subject == "10.0.0.7" and dead.payload.check == "ray_node_state"
    assert dead.payload.status == HealthStatus.CRITICAL
    assert dead.payload.message == "dead: Unexpected termination: health check failed"
    assert dead.payload.details == {"node_id": "bb", "is_head_node": False}
