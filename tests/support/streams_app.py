"""A streams app for in-process tests (`test_context()` agents, memory tables), from the
settings a test gives it: nothing read from the environment but what the test's settings read."""

from __future__ import annotations

from pathlib import Path

from pydantic import SecretStr

from schemas.runtime.settings import KafkaSettings
from streams.faust.app import StreamsApp
from streams.settings import StreamsSettings


def in_memory(data_dir: Path, key: str) -> StreamsApp:
    settings = StreamsSettings(store="memory://", data_dir=data_dir)
    return StreamsApp(KafkaSettings(), settings, SecretStr(key))
