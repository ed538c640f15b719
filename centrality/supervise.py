"""Run a worker as a child process that stops within a deadline of SIGTERM or SIGINT.

The Faust worker stops itself on a signal, but a stop can hang on the broker (a send being
retried, a changelog flush, aiokafka's own producer stop). The parent forwards the signal and
kills the child if it still runs `stop_timeout_s` later. A killed worker committed only what it
had finished; its local stores are restored from the changelog on the next start
(`streams.faust.clean_start`).
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Sequence
from types import FrameType

import structlog

log = structlog.get_logger("centrality")


def run_with_stop_deadline(argv: Sequence[str], stop_timeout_s: float) -> int:
    """Run `argv` to its end; its exit code (or -9 when it had to be killed)."""
    child = subprocess.Popen(argv)
    stop_by: list[float] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        if not stop_by:
            stop_by.append(time.monotonic() + stop_timeout_s)
        child.send_signal(signum)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, forward)
    while True:
        try:
            return child.wait(timeout=0.1)
        except subprocess.TimeoutExpired:
            if stop_by and time.monotonic() > stop_by[0]:
                log.error("worker_stop_timeout", pid=child.pid, waited_s=stop_timeout_s)
                child.kill()
                child.wait()
                return -signal.SIGKILL
