"""A record batch aiokafka cannot unpack becomes one marked record at its last offset, and the
batches after it in the same fetch are still delivered."""

from __future__ import annotations

import struct

import pytest
from aiokafka.consumer import fetcher
from aiokafka.record._crc32c import crc
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.structs import TopicPartition

from streams.faust import batches

TP = TopicPartition("jobs", 0)
CRC_AT, ATTRIBUTES_AT = 17, 21


def batch(base_offset: int, values: list[bytes], codec: int) -> bytearray:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=False,
        producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=2**20,
    )  # fmt: skip
    for i, value in enumerate(values):
        builder.append(i, timestamp=1000, key=b"k", value=value, headers=[])
    raw = builder.build()
    struct.pack_into(">q", raw, 0, base_offset)
    return raw


def recrc(raw: bytearray) -> bytearray:
    struct.pack_into(">I", raw, CRC_AT, crc(bytes(raw[ATTRIBUTES_AT:])))
    return raw


def unpack(data: bytes) -> list[object]:
    records = batches.Records(data)
    parts = fetcher.PartitionRecords(TP, records, [], 0, None, None, True, 0)
    return list(parts)


@pytest.mark.parametrize(
    ("breaks", "reason"),
    [
        # the codec bits name no codec aiokafka knows (CRC recomputed: the batch is well framed)
        (lambda raw: recrc(_with_codec(raw, 7)), "unsupported-codec"),
        # the compressed bytes are damaged (CRC recomputed): decompression fails
        (lambda raw: recrc(_damaged(raw)), "corrupt-batch"),
        # damaged without a matching CRC
        (lambda raw: _damaged(raw), "corrupt-batch"),
    ],
)
def test_an_unreadable_batch_becomes_one_marker_and_the_next_is_read(
    breaks: object, reason: str
) -> None:
    bad = breaks(batch(0, [b"a" * 200, b"b" * 200, b"c" * 200], codec=1))  # type: ignore[operator]
    good = batch(3, [b"after"], codec=0)
    records = unpack(bytes(bad) + bytes(good))
    marker, after = records
    assert marker.offset == 2  # the bad batch's last offset: committing it skips the batch
    assert marker.value == bytes(bad)
    assert batches.unreadable(marker.headers)[0] == reason
    assert after.offset == 3 and after.value == b"after"
    assert batches.unreadable(after.headers) is None


def test_readable_batches_of_every_codec_pass_unchanged() -> None:
    data = b"".join(bytes(batch(i * 2, [b"x%d" % i, b"y"], codec=i)) for i in range(5))
    assert [r.value for r in unpack(data)] == [
        b"x0",
        b"y",
        b"x1",
        b"y",
        b"x2",
        b"y",
        b"x3",
        b"y",
        b"x4",
        b"y",
    ]


def test_a_forged_mark_is_not_ours() -> None:
    assert batches.unreadable([(batches.HEADER, b"guess|corrupt-batch|x")]) is None


def _damaged(raw: bytearray) -> bytearray:
    raw[-5] ^= 0xFF  # inside the compressed records
    return raw


def _with_codec(raw: bytearray, codec: int) -> bytearray:
    attributes = struct.unpack_from(">h", raw, ATTRIBUTES_AT)[0]
    struct.pack_into(">h", raw, ATTRIBUTES_AT, (attributes & ~0x07) | codec)
    return raw
