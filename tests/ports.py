"""Free loopback ports for services tests start."""

from __future__ import annotations

import contextlib
import random
import socket
from collections.abc import Collection


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    # Hold all sockets open together so the kernel cannot hand out the same port twice.
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in socks:
            sock.bind((host, 0))
        return [int(sock.getsockname()[1]) for sock in socks]


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]


def free_port_offset(avoid: Collection[int] = ()) -> int:
    """A `CENTRALITY_STACK_PORT_OFFSET` whose every port (servers and metrics) is free now; from
    a random start, so sessions running side by side rarely try the same ones."""
    from centrality.stack.settings import StackSettings
    from schemas.runtime.local_stack import MAX_PORT_OFFSET, PORT_STEP
    from schemas.runtime.metrics.server import DEFAULT_PORTS

    steps = MAX_PORT_OFFSET // PORT_STEP
    start = random.randrange(10, steps)  # above 1000: clear of anyone's default stack
    for step in [*range(start, steps + 1), *range(10, start)]:
        offset: int = step * PORT_STEP
        stack = StackSettings(port_offset=offset)
        ports = [stack.kafka_port, stack.kafka_controller_port, stack.clickhouse_port]
        ports += [port + offset for port in DEFAULT_PORTS.values()]
        if offset not in avoid and all(_free(port) for port in ports):
            return offset
    raise RuntimeError("no port offset with every port free")


def _free(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True
