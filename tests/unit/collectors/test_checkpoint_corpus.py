"""Checkpoint recognition on names and trees of real trainers.

Each case in tests/fixtures/realworld/checkpoints/cases.yaml carries the step written by hand;
PROVENANCE.md beside it says where every name comes from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from collectors.checkpoints.names import MEGATRON_TRACKER, step_of
from collectors.checkpoints.settings import CheckpointSettings
from collectors.checkpoints.watcher import CheckpointWatcher
from collectors.sink import RecordingSink

CORPUS = Path(__file__).parents[2] / "fixtures" / "realworld" / "checkpoints"
DATA: dict[str, list[dict[str, Any]]] = yaml.safe_load((CORPUS / "cases.yaml").read_text())
NAMES, TREES = DATA["names"], DATA["trees"]


def test_every_source_is_documented() -> None:
    provenance = (CORPUS / "PROVENANCE.md").read_text()
    for case in [*NAMES, *TREES]:
        for source in case["source"].split("+"):
            assert f"`{source}`" in provenance, source


@pytest.mark.parametrize("case", NAMES, ids=[c["name"] for c in NAMES])
def test_step_of_a_real_name(case: dict[str, Any]) -> None:
    assert step_of(case["name"]) == case["step"]


@pytest.mark.parametrize("case", TREES, ids=[c["source"] for c in TREES])
async def test_what_the_watcher_announces_from_a_real_tree(
    tmp_path: Path, case: dict[str, Any]
) -> None:
    root = tmp_path / "ckpt"
    for rel in case["files"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(b"x")
    if "tracker" in case:
        (root / MEGATRON_TRACKER).write_text(case["tracker"] + "\n")
    settings = CheckpointSettings(
        roots=(str(root),), job="slurm/c1/9", cluster="c1", state_file=tmp_path / "seen.json"
    )
    watcher = CheckpointWatcher(settings, RecordingSink())
    announced = [e for _ in range(3) for e in await watcher.poll_once()]
    got = [[str(Path(e.payload.uri).relative_to(root)), e.payload.step] for e in announced]
    assert got == case["expected"]


async def test_megatron_announces_each_iteration_its_tracker_names_once(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    for it in (1000, 2000):
        (root / f"iter_{it:07d}" / "mp_rank_00").mkdir(parents=True)
        (root / f"iter_{it:07d}" / "mp_rank_00" / "model_optim_rng.pt").write_bytes(b"x")
    settings = CheckpointSettings(
        roots=(str(root),), job="slurm/c1/9", cluster="c1", state_file=tmp_path / "seen.json"
    )
    watcher = CheckpointWatcher(settings, RecordingSink())
    assert await watcher.poll_once() == []  # no tracker yet: nothing is known to be complete
    (root / MEGATRON_TRACKER).write_text("1000")
    assert [e.payload.step for e in await watcher.poll_once()] == [1000]
    (root / MEGATRON_TRACKER).write_text("2000")
    assert [e.payload.step for e in await watcher.poll_once()] == [2000]
    assert await watcher.poll_once() == []


def test_a_custom_step_pattern_replaces_the_builtin_names(tmp_path: Path) -> None:
    settings = CheckpointSettings(
        roots=(), job="j", step_pattern=r"ckpt(\d+)", state_file=tmp_path / "s.json"
    )
    watcher = CheckpointWatcher(settings, RecordingSink())
    assert watcher._step_of("ckpt4000-consumed_samples=0") == 4000
    assert watcher._step_of("checkpoint-500") is None
