"""The console driven as people use it: `centrality console` as its own process, and Debian's
chromium through Playwright (launched by its path: Playwright's own browser download is never
used). For `centrality bench console` and the browser tests."""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    from playwright.async_api import Browser as AsyncBrowser
    from playwright.async_api import Playwright as AsyncPlaywright
    from playwright.sync_api import Browser, Playwright

CLI = str(Path(sys.executable).with_name("centrality"))
_ADDRESS = re.compile(r"Centrality console: (\S+)")


def chromium_path() -> str:
    return shutil.which("chromium") or "/usr/bin/chromium"


ARGS = ["--no-sandbox", "--disable-dev-shm-usage"]  # as root, in a container


def chromium_sync(playwright: Playwright) -> Browser:
    return playwright.chromium.launch(executable_path=chromium_path(), args=ARGS)


async def chromium(playwright: AsyncPlaywright) -> AsyncBrowser:
    return await playwright.chromium.launch(executable_path=chromium_path(), args=ARGS)


class ConsoleProcess:
    """`centrality console` with `env`, until the `with` block ends; `address` is what it
    printed (with its login token when it made one)."""

    def __init__(self, env: dict[str, str], log: Path, start_s: float = 60.0) -> None:
        self.env, self.log, self.start_s = env, log, start_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.address = ""

    def start(self) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [CLI, "console"],
                env={**os.environ, **self.env},
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=log,
                start_new_session=True,
            )
        self.address = self._printed()

    def _printed(self) -> str:
        assert self.proc is not None and self.proc.stdout is not None
        deadline = time.monotonic() + self.start_s
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.2)
            if ready:
                line = self.proc.stdout.readline().decode()
                found = _ADDRESS.search(line)
                if found:
                    return found.group(1)
            if self.proc.poll() is not None:
                break
        self.stop()
        raise RuntimeError(f"the console did not start: {self.log.read_text(errors='replace')}")

    def stop(self) -> None:
        if self.proc is None:
            return
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self.proc = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.stop()
