"""Python's collector set for long-lived workers (schemas.runtime.collector): the streams
worker's thresholds from its settings, set once it starts; its garbage cycles freed on its heap
upkeep timer however rare the thresholds make full passes; a replay's stretch of work restores
the collector as it was."""

from __future__ import annotations

import asyncio
import gc
import tempfile
import weakref
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from schemas.runtime import collector
from schemas.runtime.settings import KafkaSettings
from streams.faust.app import StreamsApp
from streams.settings import StreamsSettings


def _app(thresholds: tuple[int, int, int] = collector.THRESHOLDS) -> StreamsApp:
    chosen = StreamsSettings(
        store="memory://", data_dir=Path(tempfile.mkdtemp()), gc_thresholds=thresholds
    )
    return StreamsApp(KafkaSettings(), chosen, SecretStr("k"))


def test_the_worker_sets_its_thresholds_when_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    tuned: list[tuple[int, int, int]] = []
    monkeypatch.setattr(collector, "tune", tuned.append)
    _app().spare_the_heap_from_collections(None)
    _app((700, 10, 10)).spare_the_heap_from_collections(None)
    assert tuned == [collector.THRESHOLDS, (700, 10, 10)]


def test_the_thresholds_are_read_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CENTRALITY_STREAMS_GC_THRESHOLDS", "[1000, 5, 0]")
    assert StreamsSettings().gc_thresholds == (1000, 5, 0)


@pytest.mark.parametrize("value", ["[1000, -1, 10]", "[1000, 10]", "[1000, 10, 10, 10]", "x"])
def test_bad_thresholds_are_refused_by_name(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("CENTRALITY_STREAMS_GC_THRESHOLDS", value)
    with pytest.raises((ValidationError, ValueError), match="gc_thresholds"):
        StreamsSettings()


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def test_the_heap_upkeep_frees_garbage_cycles() -> None:
    app = _app()
    gc.disable()  # no automatic pass may free it first: only the upkeep's
    try:
        cycle = _Cycle()
        alive = weakref.ref(cycle)
        del cycle
        assert alive() is not None, "freed without a collection: the test would prove nothing"
        asyncio.run(app.trim_heap())
        assert alive() is None
    finally:
        gc.enable()


def test_a_stretch_of_work_leaves_the_collector_as_it_was() -> None:
    before = gc.get_threshold()
    with collector.tuned((123_456, 7, 8)):
        assert gc.get_threshold() == (123_456, 7, 8)
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
