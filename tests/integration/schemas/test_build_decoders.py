"""Every worker builds its decoders as it starts, not on the way of the records: event models
are built on first use (`defer_build`), which a command reading two types wants, and which put a
~0.2 s build on a worker's first record and another, type by type, on its first hostile one.
Each case runs in an interpreter of its own, where nothing was built yet."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration

UNBUILT = """
from pydantic._internal._mock_val_ser import MockValSer
from schemas.registry import _ADAPTERS, event_types

def unbuilt():
    types = event_types().items()
    return sorted(n for n, c in types if isinstance(c.__pydantic_validator__, MockValSer))
"""

STARTS = {
    "the decoders alone": """
from schemas.registry import build_decoders
build_decoders()
""",
    "the streams worker": """
import tempfile
from pathlib import Path
from pydantic import SecretStr
from schemas.runtime.settings import KafkaSettings
from streams.faust.app import StreamsApp
from streams.settings import StreamsSettings
settings = StreamsSettings(store="memory://", data_dir=Path(tempfile.mkdtemp()))
StreamsApp(KafkaSettings(), settings, SecretStr("k")).spare_the_heap_from_collections(None)
""",
    "a sink insert process": """
import os
from streams.history import writer
from streams.history.settings import ClickHouseSettings
writer.start(ClickHouseSettings(), os.getppid())  # its parent: this one lives on
""",
    "the action worker": """
import asyncio
from pydantic import SecretStr
from actions import worker
from schemas.signing import SigningSettings

class Started(Exception):
    pass

def consumer(*args, **kwargs):
    raise Started
worker.kafka_clients.consumer = consumer
signing = SigningSettings(key=SecretStr("k"))
try:
    asyncio.run(worker.ActionWorker(signing=signing, operators={}).run())
except Started:
    pass
""",
}


@pytest.mark.parametrize("start", list(STARTS))
def test_a_worker_starting_builds_every_event_decoder(start: str) -> None:
    program = (
        UNBUILT
        + "assert unbuilt(), 'built before the worker started: the test would prove nothing'\n"
        + STARTS[start]
        + "assert not unbuilt(), unbuilt()\nassert None in _ADAPTERS, 'the union is not built'\n"
        + "print('all built')\n"  # not a process that left early, with 0
    )
    run = subprocess.run([sys.executable, "-c", program], capture_output=True, timeout=120)
    assert run.returncode == 0 and b"all built" in run.stdout, run.stderr.decode()[-3000:]
