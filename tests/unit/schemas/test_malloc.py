"""glibc told to give memory back: the sink's and the worker's large blocks once freed, and the
worker's timer that hands back what it freed in between (schemas.runtime.malloc; the handing
back itself, in a process of its own: tests/integration/streams/test_streams_command.py). CI
runs on Debian: glibc."""

import tempfile
from pathlib import Path

import pytest
from pydantic import SecretStr

from schemas.runtime import malloc
from schemas.runtime.malloc import map_large_blocks
from schemas.runtime.settings import KafkaSettings
from streams.faust.app import StreamsApp, create_app
from streams.settings import StreamsSettings


def test_zero_keeps_glibc_as_it_is() -> None:
    assert map_large_blocks(0) is False


def test_the_threshold_is_set_on_glibc() -> None:
    assert map_large_blocks(1 << 20) is True


def _timers(interval_s: float) -> int:
    settings = StreamsSettings(
        store="memory://", data_dir=Path(tempfile.mkdtemp()), heap_trim_interval_s=interval_s
    )
    return len(StreamsApp(KafkaSettings(), settings, SecretStr("k")).app._app_tasks)


def test_the_worker_trims_its_heap_on_a_timer_unless_told_never() -> None:
    assert _timers(60.0) == _timers(0.0) + 1


def test_the_worker_maps_large_blocks_at_its_setting(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked: list[int] = []
    monkeypatch.setattr(malloc, "map_large_blocks", asked.append)
    for name, value in {
        "CENTRALITY_TRIGGER_KEY": "k",
        "CENTRALITY_STREAMS_STORE": "memory://",
        "CENTRALITY_STREAMS_DATA_DIR": str(tmp_path),
        "CENTRALITY_STREAMS_MMAP_THRESHOLD_BYTES": str(4 << 20),
    }.items():
        monkeypatch.setenv(name, value)
    create_app()
    assert asked == [4 << 20]
