"""The three long-running workers — streams, actions, sink — as child processes of one command.

The demo and the end-to-end tests run the real `centrality <worker>` commands, exactly as an
operator would, pointed at a stack through the environment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Self

WORKERS = ("streams", "actions", "sink")


class Pipeline:
    """`workers` are `centrality` commands, e.g. `"sink"` or `"watch k8s"`."""

    def __init__(
        self, env: dict[str, str], log_dir: Path, workers: Sequence[str] = WORKERS
    ) -> None:
        self.env = env
        self.log_dir = log_dir
        self.workers = workers
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self) -> None:
        _exit_on_sigterm()
        self.log_dir.mkdir(parents=True, exist_ok=True)
        cli = Path(sys.executable).with_name("centrality")
        for name in self.workers:
            with self._log_file(name).open("ab") as log:
                self.procs[name] = subprocess.Popen(
                    [str(cli), *name.split()],
                    env={**os.environ, **self.env},
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )

    def check(self) -> None:
        """Fail loudly if a worker died: waiting on its output would only time out."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(
                    f"{name} worker exited with {proc.returncode}:\n{self.log_tail(name)}"
                )

    def log_tail(self, name: str, lines: int = 40) -> str:
        text = self._log_file(name).read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])

    def _log_file(self, name: str) -> Path:
        return self.log_dir / f"{name.replace(' ', '-')}.log"

    def stop(self, timeout_s: float = 20.0) -> dict[str, float | None]:
        """SIGTERM every running worker at once, SIGKILL what is left after `timeout_s`.

        Returns the seconds each signalled worker took to exit; None for one that was killed.
        """
        signalled_at = time.monotonic()
        running = {name: proc for name, proc in self.procs.items() if proc.poll() is None}
        for proc in running.values():
            os.killpg(proc.pid, signal.SIGTERM)
        took: dict[str, float | None] = {}
        while len(took) < len(running) and time.monotonic() - signalled_at < timeout_s:
            for name, proc in running.items():
                if name not in took and proc.poll() is not None:
                    took[name] = time.monotonic() - signalled_at
            time.sleep(0.02)
        for name, proc in running.items():
            if name not in took:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                took[name] = None
        self.procs.clear()
        return took

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _exit_on_sigterm() -> None:
    """The workers run in sessions of their own (a terminal's Ctrl-C must reach only this
    command, which stops them in order), so a SIGTERM that killed this process outright would
    leave them running: make it an exit, which runs the `finally` and `with` that stop them."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _raise_exit)


def _raise_exit(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)
