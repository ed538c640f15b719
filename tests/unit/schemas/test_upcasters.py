from collections.abc import Iterator
from typing import Any, ClassVar, Literal

import orjson
import pytest

from schemas.codec import DecodeError, decode, encode
from schemas.envelope import Event, Payload
from schemas.registry import _EVENTS, event
from schemas.upcasters import _UPCASTERS, upcaster


class RenamedPayload(Payload):
    gpu_count: int


@pytest.fixture
def versioned_event() -> Iterator[type[Event]]:
    @event(topic="jobs")
    class SampleRecorded(Event):
        current_version: ClassVar[int] = 2
        type: Literal["SampleRecorded"] = "SampleRecorded"
        payload: RenamedPayload

    @upcaster("SampleRecorded", 1)
    def gpus_renamed(doc: dict[str, Any]) -> dict[str, Any]:
        payload = dict(doc["payload"])
        payload["gpu_count"] = payload.pop("gpus")
        return {**doc, "payload": payload}

    yield SampleRecorded
    del _EVENTS["SampleRecorded"]
    del _UPCASTERS[("SampleRecorded", 1)]


def _doc(version: int, payload: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "type": "SampleRecorded",
            "schema_version": version,
            "source": "s",
            "cluster": "c",
            "subject": "j",
            "occurred_at": "2026-01-01T00:00:00Z",
            "observed_at": "2026-01-01T00:00:00Z",
            "event_id": "00000000-0000-0000-0000-000000000001",
            "payload": payload,
        }
    )


def test_old_version_is_upcast_on_decode(versioned_event: type[Event]) -> None:
    [decoded] = decode(_doc(1, {"gpus": 8}))
    assert decoded.payload.gpu_count == 8
    assert decoded.schema_version == 2


def test_newer_version_than_reader_is_refused(versioned_event: type[Event]) -> None:
    with pytest.raises(DecodeError, match="newer"):
        decode(_doc(3, {"gpu_count": 8}))


def _status(version: int, payload: dict[str, Any]) -> bytes:
    doc = orjson.loads(_doc(version, payload))
    return orjson.dumps({**doc, "type": "NodeStatusChanged", "subject": "gpu-01"})


def test_a_v1_node_status_names_who_in_by_not_in_its_state() -> None:
    """v1 said `held` for an operator's quarantine and `drained` for one by hand in the
    scheduler: records still on the compacted status topic read as v2 says them."""
    [held] = decode(_status(1, {"state": "held", "held_by": "alice", "why": "NVLink"}))
    assert (held.payload.state, held.payload.by, held.payload.why) == (
        "quarantined",
        "operator/alice",
        "NVLink",
    )
    [theirs] = decode(_status(1, {"state": "drained", "decided_by": "scheduler", "why": "swap"}))
    assert (theirs.payload.state, theirs.payload.by) == ("quarantined", "scheduler")
    # `held` by a silence (a rule's drain it holds) is what v2 calls held: it stays.
    [silenced] = decode(_status(1, {"state": "held", "decided_by": "fatal_xid"}))
    assert (silenced.payload.state, silenced.payload.by) == ("held", "fatal_xid")
    [rule] = decode(_status(1, {"state": "quarantined", "decided_by": "fatal_xid"}))
    assert (rule.payload.by, rule.schema_version) == ("fatal_xid", 2)
    [now] = decode(encode(rule))  # written today: v2, read back as it is
    assert now == rule


def test_a_v2_node_status_with_a_v1_state_is_refused() -> None:
    with pytest.raises(DecodeError, match="state"):
        decode(_status(2, {"state": "drained"}))
