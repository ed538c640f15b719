"""A local webhook receiver (a ticketing system's, as far as escalations go): records the JSON
documents POSTed to it, can answer 503 while `down`.

The demo points the action worker at it to show the ticket an escalation files; tests read it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Self

from centrality.local_http import LocalServer, QuietHandler


@dataclass
class WebhookStub(LocalServer):
    down: bool = False
    documents: list[dict[str, Any]] = field(default_factory=list)
    authorizations: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/tickets"

    def __enter__(self) -> Self:
        stub = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with stub._lock:
                    stub.authorizations.append(self.headers.get("Authorization", ""))
                    status = 503 if stub.down else 201
                    if not stub.down:
                        stub.documents.append(json.loads(body))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.serve(Handler)
        return self
