"""Records → rows (dead letters included), batch tokens, migration templating."""

from __future__ import annotations

from pathlib import Path

from aiokafka import ConsumerRecord, TopicPartition

from schemas.codec import encode, encode_batch
from schemas.deadletter import DeadLetter
from schemas.placement import Placement, partition_for
from streams.history.migrations import Migration, discover
from streams.history.rows import Rows, add_record
from streams.history.settings import DDL_DIR, ClickHouseSettings
from streams.history.sink import Batch
from streams.testing import checkpoint, xid
from tests.factories import exited

UNPLACED = Placement({})  # no topic checked for placement: the tests below are not about it


def record(
    topic: str, value: bytes, offset: int = 0, key: bytes = b"k", partition: int = 0
) -> ConsumerRecord[bytes, bytes]:
    return ConsumerRecord(topic, partition, offset, 0, 0, key, value, None, 0, len(value), [])


def test_a_batched_message_gives_a_row_per_event() -> None:
    rows = Rows()
    events = [checkpoint(1), exited()]
    add_record(rows, record("c.jobs", encode_batch(events), 7), "c.deadletter", UNPLACED)
    assert [r[0] for r in rows.events] == [e.event_id for e in events]
    assert {(r[8], r[9], r[10]) for r in rows.events} == {("c.jobs", 0, 7)}
    assert rows.events[0][11] == '{"step":1,"uri":"s3://ckpt/step-1","epoch":null,' + (
        '"size_bytes":null,"duration_s":null}'
    )


def test_dead_letters_and_undecodable_records_become_dead_letter_rows() -> None:
    rows = Rows()
    letter = DeadLetter(
        reason="invalid", consumer="streams", topic="c.jobs", partition=1, offset=2, raw=b"x"
    )
    add_record(rows, record("c.deadletter", letter.to_bytes()), "c.deadletter", UNPLACED)
    add_record(rows, record("c.jobs", b"[]", 9), "c.deadletter", UNPLACED)
    assert not rows.events
    assert [(r[0], r[1], r[3], r[5], r[7]) for r in rows.dead_letters] == [
        ("streams", "invalid", "c.jobs", 2, b"x"),
        ("history-sink", "empty-batch", "c.jobs", 9, b"[]"),
    ]


def test_misplaced_records_become_dead_letter_rows_as_the_streams_worker_refuses_them() -> None:
    """History holds what the control plane folded: a record the worker dead-letters for its
    place is a dead letter here too, so replay never decides on it."""
    placement = Placement({"c.jobs": ("jobs", 4)})
    job = checkpoint(1)
    key = job.subject.encode()
    home = partition_for(key, 4)
    rows = Rows()
    add_record(rows, record("c.jobs", encode(job), 1, key, home), "c.deadletter", placement)
    add_record(rows, record("c.jobs", encode(job), 2, b"other", home), "c.deadletter", placement)
    away = (home + 1) % 4
    add_record(rows, record("c.jobs", encode(job), 3, key, away), "c.deadletter", placement)
    fault = xid(job.subject)  # a node's event on the jobs topic
    add_record(rows, record("c.jobs", encode(fault), 4, key, home), "c.deadletter", placement)
    assert [(r[8], r[10]) for r in rows.events] == [("c.jobs", 1)]
    assert [(r[1], r[5]) for r in rows.dead_letters] == [
        ("wrong-key", 2),
        ("wrong-partition", 3),
        ("wrong-topic", 4),
    ]


def test_batch_token_names_offset_ranges() -> None:
    batch = Batch(UNPLACED)
    a, b = TopicPartition("t", 1), TopicPartition("t", 0)
    batch.first.update({a: 10, b: 0})
    batch.last.update({a: 19, b: 4})
    assert batch.token == "t:0:0-4,t:1:10-19"


def test_migrations_are_ordered_and_templated() -> None:
    found = discover(DDL_DIR)
    assert [m.version for m in found] == sorted(m.version for m in found)
    settings = ClickHouseSettings(database="db1", ttl_days=7, samples_ttl_days=3)
    statements = [s for m in found for s in m.statements(settings)]
    assert all("{" not in s or "{database}" not in s for s in statements)
    text = "\n".join(statements)
    assert "`db1`.events" in text and "INTERVAL 7 DAY" in text and "INTERVAL 3 DAY" in text
    # Every statement has code, not only comments (which may lead it, as they say why).
    code = [
        [ln for ln in s.splitlines() if ln.strip() and not ln.strip().startswith("--")]
        for s in statements
    ]
    assert all(code)
    assert "`db1`.job_events MODIFY TTL toDateTime(inserted_at) + INTERVAL 7 DAY" in text
    assert "`db1`.log_lines MODIFY TTL toDateTime(inserted_at) + INTERVAL 3 DAY" in text


def test_comment_only_chunks_are_not_statements(tmp_path: Path) -> None:
    path = tmp_path / "001_x.sql"
    path.write_text("-- only a comment;\nCREATE TABLE `{database}`.t (a UInt8) ENGINE = Log;\n")
    assert Migration(1, path).statements(ClickHouseSettings(database="d")) == [
        "CREATE TABLE `d`.t (a UInt8) ENGINE = Log"
    ]
