"""The streams app's topics make each record's event of its bytes as they came, as Faust's own
decode of a raw schema does, without asking Faust's codecs."""

from __future__ import annotations

from typing import Any

import faust
import pytest
from faust.types import Message

from streams.faust.topology import raw

RECORDS = [
    (b"node-1", b'[{"type":"NodeHeartbeat"}]', [("traceparent", b"00-ab")]),
    (None, b"\x00\xff not json", []),
    (b"", None, [("x", b"")]),
    (None, None, []),
]


@pytest.mark.parametrize(("key", "value", "headers"), RECORDS)
async def test_an_event_is_the_record_s_own_bytes(
    key: bytes | None, value: bytes | None, headers: list[tuple[str, bytes]]
) -> None:
    app = faust.App("raw-schema-test", broker="memory://")
    message = Message("t", 3, 17, 0.0, 0, headers, key, value, None)
    ours = await raw().compile(app)(message)
    faust_s = await faust.Schema(
        key_type=bytes, value_type=bytes, key_serializer="raw", value_serializer="raw"
    ).compile(app)(message)
    seen: list[tuple[Any, ...]] = [
        (e.key, e.value, e.headers, e.message, type(e)) for e in (ours, faust_s)
    ]
    assert seen[0] == seen[1]
    assert (ours.key, ours.value, ours.message) == (key, value, message)
