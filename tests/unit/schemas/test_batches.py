"""The canary of `schemas.runtime.batches`: aiokafka's fetcher still names the batch it fails on."""

from __future__ import annotations

import aiokafka.codec
import pytest
from aiokafka import TopicPartition
from aiokafka.consumer.fetcher import PartitionRecords
from aiokafka.errors import UnsupportedCodecError
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords

from schemas.runtime.batches import locate

LZ4 = 3


def lz4_batch(base_offset: int, records: int) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=LZ4, is_transactional=0, producer_id=-1,
        producer_epoch=-1, base_sequence=-1, batch_size=1 << 20,
    )  # fmt: skip
    for i in range(records):
        builder.append(i, timestamp=None, key=b"k", value=b"v" * 50, headers=[])
    batch = bytearray(builder.build())
    batch[0:8] = base_offset.to_bytes(8, "big")  # where a broker would have put it
    return bytes(batch)


def test_the_failing_batch_is_located_from_aiokafka_s_own_exception(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tp = TopicPartition("t", 3)
    records = MemoryRecords(lz4_batch(40, 5))
    monkeypatch.setattr(aiokafka.codec, "cramjam", None)  # as a client without the codec
    partition = PartitionRecords(tp, records, [], 40, None, None, False, 0)
    with pytest.raises(UnsupportedCodecError) as raised:
        list(partition)
    assert locate(raised.value) == (tp, 40, 45)
