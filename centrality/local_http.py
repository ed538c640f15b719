"""A loopback HTTP server for the stubs of outside services (Slack, a ticketing webhook): on a
free port, in a daemon thread, for as long as a `with` block lasts."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class QuietHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass  # the stubs' callers read what they recorded, not an access log on stderr


class LocalServer:
    _server: ThreadingHTTPServer | None

    @property
    def port(self) -> int:
        assert self._server is not None, "used outside its `with` block"
        return int(self._server.server_address[1])

    def serve(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
