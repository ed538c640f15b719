"""Run a worker as a child process that stops within a deadline of SIGTERM or SIGINT.

The Faust worker stops itself on a signal, but a stop can hang on the broker (a send being
retried, a changelog flush, aiokafka's own producer stop). The parent forwards the signal and
kills the child if it still runs `stop_timeout_s` later. A killed worker committed only what it
had finished; its local stores are restored from the changelog on the next start
(`streams.faust.clean_start`).

The parent does nothing else for the worker's whole life, so it is this module alone, run as
`python -m centrality.supervise STOP_TIMEOUT_S ARGV...`, that the `centrality streams` command
replaces itself with once its checks pass: the standard library only, ~12 MB resident, where the
command with its CLI, settings and contract loaded held ~65 MB beside the worker for good.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from types import FrameType


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
                _log_error("worker_stop_timeout", pid=child.pid, waited_s=stop_timeout_s)
                child.kill()
                child.wait()
                return -signal.SIGKILL


def _log_error(event: str, **fields: object) -> None:
    """One line as the services' JSON logs write it (schemas.runtime.logs), without structlog."""
    at = datetime.now(UTC).isoformat().replace("+00:00", "Z")
    line = {"event": event, **fields, "level": "error", "logger": "centrality", "timestamp": at}
    print(json.dumps(line), file=sys.stderr, flush=True)


def exit_code(code: int) -> int:
    """A shell's code for the child's end: its own, or 128 + the signal that ended it."""
    return code if code >= 0 else 128 - code


def main(args: Sequence[str]) -> int:
    if len(args) < 2:
        print("usage: python -m centrality.supervise STOP_TIMEOUT_S ARGV...", file=sys.stderr)
        return 2
    return exit_code(run_with_stop_deadline(args[1:], float(args[0])))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
