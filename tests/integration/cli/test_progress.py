"""Progress is drawn for a person at a terminal, never into output meant for machines."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import orjson

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]
SIMULATE = ["simulate", "--dry-run", "--nodes", "20", "--duration-s", "600", "--interval-s", "10"]


def env() -> dict[str, str]:
    outside = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")}
    return {**outside, "PYTHONPATH": str(ROOT), "TERM": "xterm-256color", "COLUMNS": "120"}


def run_with_terminal_stderr(args: list[str]) -> tuple[int, str, bytes]:
    """stdout to a pipe, stderr to a pseudo-terminal: what each received."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen([CLI, *args], env=env(), stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    drawn = bytearray()
    while True:
        ready, _, _ = select.select([leader], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            if not chunk:
                break
            drawn += chunk
        elif proc.poll() is not None:
            break
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    os.close(leader)
    return proc.wait(60), out, bytes(drawn)


def test_simulate_draws_progress_on_a_terminal() -> None:
    code, out, drawn = run_with_terminal_stderr(SIMULATE)
    assert code == 0
    assert b"simulating 20 nodes x 8 GPUs" in drawn and b"%" in drawn
    assert "simulating" not in out  # the table is on stdout, the bar is not


def test_no_progress_with_json_even_on_a_terminal() -> None:
    code, out, drawn = run_with_terminal_stderr([*SIMULATE, "--json"])
    assert code == 0
    assert b"simulating" not in drawn
    assert orjson.loads(out.strip().splitlines()[-1])["ticks"] == 61


def test_no_progress_when_stderr_is_not_a_terminal() -> None:
    done = subprocess.run([CLI, *SIMULATE], env=env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert "simulating" not in done.stderr and "\x1b[" not in done.stderr
