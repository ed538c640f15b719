import uuid

import orjson
import pytest

from schemas.codec import MAX_MESSAGE_BYTES, DecodeError, decode, encode, encode_batch
from schemas.events import Notify, RestartJob
from schemas.events.triggers import trigger_id
from streams.testing import checkpoint
from tests.factories import exited


def test_single_event_round_trips() -> None:
    event = exited()
    assert decode(encode(event)) == [event]


def test_batch_round_trips_in_order() -> None:
    events = [checkpoint(1), checkpoint(2), exited()]
    assert decode(encode_batch(events)) == events


def test_batch_refuses_mixed_subjects() -> None:
    with pytest.raises(ValueError, match="one subject"):
        encode_batch([checkpoint(1), checkpoint(2, subject="other")])


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "malformed"),
        (b"[]", "empty-batch"),
        (b"42", "malformed"),
        (b'{"type": "NoSuchEvent"}', "unknown-type"),
        (b'{"type": "JobExited", "payload": {}}', "invalid"),
        (b" " * (MAX_MESSAGE_BYTES + 1), "oversized"),
    ],
)
def test_bad_bytes_raise_decode_error_with_reason(raw: bytes, reason: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode(raw)
    assert info.value.reason == reason


def test_naive_timestamps_are_rejected() -> None:
    doc = orjson.loads(encode(exited()))
    doc["occurred_at"] = "2026-01-01T00:00:00"
    with pytest.raises(DecodeError, match="occurred_at"):
        decode(orjson.dumps(doc))


def test_unknown_payload_fields_are_rejected() -> None:
    doc = orjson.loads(encode(exited()))
    doc["payload"]["surprise"] = 1
    with pytest.raises(DecodeError, match="surprise"):
        decode(orjson.dumps(doc))


def test_trigger_id_is_deterministic() -> None:
    cause = exited()
    a = RestartJob.decide(
        cause=cause, source="t", rule="r", window="w", reason="x", checkpoint_uri=None, attempt=1
    )
    b = RestartJob.decide(
        cause=exited(), source="t", rule="r", window="w", reason="y", checkpoint_uri=None, attempt=1
    )
    assert a.event_id == b.event_id == trigger_id("RestartJob", "r", cause.subject, "w")
    assert a.event_id != trigger_id("RestartJob", "r", cause.subject, "w2")
    notify = Notify.decide(cause=cause, source="t", rule="r", window="w", reason="x",
                           title="t", incident="i")  # fmt: skip
    assert notify.event_id != a.event_id  # one decision, several triggers: distinct ids
    assert isinstance(a.event_id, uuid.UUID)


def test_a_record_without_a_value_is_a_decode_error_not_a_crash() -> None:
    for raw in (None, b""):
        with pytest.raises(DecodeError) as info:
            decode(raw)
        assert info.value.reason == "empty"
