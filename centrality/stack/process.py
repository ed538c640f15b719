"""Detached service processes tracked by pid files: `up`, `down` and `status` work across shells."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path


class ServiceError(RuntimeError):
    """A local service failed to start or stop; the message says where its log is."""


@dataclass(frozen=True)
class ManagedProcess:
    """One long-running service: its pid file and log live in `run_dir`."""

    name: str
    run_dir: Path

    @property
    def pid_file(self) -> Path:
        return self.run_dir / f"{self.name}.pid"

    @property
    def log_file(self) -> Path:
        return self.run_dir / f"{self.name}.log"

    def pid(self) -> int | None:
        """The pid of the running service, or None (a stale pid file is removed)."""
        try:
            pid = int(self.pid_file.read_text().strip())
        except (FileNotFoundError, ValueError):
            return None
        if _alive(pid):
            return pid
        self.pid_file.unlink(missing_ok=True)
        return None

    def start(
        self, argv: Sequence[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> int:
        """Start detached (own session, so it outlives the shell); no-op if already running."""
        running = self.pid()
        if running is not None:
            return running
        self.run_dir.mkdir(parents=True, exist_ok=True)
        with self.log_file.open("ab") as log:
            proc = subprocess.Popen(
                list(argv),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                start_new_session=True,
            )
        self.pid_file.write_text(str(proc.pid))
        return proc.pid

    def stop(self, timeout_s: float = 30.0) -> bool:
        """SIGTERM the whole process group, SIGKILL after `timeout_s`; True if something ran."""
        pid = self.pid()
        if pid is None:
            return False
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout_s
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if _alive(pid):
            _signal_group(pid, signal.SIGKILL)
            while _alive(pid):
                time.sleep(0.05)
        self.pid_file.unlink(missing_ok=True)
        return True

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_file.read_text(errors="replace").splitlines()[-lines:])
        except FileNotFoundError:
            return "(no log)"

    def wait_until(self, ready: Callable[[], bool], timeout_s: float) -> None:
        """Poll `ready` until true; fail with the log tail if the process died or time ran out."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if ready():
                return
            if self.pid() is None:
                raise ServiceError(
                    f"{self.name} exited during start; log {self.log_file}:\n{self.log_tail()}"
                )
            time.sleep(0.2)
        raise ServiceError(
            f"{self.name} not ready after {timeout_s:.0f}s; log {self.log_file}:\n{self.log_tail()}"
        )


def port_open(host: str, port: int, timeout_s: float = 0.5) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout_s):
        return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0); reap it so it reads as dead.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)
