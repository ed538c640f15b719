"""A local Slack Web API stub: records chat.postMessage calls, can answer 429 (Retry-After).

The demo points the action worker at it to show what people would be told; tests script it.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qs

from centrality.local_http import LocalServer, QuietHandler


@dataclass
class SlackStub(LocalServer):
    rate_limit_next: int = 0  # how many coming calls get a 429
    down: bool = False  # every call gets a 503, as while Slack has an outage
    retry_after_s: int = 1
    posts: list[dict[str, Any]] = field(default_factory=list)
    rejected: int = 0
    tokens: list[str] = field(default_factory=list)
    _server: ThreadingHTTPServer | None = None
    _ts: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def __enter__(self) -> Self:
        stub = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
                stub.tokens.append(self.headers.get("Authorization", ""))
                status, headers, answer = stub.answer(self.path, self.headers, body)
                raw = json.dumps(answer).encode()
                self.send_response(status)
                for name, value in {**headers, "Content-Type": "application/json"}.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.serve(Handler)
        return self

    def answer(self, path: str, headers: Any, body: str) -> tuple[int, dict[str, str], Any]:
        with self._lock:
            if self.down:
                self.rejected += 1
                return 503, {}, {"ok": False, "error": "service_unavailable"}
            if self.rate_limit_next > 0:
                self.rate_limit_next -= 1
                self.rejected += 1
                return (
                    429,
                    {"Retry-After": str(self.retry_after_s)},
                    {"ok": False, "error": "ratelimited"},
                )
            if not path.endswith("/chat.postMessage"):
                return 200, {}, {"ok": False, "error": "unknown_method"}
            if "json" in headers.get("Content-Type", ""):
                args = json.loads(body)
            else:
                args = {k: v[0] for k, v in parse_qs(body).items()}
                if isinstance(args.get("blocks"), str):
                    args["blocks"] = json.loads(args["blocks"])
            self._ts += 1
            ts = f"1700000000.{self._ts:06d}"
            self.posts.append({**args, "ts": ts})
            return 200, {}, {"ok": True, "channel": args.get("channel", "C0"), "ts": ts}

    def thread_of(self, post: dict[str, Any]) -> str:
        return str(post.get("thread_ts") or post["ts"])
