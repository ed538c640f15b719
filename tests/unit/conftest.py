"""The unit layer is hermetic: no process started, no connection beyond this machine's loopback
(where only servers the test runs in its own process listen: a Slack or webhook stub; the
services are started by integration fixtures, which a unit test cannot reach without starting a
process). A unit test that tries fails with what it tried; such a test belongs in integration/
(processes, services) or static/ (the project's own files read by real tools). `make test-unit`
runs this layer alone, in under a minute."""

from __future__ import annotations

import ipaddress
import os
import socket
import subprocess
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest


class NotHermetic(AssertionError):
    pass


def _refuse(what: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> NoReturn:
        raise NotHermetic(f"a unit test must not {what}: move it to integration/ or static/")

    return refused


def _loopback(address: Any) -> bool:
    host = address[0] if isinstance(address, tuple) else address
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _connect(real: Any) -> Any:
    def connect(self: socket.socket, address: Any) -> Any:
        if self.family == socket.AF_UNIX or _loopback(address):
            return real(self, address)
        raise NotHermetic(f"a unit test must not connect to {address!r}: move it to integration/")

    return connect


@pytest.fixture(autouse=True)
def hermetic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(subprocess.Popen, "_execute_child", _refuse("start a process"))
    monkeypatch.setattr(os, "fork", _refuse("fork"))
    monkeypatch.setattr(os, "posix_spawn", _refuse("start a process"))
    monkeypatch.setattr(os, "posix_spawnp", _refuse("start a process"))
    monkeypatch.setattr(socket.socket, "connect", _connect(socket.socket.connect))
    monkeypatch.setattr(socket.socket, "connect_ex", _connect(socket.socket.connect_ex))
    yield
