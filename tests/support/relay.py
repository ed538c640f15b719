"""A loopback TCP relay a test can cut, as a network partition cuts long-lived connections.

`hold()` stops the bytes in both directions (the connections stay open, as when a link goes
quiet); `sever()` then drops every connection through it, and new ones are relayed again. It
never reads what it relays: TLS passes through untouched.

    with Relay(("127.0.0.1", api_port)) as relay:
        client connects to 127.0.0.1:relay.port ...
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from types import TracebackType


class Relay:
    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._flowing = threading.Event()
        self._flowing.set()
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._closed = False

    def __enter__(self) -> Relay:
        threading.Thread(target=self._accept, name="relay-accept", daemon=True).start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._closed = True
        self._listener.close()
        self.sever()

    def hold(self) -> None:
        self._flowing.clear()

    def sever(self) -> None:
        with self._lock:
            dropped, self._open = self._open, []
        for sock in dropped:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._flowing.set()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                if self._closed:
                    return
                continue
            upstream.settimeout(None)
            with self._lock:
                self._open += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        with contextlib.suppress(OSError, ValueError):
            while True:
                self._flowing.wait()
                ready, _, _ = select.select([src], [], [], 0.2)
                if not ready or not self._flowing.is_set():
                    continue  # held: what arrives waits in the kernel's buffers
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        for sock in (src, dst):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
