"""`centrality up/down` for ClickHouse: the local server as a detached, pid-tracked process."""

from __future__ import annotations

import contextlib
import os
import ssl
import sys
import urllib.request
from pathlib import Path

from centrality.stack.process import ManagedProcess, ServiceError, port_open
from centrality.stack.settings import StackSettings

_PASSWORD_ENV = "CENTRALITY_CLICKHOUSE_SERVER_PASSWORD"
# The directory that holds the `centrality` package, so `python -m` finds it from any cwd.
_SOURCE_ROOT = Path(__file__).resolve().parents[2]


class LocalClickHouse:
    """The embedded ClickHouse server of the local stack (data in `state_dir/clickhouse`)."""

    def __init__(self, settings: StackSettings) -> None:
        self._settings = settings
        self.data_dir = settings.state_dir / "clickhouse"
        self.process = ManagedProcess("clickhouse", settings.state_dir / "run")

    @property
    def url(self) -> str:
        scheme = "https" if self._settings.clickhouse_tls_certfile else "http"
        return f"{scheme}://{self._settings.host}:{self._settings.clickhouse_port}"

    def pid(self) -> int | None:
        return self.process.pid()

    def running(self) -> bool:
        return self.pid() is not None

    def start(self) -> None:
        """Start the server unless it runs already; return once it answers `/ping`."""
        if not self.running():
            if port_open(self._settings.host, self._settings.clickhouse_port):
                raise ServiceError(
                    f"port {self._settings.clickhouse_port} on {self._settings.host} is taken "
                    "by another process; set CENTRALITY_STACK_PORT_OFFSET (another whole stack) "
                    "or CENTRALITY_STACK_CLICKHOUSE_PORT"
                )
            self.data_dir.mkdir(parents=True, exist_ok=True)
            self.process.start(self._argv(), env=self._env())
        self.process.wait_until(self._ping, self._settings.start_timeout_s)

    def stop(self) -> bool:
        """SIGTERM the server (it flushes chDB on the way out); True if it was running."""
        return self.process.stop()

    def _argv(self) -> list[str]:
        argv = [
            sys.executable,
            "-m",
            "centrality.stack.clickhouse_server",
            "--data-dir",
            str(self.data_dir),
            "--host",
            self._settings.host,
            "--port",
            str(self._settings.clickhouse_port),
        ]
        if self._settings.clickhouse_password is not None:
            argv += ["--password-env", _PASSWORD_ENV]
        certfile, keyfile = (
            self._settings.clickhouse_tls_certfile,
            self._settings.clickhouse_tls_keyfile,
        )
        if certfile is not None and keyfile is not None:
            argv += ["--tls-certfile", str(certfile), "--tls-keyfile", str(keyfile)]
        return argv

    def _env(self) -> dict[str, str]:
        path = os.environ.get("PYTHONPATH")
        env = {"PYTHONPATH": f"{_SOURCE_ROOT}{os.pathsep}{path}" if path else str(_SOURCE_ROOT)}
        if self._settings.clickhouse_password is not None:
            env[_PASSWORD_ENV] = self._settings.clickhouse_password.get_secret_value()
        return env

    def _ping(self) -> bool:
        # Whether our own child answers on loopback, not whom to trust: clients verify.
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with (
            contextlib.suppress(OSError),
            urllib.request.urlopen(f"{self.url}/ping", timeout=1, context=context) as resp,
        ):
            return bool(resp.status == 200 and resp.read() == b"Ok.\n")
        return False
