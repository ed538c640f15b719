"""The wire: orjson bytes of one event (a JSON object) or a batch of one key (a JSON array)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails, from_json

from schemas.envelope import Event
from schemas.limits import LIMIT_ERRORS
from schemas.registry import UnknownEventType, event_class, union_adapters
from schemas.upcasters import upcast

# The broker's default `message.max.bytes` (1 MiB, less its record overhead is still above what
# we allow the value): every producer of ours stays at or below it, consumers refuse more.
MAX_MESSAGE_BYTES = 1024 * 1024
WIRE_REQUIRED = ("event_id", "observed_at")
_WIRE_FIELDS = frozenset(WIRE_REQUIRED)


class MessageTooLarge(ValueError):
    """One event whose encoding alone exceeds MAX_MESSAGE_BYTES: no split can send it."""

    def __init__(self, event: Event, size: int) -> None:
        super().__init__(
            f"limit: {event.type} {event.event_id} is {size} bytes encoded, more than the "
            f"{MAX_MESSAGE_BYTES} a Kafka message may carry"
        )
        self.size = size


class DecodeError(ValueError):
    """The bytes are not a valid message of the contract; `reason` is short and stable."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


def encode(event: Event) -> bytes:
    return event.__pydantic_serializer__.to_json(event)


def encode_checked(event: Event) -> bytes:
    """`encode`, refusing an event no message could carry."""
    body = encode(event)
    if len(body) > MAX_MESSAGE_BYTES:
        raise MessageTooLarge(event, len(body))
    return body


def split_batches(events: Sequence[Event], max_bytes: int = MAX_MESSAGE_BYTES) -> list[bytes]:
    """Events of one subject as few messages as fit in `max_bytes` each, in order."""
    messages: list[bytes] = []
    open_: list[bytes] = []
    size = 2
    for event in events:
        body = encode_checked(event)
        if open_ and size + len(body) + 1 > max_bytes:
            messages.append(b"[" + b",".join(open_) + b"]")
            open_, size = [], 2
        open_.append(body)
        size += len(body) + 1
    if open_:
        messages.append(b"[" + b",".join(open_) + b"]")
    return messages


def encode_batch(events: Sequence[Event]) -> bytes:
    """One message for many events of one key: that is what keeps per-message costs bearable."""
    if not events:
        raise ValueError("a batch needs at least one event")
    subject = events[0].subject
    if any(e.subject != subject for e in events):
        raise ValueError("a batch carries events of one subject (Kafka key) only")
    return b"[" + b",".join(encode(e) for e in events) + b"]"


def decode(raw: bytes | None, expect: tuple[type[Event], ...] | None = None) -> list[Event]:
    """Bytes → events, upcasting old schema versions. Raises DecodeError, never anything else
    (a Kafka record without a value, a tombstone, is `empty`). `expect`: the types a reader
    expects, tried first; anything else still decodes as it would without."""
    if not raw:
        raise DecodeError("empty", "no value (a tombstone)" if raw is None else "no bytes")
    if len(raw) > MAX_MESSAGE_BYTES:
        raise DecodeError("oversized", f"{len(raw)} bytes > {MAX_MESSAGE_BYTES}")
    fast = _decode_current(raw, expect)
    return fast if fast is not None else _decode_slow(raw)


def _decode_current(
    raw: bytes, expect: tuple[type[Event], ...] | None = None
) -> list[Event] | None:
    """The common case in one pass of pydantic-core over the bytes: current schema versions, all
    wire fields present. Anything else returns None and takes the slow path, which upcasts old
    versions and says precisely what is wrong."""
    one, many = union_adapters(expect)
    try:
        events: list[Event] = (
            many.validate_json(raw) if raw[:1] == b"[" else [one.validate_json(raw)]
        )
    except ValidationError:
        return None
    for e in events:
        if e.schema_version != e.current_version or not e.model_fields_set >= _WIRE_FIELDS:
            return None
    return events or None


def _decode_slow(raw: bytes) -> list[Event]:
    try:
        # pydantic-core's parser, not orjson's: orjson reads an integer past 64 bits as a float,
        # which would turn a value the limits refuse into another one they accept.
        doc = from_json(raw, cache_strings=False)
    except ValueError as exc:
        raise DecodeError("malformed", str(exc)) from None
    items = doc if isinstance(doc, list) else [doc]
    if not items:
        raise DecodeError("empty-batch")
    return [_decode_one(item) for item in items]


def _decode_one(item: Any) -> Event:
    if not isinstance(item, dict):
        raise DecodeError("malformed", f"expected an object, got {type(item).__name__}")
    type_name = item.get("type")
    if not isinstance(type_name, str):
        raise DecodeError("malformed", "missing string field 'type'")
    try:
        cls = event_class(type_name)
    except UnknownEventType as exc:
        raise DecodeError("unknown-type", str(exc)) from None
    missing = [f for f in WIRE_REQUIRED if f not in item]
    if missing:
        # Defaults would make each consumer invent its own id/time for the same message.
        raise DecodeError("invalid", f"{', '.join(missing)}: required on the wire")
    try:
        return cls.model_validate(upcast(cls, item))
    except ValidationError as exc:
        limit = next((e for e in exc.errors() if e["type"] in LIMIT_ERRORS), None)
        if limit is not None:
            raise DecodeError("limit", _describe(limit, exc)) from None
        raise DecodeError("invalid", _describe(exc.errors()[0], exc)) from None
    except ValueError as exc:  # an upcaster refusing the document
        raise DecodeError("invalid", str(exc)) from None


def _describe(error: ErrorDetails, exc: ValidationError) -> str:
    """`payload.nodes: List should have at most 16384 items after validation, not 50000`."""
    where = ".".join(str(p) for p in error["loc"])
    more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
    return f"{where}: {error['msg']}{more}"
