"""`centrality streams`: no unsigned decisions (it refuses to start without the signing key), a
child that ignores SIGTERM is killed at the stop deadline by a supervisor that holds little, and
what the worker freed goes back to the system (`schemas.runtime.malloc.trim`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from centrality.supervise import run_with_stop_deadline

CLI = Path(sys.executable).with_name("centrality")


def test_the_worker_refuses_to_start_without_a_signing_key(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_TRIGGER_")}
    env["CENTRALITY_TRIGGER_KEY_FILE"] = str(tmp_path / "absent.key")
    done = subprocess.run(
        [str(CLI), "streams"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert "needs the trigger signing key" in done.stderr
    assert "CENTRALITY_TRIGGER_KEY" in done.stderr


def test_a_child_that_ignores_sigterm_is_killed_at_the_deadline(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    script = (
        "import pathlib, signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        f"pathlib.Path({str(ready)!r}).touch()\n"
        "time.sleep(600)\n"
    )
    parent = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from centrality.supervise import run_with_stop_deadline as run; "
            f"sys.exit(-run([sys.executable, '-c', {script!r}], 1.5))",
        ],
        cwd=Path(__file__).parents[3],
    )
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    started = time.monotonic()
    parent.send_signal(signal.SIGTERM)
    assert parent.wait(timeout=10) == signal.SIGKILL  # the child had to be killed
    assert 1.5 <= time.monotonic() - started < 5


def test_a_child_that_stops_on_sigterm_is_waited_for() -> None:
    assert run_with_stop_deadline([sys.executable, "-c", "pass"], 5) == 0


def test_the_supervisor_beside_the_worker_is_the_standard_library_alone(tmp_path: Path) -> None:
    # The child reads what its parent holds: the supervisor `centrality streams` execs into.
    child = (
        "import os, pathlib\n"
        "status = pathlib.Path(f'/proc/{os.getppid()}/status').read_text()\n"
        "print(next(line.split()[1] for line in status.splitlines() if line.startswith('VmRSS')))\n"
        "raise SystemExit(3)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "centrality.supervise", "5", sys.executable, "-c", child],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).parents[3],
    )
    assert done.returncode == 3, done.stderr
    assert int(done.stdout) < 25 * 1024  # kB; the CLI that used to stay beside it held ~65 MB
    missing = subprocess.run(
        [sys.executable, "-m", "centrality.supervise", "5"], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "usage" in missing.stderr


def test_a_process_spawned_by_a_command_loads_none_of_the_cli() -> None:
    # multiprocessing's spawn re-runs the command's script as `__mp_main__` in each process it
    # starts (the history sink's insert processes): its imports are each process's to hold.
    probe = (
        "import runpy, sys\n"
        f"runpy.run_path({str(CLI)!r}, run_name='__mp_main__')\n"
        "print(sorted(m for m in ('centrality.cli', 'typer', 'rich') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# Blocks of 2 KB come from glibc's heap (pymalloc keeps only up to 512 bytes); all but the last
# freed, the heap's top stays in use, so glibc keeps what was freed below it resident.
_HOLES = """
import sys
from schemas.runtime.malloc import trim
def rss_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) / 1024
held = [bytes(2048) for _ in range(40_000)]
del held[:-1]
before = rss_mb()
released = trim()
print(before - rss_mb(), released)
"""


def test_what_a_process_freed_below_its_heaps_top_goes_back_to_the_system() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _HOLES], capture_output=True, text=True, check=True
    )
    given_back_mb, released = done.stdout.split()
    assert released == "True" and float(given_back_mb) > 40  # of the ~80 MB freed
