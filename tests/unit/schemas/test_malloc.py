"""glibc told to give memory back: the sink's large blocks once freed, and the worker's timer
that hands back what it freed in between (schemas.runtime.malloc; the handing back itself, in a
process of its own: tests/integration/streams/test_streams_command.py). CI runs on Debian:
glibc."""

import tempfile
from pathlib import Path

from pydantic import SecretStr

from schemas.runtime.malloc import map_large_blocks
from schemas.runtime.settings import KafkaSettings
from streams.faust.app import StreamsApp
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
