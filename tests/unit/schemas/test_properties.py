"""Property tests: the JSON Schema files and the models agree, and decoding never crashes."""

from __future__ import annotations

import contextlib
import uuid
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.codec import (
    DecodeError,
    _decode_current,
    _decode_slow,
    decode,
    encode,
    encode_batch,
)
from schemas.jsonschema import event_schema
from schemas.registry import event_types
from tests.jsonschema_strategy import from_schema

EVENT_TYPES = sorted(event_types())


def strategy(name: str) -> st.SearchStrategy[dict[str, Any]]:
    return from_schema(event_schema(event_types()[name]))


FAST = settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.mark.parametrize("name", EVENT_TYPES)
def test_documents_valid_per_json_schema_decode_and_round_trip(name: str) -> None:
    """What a bespoke producer builds from the schema files alone is accepted, and survives
    bytes → model → bytes unchanged."""

    @FAST
    @given(doc=strategy(name))
    def check(doc: dict[str, Any]) -> None:
        raw = orjson.dumps(doc)
        [event] = decode(raw)
        # The one-pass fast path and plain pydantic build the very same event.
        assert _decode_current(raw) == [event] == [event_types()[name].model_validate(doc)]
        assert event.type == name
        again = encode(event)
        assert decode(again) == [event]
        assert encode(decode(again)[0]) == again

    check()


@FAST
@given(st.binary(max_size=2048))
def test_arbitrary_bytes_never_crash_decoding(raw: bytes) -> None:
    with contextlib.suppress(DecodeError):
        decode(raw)


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(
    base=st.sampled_from(EVENT_TYPES),
    path=st.lists(
        st.sampled_from(["payload", "type", "subject", "occurred_at", "event_id", "x"]),
        min_size=1,
        max_size=2,
    ),
    value=JSONISH,
)
def test_mangled_documents_fail_with_decode_error_only(
    base: str, path: list[str], value: Any
) -> None:
    doc: dict[str, Any] = {
        "type": base,
        "source": "s",
        "cluster": "c",
        "subject": "j",
        "event_id": "00000000-0000-0000-0000-000000000001",
        "occurred_at": "2026-01-01T00:00:00Z",
        "observed_at": "2026-01-01T00:00:00Z",
        "payload": {},
    }
    target = doc
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(target.get(key), dict) else target
    target[path[-1]] = value
    for raw in (orjson.dumps(doc), orjson.dumps([doc, doc])):
        with contextlib.suppress(DecodeError):
            decode(raw)
        fast = _decode_current(raw)
        if fast is not None:  # never accept what pydantic would refuse, or read it differently
            assert fast == _decode_slow(raw)


def test_batch_of_schema_documents_decodes_in_order() -> None:
    @FAST
    @given(docs=st.lists(strategy("JobExited"), min_size=1, max_size=5))
    def check(docs: list[dict[str, Any]]) -> None:
        for d in docs:
            d["subject"] = "same"
        events = decode(orjson.dumps(docs))
        assert [e.event_id for e in events] == [uuid.UUID(d["event_id"]) for d in docs]
        assert decode(encode_batch(events)) == events

    check()
