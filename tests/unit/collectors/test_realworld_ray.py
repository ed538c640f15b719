"""The Ray watcher on Ray's own words for how nodes and jobs ended
(tests/fixtures/realworld/ray/cases.yaml; PROVENANCE.md beside it says where each comes from)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from collectors.sink import RecordingSink
from collectors.watchers.ray.settings import RayWatchSettings
from collectors.watchers.ray.watcher import RayWatcher
from schemas.events import JobExited, NodeHealthChecked

CORPUS = Path(__file__).parents[2] / "fixtures" / "realworld" / "ray"
CASES: dict[str, list[dict[str, Any]]] = yaml.safe_load((CORPUS / "cases.yaml").read_text())


class Served(RayWatcher):
    """The watcher reading documents as the dashboard serves them."""

    nodes: ClassVar[list[dict[str, Any]]] = []
    jobs: ClassVar[list[dict[str, Any]]] = []

    async def _get(self, path: str) -> Any:
        if path.startswith("/api/v0/nodes"):
            return {"result": True, "data": {"result": {"total": 1, "result": self.nodes}}}
        if path == "/api/jobs/":
            return self.jobs
        return {"logs": ""}


def watcher(tmp_path: Path) -> tuple[Served, RecordingSink]:
    sink = RecordingSink()
    return Served(RayWatchSettings(cluster="r", state_file=tmp_path / "l.json"), sink), sink


def test_every_source_is_documented() -> None:
    provenance = (CORPUS / "PROVENANCE.md").read_text()
    for case in CASES["nodes"] + CASES["jobs"]:
        for source in case["source"].split("+"):
            assert f"`{source}`" in provenance, source


@pytest.mark.parametrize("case", CASES["nodes"], ids=lambda c: str(c["message"]))
async def test_how_a_node_ended(case: dict[str, Any], tmp_path: Path) -> None:
    w, sink = watcher(tmp_path)
    w.nodes = [
        {
            "node_id": "ab12",
            "node_ip": "10.0.0.7",
            "node_name": "10.0.0.7",
            "is_head_node": False,
            "state": case["state"],
            "state_message": case["message"],
        }
    ]
    w.jobs = []
    await w.poll_once()
    [event] = sink.of_type(NodeHealthChecked)
    assert event.payload.status.value == case["status"]


@pytest.mark.parametrize("case", CASES["jobs"], ids=lambda c: c["source"])
async def test_how_a_job_ended(case: dict[str, Any], tmp_path: Path) -> None:
    w, sink = watcher(tmp_path)
    w.nodes, w.jobs = [], [case["document"]]
    await w.poll_once()
    [ended] = sink.of_type(JobExited)
    p = ended.payload
    expected = case["exited"]
    assert (p.state.value, p.exit_code, p.signal) == (
        expected["state"],
        expected["exit_code"],
        expected["signal"],
    )
