"""The last spans leave when a process exits: a child process that ends with spans queued.

(Split from tests/unit/schemas/test_tracing.py: the unit layer starts no process.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.otlp import OtlpReceiver
from tests.unit.schemas.test_tracing import no_otel_env  # noqa: F401  (a fixture)


@pytest.mark.usefixtures("no_otel_env")
def test_the_last_spans_leave_when_the_process_exits() -> None:
    script = "from schemas.runtime import tracing\n" + "\n".join(
        [
            "assert tracing.configure('centrality-test')",
            "with tracing.span('last words'):",
            "    pass",
        ]
    )
    with OtlpReceiver() as receiver:
        env = {
            **os.environ,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "600000",  # only the flush at exit can send it
            "PYTHONPATH": str(Path(__file__).parents[3]),
        }
        subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=60)
        [span] = receiver.snapshot()
    assert (span.service, span.name) == ("centrality-test", "last words")
