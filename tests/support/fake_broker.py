"""A loopback server that answers every Kafka request frame as `answer` says: what unit tests
of the outage probe stand a broker-shaped peer on (the real broker is in the integration tests).
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Callable

from aiokafka.protocol.admin import ApiVersionResponse_v0
from aiokafka.protocol.api import ResponseHeader_v0

Answer = Callable[[bytes], bytes | None]
"""A request frame's body → the answer's body, or None to close without one."""


def api_versions(error_code: int = 0) -> Answer:
    """Answers as a broker does: its correlation id, then the error code and no versions."""

    def answer(request: bytes) -> bytes:
        (correlation_id,) = struct.unpack(">i", request[4:8])
        return (
            ResponseHeader_v0(correlation_id).encode()
            + ApiVersionResponse_v0(error_code, []).encode()
        )

    return answer


def echo(request: bytes) -> bytes:
    """What a connection to itself reads back: its own request."""
    return request


async def serve(answer: Answer) -> tuple[asyncio.Server, str]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            (size,) = struct.unpack(">i", await reader.readexactly(4))
            body = answer(await reader.readexactly(size))
            if body is not None:
                writer.write(struct.pack(">i", len(body)) + body)
                await writer.drain()
        except asyncio.IncompleteReadError:
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
