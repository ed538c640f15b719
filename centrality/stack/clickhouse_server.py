"""The local ClickHouse server: chDB's engine behind the ClickHouse HTTP interface, on loopback.

    python -m centrality.stack.clickhouse_server --data-dir DIR [--host H] [--port P]
                                                 [--password-env VAR]
                                                 [--tls-certfile PEM --tls-keyfile PEM]

One process owns the data directory (chDB locks it), so every client, whatever its language,
reaches the data the way it would reach a ClickHouse server.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import signal
import socket
import ssl
import sys
import threading
import uuid
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType
from urllib.parse import parse_qsl, urlsplit

import structlog

from centrality.stack.clickhouse_engine import Engine, QueryRequest, QueryResult
from centrality.stack.clickhouse_http import (
    ClickHouseError,
    bad_request,
    compress_response,
    credentials,
    decode_content,
    decode_native_blocks,
    form_fields,
    output_format,
    query_params,
    query_settings,
    split_insert,
)
from centrality.stack.clickhouse_native import (
    REVISION_WITH_TIME_ZONE_IN_DATETIME,
    compression_method,
    encode_compressed_blocks,
    reencode,
)
from schemas.runtime.logs import configure_logging

log = structlog.get_logger("centrality.clickhouse")

_CONTENT_TYPES = {
    "TabSeparated": "text/tab-separated-values; charset=UTF-8",
    "TSV": "text/tab-separated-values; charset=UTF-8",
    "CSV": "text/csv; charset=UTF-8; header=absent",
    "JSON": "application/json; charset=UTF-8",
    "JSONCompact": "application/json; charset=UTF-8",
    "JSONEachRow": "application/x-ndjson; charset=UTF-8",
}
_HEADER_PARAMS = {
    "X-ClickHouse-Database": "database",
    "X-ClickHouse-Format": "default_format",
    "X-ClickHouse-Quota": "quota_key",
}
_OK_PATHS = frozenset({"/ping", "/replicas_status"})
_IDLE_KEEPALIVE_S = 60


class ClickHouseHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], engine: Engine, password: str | None) -> None:
        super().__init__(address, _Handler)
        self.engine = engine
        self.password = password
        self.display_name = socket.gethostname()

    def serve_tls(self, certfile: str, keyfile: str) -> None:
        """HTTPS from now on. Connections are accepted without a handshake (a slow or hostile
        client must not hold up `accept`); each handshakes in its own thread (`_Handler.setup`)."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(certfile, keyfile)
        self.socket = context.wrap_socket(
            self.socket, server_side=True, do_handshake_on_connect=False
        )

    def handle_error(self, request: object, client_address: object) -> None:
        failed = sys.exc_info()[1]
        if isinstance(failed, ssl.SSLError | ConnectionError | TimeoutError):
            # A client that distrusts our certificate, or went away: its problem, one line.
            log.info("clickhouse_connection_failed", client=str(client_address), error=str(failed))
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ClickHouseHTTPServer
    # Idle keep-alive connections are dropped after this; clients notice and reconnect.
    timeout = _IDLE_KEEPALIVE_S

    def setup(self) -> None:
        if isinstance(self.request, ssl.SSLSocket):
            self.request.settimeout(self.timeout)
            self.request.do_handshake()
        super().setup()
        # Without it every small response waits out Nagle + delayed ACK (~40-50 ms).
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        """One log line per request would drown the useful ones."""

    def do_GET(self) -> None:
        self._handle(read_body=False)

    def do_POST(self) -> None:
        self._handle(read_body=True)

    def _handle(self, *, read_body: bool) -> None:
        split = urlsplit(self.path)
        params = dict(parse_qsl(split.query, keep_blank_values=True))
        # ClickHouse takes these from headers too; the URL wins where both are given.
        for header, param in _HEADER_PARAMS.items():
            value = self.headers.get(header)
            if value:
                params.setdefault(param, value)
        query_id = params.get("query_id") or str(uuid.uuid4())
        try:
            body = self._read_body() if read_body else b""
            content_type = self.headers.get("Content-Type", "")
            if body and content_type.startswith("multipart/form-data"):
                for name, value in form_fields(content_type, body).items():
                    params.setdefault(name, value)  # the URL wins, as for headers
                body = b""
            path = split.path.rstrip("/") or "/"
            if path in _OK_PATHS or (path == "/" and not body and "query" not in params):
                self._send(200, b"Ok.\n", "text/html; charset=UTF-8", query_id)
                return
            if path not in ("/", "/query"):
                raise ClickHouseError.make(
                    1001, "STD_EXCEPTION", f"There is no handle {split.path}"
                )
            self._authenticate(params)
            self._query(params, body, query_id)
        except ClickHouseError as err:
            self._send_error(err, query_id, params)
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as exc:
            log.error("request_failed", error=repr(exc), exc_info=True)
            error = ClickHouseError.make(1001, "STD_EXCEPTION", repr(exc))
            self._send_error(error, query_id, params)

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = self._read_chunked()
        else:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            if len(body) < length:
                raise ConnectionError("client closed the connection mid-body")
        return decode_content(body, self.headers.get("Content-Encoding"))

    def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            line = self.rfile.readline(1024)
            if not line:
                raise ConnectionError("client closed the connection mid-body")
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            chunk = self.rfile.read(size)
            if len(chunk) < size:
                raise ConnectionError("client closed the connection mid-body")
            parts.append(chunk)
            self.rfile.readline(1024)

    def _authenticate(self, params: dict[str, str]) -> None:
        expected = self.server.password
        if expected is None:
            return
        user, password = credentials(dict(self.headers.items()), params)
        if user != "default" or not hmac.compare_digest(password.encode(), expected.encode()):
            raise ClickHouseError.make(
                516,
                "AUTHENTICATION_FAILED",
                f"{user}: Authentication failed: password is incorrect, "
                "or there is no user with such name",
            )

    def _query(self, params: dict[str, str], body: bytes, query_id: str) -> None:
        if params.get("decompress") in ("1", "true") and body:
            body = decode_native_blocks(body)
        url_query = params.get("query", "")
        if url_query and body:
            # As ClickHouse does: the URL holds the start of the query, the body continues it.
            buf = url_query.encode() + b"\n" + body
        else:
            buf = url_query.encode() if url_query else body
        if not buf.strip():
            raise ClickHouseError.make(62, "SYNTAX_ERROR", "Empty query")
        insert = split_insert(buf)
        sql = insert.statement if insert else buf.decode(errors="replace")
        default_format = params.get("default_format") or "TabSeparated"
        try:
            timeout_s = float(params.get("session_timeout") or 60)
        except ValueError as exc:
            raise bad_request("Invalid session timeout") from exc
        req = QueryRequest(
            sql=sql,
            insert=insert,
            data=memoryview(buf)[insert.data_offset :] if insert else None,
            params=query_params(params),
            settings=query_settings(params),
            database=params.get("database") or None,
            default_format=default_format,
            session_id=params.get("session_id") or None,
            session_timeout_s=timeout_s,
            session_check=params.get("session_check") in ("1", "true"),
        )
        result = self.server.engine.execute(req)
        fmt = "" if insert else output_format(sql, default_format)
        payload, encoding = result.body, None
        if fmt == "Native":
            payload = self._native_at_revision(req, payload, _revision(params))
        if _compressed_blocks(params):
            payload = encode_compressed_blocks(
                payload,
                compression_method(params.get("network_compression_method")),
                _int_param(params, "network_zstd_compression_level", 1),
            )
        # On by default since ClickHouse 24.x; clickhouse-connect reads that default from
        # system.settings and then only sends Accept-Encoding, expecting a compressed answer.
        if params.get("enable_http_compression", "1") not in ("0", "false"):
            payload, encoding = compress_response(payload, self.headers.get("Accept-Encoding"))
        content_type = _CONTENT_TYPES.get(fmt, "application/octet-stream" if fmt else "text/plain")
        self._send(200, payload, content_type, query_id, fmt=fmt, result=result, encoding=encoding)

    def _native_at_revision(self, req: QueryRequest, body: bytes, revision: int) -> bytes:
        if revision < REVISION_WITH_TIME_ZONE_IN_DATETIME:
            return reencode(body, revision)
        types: list[str] | None = None

        def type_name(i: int, engine_type: str) -> str:
            # The engine wrote for revision 0, which drops a top-level DateTime's time zone.
            nonlocal types
            if engine_type != "DateTime":
                return engine_type
            if types is None:
                types = self.server.engine.column_types(req)
            found = types[i] if i < len(types) else ""
            return found if found.startswith("DateTime(") else engine_type

        return reencode(body, revision, type_name)

    def _send_error(self, err: ClickHouseError, query_id: str, params: dict[str, str]) -> None:
        if err.http_status >= 500:
            log.warning("query_error", code=err.code, name=err.name, query_id=query_id)
        headers = {"X-ClickHouse-Exception-Code": str(err.code)}
        if err.http_status == 401:
            headers["WWW-Authenticate"] = 'Basic realm="ClickHouse server"'
        body = err.body(self.server.engine.version)
        if _compressed_blocks(params):
            # As ClickHouse does: clickhouse-go reads error bodies through its block reader too.
            body = encode_compressed_blocks(body)
        self._send(err.http_status, body, "text/plain; charset=UTF-8", query_id, extra=headers)

    def _send(
        self,
        status: int,
        body: bytes,
        content_type: str,
        query_id: str,
        *,
        fmt: str = "",
        result: QueryResult | None = None,
        encoding: str | None = None,
        extra: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Keep-Alive", f"timeout={_IDLE_KEEPALIVE_S}")
        self.send_header("X-ClickHouse-Server-Display-Name", self.server.display_name)
        self.send_header("X-ClickHouse-Query-Id", query_id)
        self.send_header("X-ClickHouse-Timezone", self.server.engine.timezone)
        if fmt:
            self.send_header("X-ClickHouse-Format", fmt)
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.send_header("X-ClickHouse-Summary", _summary(result))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _compressed_blocks(params: dict[str, str]) -> bool:
    return params.get("compress") in ("1", "true")


def _revision(params: dict[str, str]) -> int:
    return _int_param(params, "client_protocol_version", 0)


def _int_param(params: dict[str, str], name: str, default: int) -> int:
    try:
        return int(params.get(name) or default)
    except ValueError as exc:
        raise bad_request(f"Invalid {name}: {params[name]!r}") from exc


def _summary(result: QueryResult | None) -> str:
    r = result or QueryResult(body=b"")
    # ClickHouse sends every counter as a string.
    return json.dumps(
        {
            "read_rows": str(r.read_rows),
            "read_bytes": str(r.read_bytes),
            "written_rows": str(r.written_rows),
            "written_bytes": str(r.written_bytes),
            "total_rows_to_read": "0",
            "result_rows": "0",
            "result_bytes": str(len(r.body)),
            "elapsed_ns": str(r.elapsed_ns),
        },
        separators=(",", ":"),
    )


def serve(
    data_dir: str, host: str, port: int, password: str | None, tls: tuple[str, str] | None = None
) -> None:
    """Serve until SIGTERM/SIGINT, then close chDB so its data is flushed. `tls`: the
    certificate and key files to serve HTTPS with."""
    os.makedirs(data_dir, exist_ok=True)
    engine = Engine(os.path.abspath(data_dir))
    engine.open()
    server = ClickHouseHTTPServer((host, port), engine, password)
    if tls is not None:
        server.serve_tls(*tls)

    def _stop(signum: int, _frame: FrameType | None) -> None:
        log.info("clickhouse_stopping", signal=signal.Signals(signum).name)
        # shutdown() waits for serve_forever(), which runs on this very thread.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    log.info(
        "clickhouse_started",
        host=host,
        port=server.server_address[1],
        data_dir=os.path.abspath(data_dir),
        version=engine.version,
        auth=password is not None,
        tls=tls is not None,
        pid=os.getpid(),
    )
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        engine.close()
        log.info("clickhouse_stopped")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument(
        "--password-env",
        metavar="VAR",
        help="environment variable holding the password of user `default` (never on argv)",
    )
    parser.add_argument("--tls-certfile", metavar="PEM", help="serve HTTPS with this certificate")
    parser.add_argument("--tls-keyfile", metavar="PEM", help="the key of --tls-certfile")
    args = parser.parse_args(argv)
    if (args.tls_certfile is None) != (args.tls_keyfile is None):
        parser.error("--tls-certfile and --tls-keyfile go together")
    tls = (args.tls_certfile, args.tls_keyfile) if args.tls_certfile else None
    configure_logging()
    password: str | None = None
    if args.password_env:
        password = os.environ.get(args.password_env)
        if not password:
            log.error("clickhouse_password_missing", env=args.password_env)
            return 2
    try:
        serve(args.data_dir, args.host, args.port, password, tls)
    except Exception as exc:
        log.error("clickhouse_failed", error=str(exc), exc_info=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
