"""`auto` log format, decided in a child process: JSON into a pipe, readable in a terminal.

(Split from tests/unit/schemas/test_logs.py: the unit layer starts no process.)"""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import orjson

from tests.unit.schemas.test_logs import PROGRAM, ROOT, run_with_stderr


def test_auto_is_json_into_a_pipe_and_readable_in_a_terminal() -> None:
    piped = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
        timeout=60,
    )
    assert [orjson.loads(line)["event"] for line in piped.stderr.splitlines()] == [
        "started",
        "plain record",
    ]

    controller, terminal = pty.openpty()
    try:
        run_with_stderr(terminal)
        os.close(terminal)
        seen = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(controller)
    text = seen.decode()
    assert "started" in text and "gpus" in text and "plain record" in text
    assert not any(line.startswith("{") for line in text.splitlines())
