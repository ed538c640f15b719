"""The one part of a kubelet the tests need: the log endpoint the API server proxies `pods/log`
to (`GET /containerLogs/<namespace>/<pod>/<container>`, `tailLines`).

There is no kubelet and no container runtime here. A node registered with this endpoint's
address and port (`KubeApiServer.node`) has its pods' logs served from `logs`, which the tests
fill as the containers would have; the API server checks the caller's RBAC (`pods/log`), finds
the node and passes the query on, as it does for a real kubelet. Served over TLS with the
API server's certificate, which the API server is told to trust (`--kubelet-certificate-
authority`).
"""

from __future__ import annotations

import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.tls import ServingCertificate


class KubeletLogs:
    def __init__(self, certs: ServingCertificate) -> None:
        self.logs: dict[tuple[str, str, str], str] = {}  # (namespace, pod, container) → text
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.server.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certs.cert, certs.key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.port = int(self.server.server_address[1])
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _handler(kubelet: KubeletLogs) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            parts = url.path.strip("/").split("/")
            text = None
            if len(parts) == 4 and parts[0] == "containerLogs":
                text = kubelet.logs.get((parts[1], parts[2], parts[3]))
            if text is None:
                self.send_error(404, "no such container")
                return
            tail = parse_qs(url.query).get("tailLines")
            if tail:
                text = "".join(text.splitlines(keepends=True)[-int(tail[-1]) :])
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler
