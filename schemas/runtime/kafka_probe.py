"""Whether Kafka answers: an ApiVersions request to some bootstrap server, over TLS where the
cluster speaks it, read back and checked (`kafka_answers`).

A port that accepts a connection says little on a busy host. While a broker is away its port
may be taken by another process, or, on loopback, a client's own connect can land on itself
(TCP simultaneous open when the source port it draws is the broker's); a connect-only probe
then calls Kafka back, and the outage's client lines flood the log again
(`schemas.runtime.outages`).
ApiVersions is what every client sends first, and brokers answer it before SASL authentication,
so no credentials are needed; the encoding is aiokafka's own.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
from collections.abc import Callable
from io import BytesIO

from aiokafka.protocol.admin import ApiVersionRequest_v0, ApiVersionResponse_v0
from aiokafka.protocol.api import ResponseHeader_v0

from schemas.runtime.kafka_clients import ssl_context
from schemas.runtime.settings import KafkaSettings

# An answer is a few hundred bytes; a length past this is not a broker speaking.
_ANSWER_BYTES_MAX = 1 << 20
_CORRELATION_ID = 0x0CE7


def kafka_answers(settings: KafkaSettings, timeout_s: float = 1.0) -> Callable[[], bool]:
    """A check: some bootstrap server answers ApiVersions without an error."""
    context = ssl_context(settings)
    request = ApiVersionRequest_v0()
    header = request.build_request_header(_CORRELATION_ID, settings.client_id)
    body = header.encode() + request.encode()
    framed = struct.pack(">i", len(body)) + body

    def check() -> bool:
        return any(
            _answers(address.strip(), framed, context, timeout_s)
            for address in settings.bootstrap.split(",")
        )

    return check


def _answers(address: str, framed: bytes, context: ssl.SSLContext | None, timeout_s: float) -> bool:
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    try:
        with contextlib.ExitStack() as stack:
            sock = stack.enter_context(socket.create_connection((host, int(port)), timeout_s))
            if context is not None:
                sock = stack.enter_context(context.wrap_socket(sock, server_hostname=host))
            sock.sendall(framed)
            (size,) = struct.unpack(">i", _read(sock, 4))
            if not 0 < size <= _ANSWER_BYTES_MAX:
                return False
            answer = BytesIO(_read(sock, size))
            if ResponseHeader_v0.decode(answer).correlation_id != _CORRELATION_ID:
                return False
            return bool(ApiVersionResponse_v0.decode(answer).error_code == 0)
    except (OSError, ValueError, struct.error):
        return False


def _read(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed mid-answer")
        data += chunk
    return bytes(data)
