"""The kinds of hostile message, one function each, registered with `@kind(name, weight)`.

Weights are per cycle of about ten thousand messages. The few that weigh megabytes (very long
strings, huge lists, compression bombs) are rare, so that a million messages stay a few GB; each
cycle starts with one of every kind, the largest of its sizes first (the issue's 500,000-character
subject, a JobExited naming 50,000 nodes), so a small run meets them too.
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from pydantic import SecretStr

from centrality.bench.hostile_schema import INT64, Field, int_bounds, number_bounds
from centrality.bench.hostile_storm import (
    Headers,
    Hostile,
    Storm,
    Template,
    crc32_partition,
    drop_path,
    has_parent,
    key_of,
    kind,
    set_path,
)
from schemas.signing import SIGNATURE_HEADER, signature
from schemas.topics import spec

LONG = "x" * 3_000_000
NODES = [f"n{i:05d}" for i in range(50_000)]
# String lengths, largest first (the 500,000-character subject); None: just past the
# field's own `maxLength`.
LONG_LADDER = (500_000, None, 1024, 16_384, 131_072, None, 1024, 16_384)
LIST_LADDER = (50_000, None, 1000, 10_000)
BOMB_CODECS = (
    "librdkafka:lz4",
    "librdkafka:zstd",
    "librdkafka:snappy",
    "librdkafka:gzip",
    "aiokafka:gzip",
)
BIG = "__hostile_big__"


@kind("valid", 200)
def valid(storm: Storm, topic: str) -> Hostile:
    """Plain valid events (batched where the topic is), the baseline between the others."""
    template = storm.template(topic)
    if not spec(topic).batched:
        return storm.encoded("valid", topic, storm.fresh(template))
    first = storm.fresh(template)
    batch = [first] + [
        {**storm.fresh(template), "subject": first["subject"]}
        for _ in range(storm.rng.randint(0, 7))
    ]
    return storm.finish("valid", topic, key_of(first), orjson.dumps(batch))


_WRONG_TYPES: dict[str, tuple[Any, ...]] = {
    "string": (12345, [], {}, True, None, 1.5),
    "date-time": (1_700_000_000, [], {}, True, None),
    "uuid": (123, [], {}, None, "not-a-uuid"),
    "integer": ("12", 1.5, [], {}, None, True),
    "number": ("1.5", [], {}, None, True),
    "boolean": ("true", 1, [], None),
    "array": ("x", {}, 7, None, [[[]]], [{}]),
    "object": ([], "payload", 0, None),
    "enum": (0, [], None, "NOT_A_MEMBER"),
    "const": (0, None, "Other"),
    "any": ([[{}]],),
}


@kind("wrong-type", 1200)
def wrong_type(storm: Storm, topic: str) -> Hostile:
    """One field of the wrong JSON type; sometimes a field missing, or one no schema names."""
    template = storm.template(topic)
    doc = storm.fresh(template)
    field = storm.rng.choice(template.event.fields)
    roll = storm.rng.random()
    if roll < 0.15:
        drop_path(doc, field.path)
    elif roll < 0.25:
        set_path(doc, (*field.path[:-1], "unknown_field"), 1)
    else:
        set_path(doc, field.path, storm.rng.choice(_WRONG_TYPES[field.kind]))
    return storm.finish(
        "wrong-type", topic, key_of(doc) or template.subject.encode(), orjson.dumps(doc)
    )


def _long(field: Field, step: int) -> int:
    """Always past the field's stated limit (a rung may equal one, e.g. a log line's 16,384)."""
    limit = field.schema.get("maxLength")
    wanted = LONG_LADDER[step % len(LONG_LADDER)]
    if limit:
        return max(wanted or 0, int(limit) + 1)
    return wanted if wanted is not None else 100_000


@kind("too-long-string", 20)
def too_long_string(storm: Storm, topic: str) -> Hostile:
    """A string past its limit: the subject (the key too) half the time, else another string."""
    template = storm.template(topic)
    doc = storm.fresh(template)
    strings = template.event.of_kind("string")
    subject = next(f for f in strings if f.path == ("subject",))
    field = subject if storm.count("too-long-subject") % 2 == 0 else storm.rng.choice(strings)
    set_path(doc, field.path, LONG[: _long(field, storm.count("too-long-string"))])
    return storm.encoded("too-long-string", topic, doc)


@kind("huge-list", 10)
def huge_list(storm: Storm, topic: str) -> Hostile:
    """A list past its limit (a JobExited naming 50,000 nodes), or a batch of that many events."""
    step = storm.count("huge-list") % len(LIST_LADDER)
    template = storm.template(topic, having=("array",))
    arrays = template.event.of_kind("array")
    if step == len(LIST_LADDER) - 1 or not arrays:
        return _huge_batch(storm, topic, step)
    named_nodes = [f for f in arrays if f.path[-1] == "nodes"]
    field = storm.rng.choice(named_nodes or arrays)
    limit = field.schema.get("maxItems")
    # Always past the stated limit; where none is stated, long enough to hurt.
    n = max(LIST_LADDER[step] or 0, limit + 1) if limit else (LIST_LADDER[step] or 100_000)
    doc = storm.fresh(template)
    item = storm.factory.value(field.schema.get("items", {}), template.event.defs)
    if not isinstance(item, str):  # under the broker's message limit: past it, nothing arrives
        n = min(n, 900_000 // len(orjson.dumps(item)))
    set_path(doc, field.path, NODES[:n] if isinstance(item, str) else [item] * n)
    return storm.encoded("huge-list", template.event.topic, doc)


def _huge_batch(storm: Storm, topic: str, step: int) -> Hostile:
    """Thousands of distinct events of one subject in one message: a test of amplification
    (outputs per input), not of duplicates."""
    doc = storm.fresh(storm.template(topic))
    one = orjson.dumps(doc)
    n = min(LIST_LADDER[step] or 1000, 900_000 // len(one))  # under the broker's message limit
    event_id = str(doc["event_id"]).encode()
    copies = [
        one.replace(event_id, str(uuid.UUID(int=storm.rng.getrandbits(128), version=4)).encode())
        for _ in range(n)
    ]
    return storm.finish("huge-list", topic, key_of(doc), b"[" + b",".join(copies) + b"]")


# Past 64 bits: spliced in as digits, since orjson refuses to write them (and Python to parse
# the longest).
_BIG_INTS = (*(str(n).encode() for n in (2**63, -(2**63) - 1, 2**64, 10**30)), b"9" * 5000)


@kind("out-of-range-int", 800)
def out_of_range_int(storm: Storm, topic: str) -> Hostile:
    """Integers outside their bounds, past 64 bits, or floats where integers belong."""
    template = storm.template(topic, having=("integer", "number"))
    doc = storm.fresh(template)
    field = storm.rng.choice(template.event.of_kind("integer", "number"))
    low, high = int_bounds(field.schema)
    below = str(low - 1).encode() if low > INT64[0] else _BIG_INTS[1]
    above = str(high + 1).encode() if high < INT64[1] else _BIG_INTS[0]
    value = storm.rng.choice((*_BIG_INTS, below, above, 1e308, -1e308, 1.0e-320, 0.5))
    if isinstance(value, bytes):
        set_path(doc, field.path, BIG)
        raw = orjson.dumps(doc).replace(f'"{BIG}"'.encode(), value)
    else:
        set_path(doc, field.path, value)
        raw = orjson.dumps(doc)
    return storm.finish("out-of-range-int", template.event.topic, key_of(doc), raw)


TIMES = (
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59.999999Z",
    "9999-12-31T23:59:59-14:00",
    "1970-01-01T00:00:00Z",
    "1969-12-31T23:59:59.999999Z",
    "1999-12-31T23:59:59Z",
    "2016-12-31T23:59:60Z",  # a leap second
    "2038-01-19T03:14:08Z",
    "2106-02-07T06:28:16Z",
    "2262-04-11T23:47:16.854775808Z",  # past int64 nanoseconds
    "2299-12-31T23:59:59Z",
    "2026-02-30T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T00:00:00+24:00",
    "2026-01-01T00:00:00",  # no zone
    "2026-01-01T00:00:00.1234567890Z",
    "2026-01-01t00:00:00z",
    "2026-01-01 00:00:00Z",
    "+10000-01-01T00:00:00Z",
    "",
)


@kind("extreme-time", 1000)
def extreme_time(storm: Storm, topic: str) -> Hostile:
    """Timestamps at and past the edges: years 0001 and 9999, a leap second, int64 ns overflow."""
    template = storm.template(topic)
    doc = storm.fresh(template)
    times = template.event.of_kind("date-time")
    roll = storm.rng.random()
    path = ("occurred_at",) if roll < 0.6 else ("observed_at",) if roll < 0.8 else None
    field_path = path or storm.rng.choice(times).path
    set_path(doc, field_path, storm.rng.choice(TIMES))
    return storm.encoded("extreme-time", topic, doc)


_ODD_TEXT = (
    "\u0000",
    "\U0001f525" * 3,
    "\u202eevil",
    "e\u0301\u0301\u0301",
    "\u200b",
    "\ufeff",
    "'; DROP TABLE events; --",
    "\\N",
    "\t\n\r",
    "{{7*7}}",
)


@kind("extreme-valid", 1000)
def extreme_valid(storm: Storm, topic: str) -> Hostile:
    """Values the schema allows at its edges: int64 bounds (an exit code of 2^40), strings at
    their longest or of odd characters, lists at their longest or empty, extreme floats."""
    template = storm.template(topic)
    doc = storm.fresh(template)
    field = storm.rng.choice([f for f in template.event.fields if has_parent(doc, f.path)])
    rng = storm.rng
    schema = field.schema
    if field.kind == "integer":
        low, high = int_bounds(schema)
        value: Any = rng.choice((low, high, max(low, min(high, 2**40)), max(low, min(high, 0))))
    elif field.kind == "number":
        least, most = number_bounds(schema)
        value = rng.choice((least, most, 5e-324 if least <= 5e-324 <= most else most))
    elif field.kind == "string":
        limit = schema.get("maxLength")
        odd = rng.choice(_ODD_TEXT)
        value = rng.choice((odd, odd * 50, "y" * limit if limit else "y" * 4096))
        value = value[:limit] if limit else value
        value = value if len(value) >= schema.get("minLength", 0) else "y" * schema["minLength"]
    elif field.kind == "array":
        low, limit = schema.get("minItems", 0), schema.get("maxItems", 1000)
        item = storm.factory.value(schema.get("items", {}), template.event.defs)
        value = [item] * rng.choice((low, limit))
    else:
        value = storm.factory.value(schema, template.event.defs)
        if field.nullable:
            value = None
    set_path(doc, field.path, value)
    return storm.finish(
        "extreme-valid", topic, key_of(doc) or template.subject.encode(), orjson.dumps(doc)
    )


@kind("byte-mutation", 1500)
def byte_mutation(storm: Storm, topic: str) -> Hostile:
    """A valid message with a few bytes flipped, inserted or removed."""
    template = storm.template(topic)
    raw = bytearray(template.raw)
    rng = storm.rng
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(raw))
        roll = rng.random()
        if roll < 0.5:
            raw[at] = rng.randrange(256)
        elif roll < 0.75:
            raw.insert(at, rng.randrange(256))
        elif len(raw) > 1:
            del raw[at]
    return storm.finish("byte-mutation", topic, template.subject.encode(), bytes(raw))


@kind("truncated", 1000)
def truncated(storm: Storm, topic: str) -> Hostile:
    template = storm.template(topic)
    cut = storm.rng.randrange(len(template.raw))
    return storm.finish("truncated", topic, template.subject.encode(), template.raw[:cut])


@kind("random-bytes", 600)
def random_bytes(storm: Storm, topic: str) -> Hostile:
    """Noise of every size, a null value (a tombstone), empty, NULs, UTF-16 JSON, a BOM."""
    rng = storm.rng
    template = storm.template(topic)
    value: bytes | None = rng.choice(
        (
            None,
            b"",
            b"\x00" * 1000,
            template.raw.decode().encode("utf-16"),
            b"\xef\xbb\xbf" + template.raw,
            rng.randbytes(1),
            rng.randbytes(16),
            rng.randbytes(256),
            rng.randbytes(4096),
        )
    )
    key = rng.choice((template.subject.encode(), None, rng.randbytes(8)))
    return storm.finish("random-bytes", topic, key, value)


_SHAPES = (b"42", b"null", b'"JobExited"', b"[]", b"[1,2]", b"{}", b"[{}]", b"[[]]", b"true")


@kind("unknown-type", 400)
def unknown_type(storm: Storm, topic: str) -> Hostile:
    """A type no one registered, a type of the wrong JSON kind or none, or no object at all."""
    rng = storm.rng
    template = storm.template(topic)
    if rng.random() < 0.3:
        return storm.finish("unknown-type", topic, template.subject.encode(), rng.choice(_SHAPES))
    doc = storm.fresh(template)
    name: Any = rng.choice(
        ("NoSuchEvent", "", 42, None, [], f"{doc['type']} ", str(doc["type"]).lower())
    )
    if rng.random() < 0.2:
        del doc["type"]
    else:
        doc["type"] = name
    return storm.encoded("unknown-type", topic, doc)


def _json_edge(storm: Storm, template: Template) -> bytes:
    raw = template.raw
    body = raw[:-1]
    choices: tuple[bytes, ...] = (
        body + b',"type":"GpuSampled"}',  # a duplicate key
        body + b',"zz":NaN}',
        body + b',"zz":Infinity}',
        body + b',"zz":1e400}',
        body + b',"zz":' + b"9" * 5000 + b"}",
        b"[" * 20_000 + b"]" * 20_000,
        body + b',"zz":' + b'{"a":' * 5000 + b"1" + b"}" * 5000 + b"}",
        raw.replace(b'"subject":"', b'"subject":"\\ud800', 1),  # a lone surrogate
        raw.replace(b'"subject":"', b'"subject":"\xff\xfe', 1),  # not UTF-8
        raw + b" trailing",
        raw + raw,
        b" " * 10_000 + raw,
        raw.replace(b"{", b"{\n", 1),
    )
    return storm.rng.choice(choices)


@kind("json-edge", 400)
def json_edge(storm: Storm, topic: str) -> Hostile:
    """JSON that parsers disagree on: duplicate keys, NaN, huge numbers, deep nesting, bad
    escapes, invalid UTF-8, trailing data."""
    template = storm.template(topic)
    return storm.finish("json-edge", topic, template.subject.encode(), _json_edge(storm, template))


@kind("wrong-topic", 400)
def wrong_topic(storm: Storm, topic: str) -> Hostile:
    """A valid event on a topic that is not its own (a GpuSampled on `jobs`)."""
    other = storm.rng.choice([t for t in storm.templates if t != topic])
    return storm.encoded("wrong-topic", topic, storm.fresh(storm.template(other)))


@kind("wrong-key", 400)
def wrong_key(storm: Storm, topic: str) -> Hostile:
    """A valid event keyed by something other than its subject: none, empty, another subject,
    binary, 10 KB."""
    rng = storm.rng
    doc = storm.fresh(storm.template(topic))
    subject = str(doc["subject"])
    key = rng.choice(
        (
            None,
            b"",
            rng.choice([j for j in storm.jobs if j != subject]).encode(),  # another's
            rng.randbytes(16),
            b"k" * 10_240,
            subject.upper().encode() + b"!",
        )
    )
    return storm.finish("wrong-key", topic, key, orjson.dumps(doc))


@kind("wrong-partition", 400)
def wrong_partition(storm: Storm, topic: str) -> Hostile:
    """A valid event on another partition than murmur2 picks for its key, as librdkafka's
    default partitioner (CRC32) would put most keys."""
    message = storm.encoded("wrong-partition", topic, storm.fresh(storm.template(topic)))
    assert message.key is not None
    partitions = storm.partitions[topic]
    wrong = crc32_partition(message.key, partitions)
    if wrong == message.partition:
        wrong = (wrong + 1) % partitions
    return storm.finish("wrong-partition", topic, message.key, message.value, partition=wrong)


@kind("mixed-subjects", 300)
def mixed_subjects(storm: Storm, topic: str) -> Hostile:
    """One message carrying events of several subjects, keyed by the first."""
    docs = [storm.fresh(storm.template(topic)) for _ in range(storm.rng.randint(2, 5))]
    docs[1]["subject"] = f"{docs[0]['subject']}-other"
    return storm.finish("mixed-subjects", topic, key_of(docs[0]), orjson.dumps(docs))


_OTHER_KEY = SecretStr("not-the-workers-key")


@kind("unsigned-trigger", 300, topics=("triggers",))
def unsigned_trigger(storm: Storm, topic: str) -> Hostile:
    """A valid trigger without a good signature: none, another key's, another message's, junk.
    Its id is kept: an action on it means a worker obeyed an unauthenticated trigger."""
    template = storm.template(topic)
    doc = storm.fresh(template)
    doc["subject"] = f"hostile-unsigned/{storm.rng.randrange(1000)}"
    raw = orjson.dumps(doc)
    storm.unsigned.add(uuid.UUID(doc["event_id"]))
    headers = storm.rng.choice(
        (
            (),
            ((SIGNATURE_HEADER, signature(raw, _OTHER_KEY)),),
            ((SIGNATURE_HEADER, signature(template.raw, storm.key)),),
            ((SIGNATURE_HEADER, b"hmac-sha256=00"),),
            ((SIGNATURE_HEADER, b""),),
            ((SIGNATURE_HEADER.upper(), signature(raw, storm.key)),),
        )
    )
    return storm.finish("unsigned-trigger", topic, key_of(doc), raw, headers=headers, sign=False)


_JUNK_HEADERS: tuple[Headers, ...] = (
    (("traceparent", b"\xff\xfe"),),
    (("traceparent", b"00-" + b"f" * 65_536),),
    (("traceparent", b"00-00000000000000000000000000000000-0000000000000000-01"),),
    tuple((f"h{i}", b"v") for i in range(200)),
    (("", b""),),
    (("tracestate", b"=" * 10_000),),
)


@kind("bad-headers", 300)
def bad_headers(storm: Storm, topic: str) -> Hostile:
    """A valid event with junk headers: broken trace context, 64 KB values, many of them."""
    headers = storm.rng.choice(_JUNK_HEADERS)
    return storm.encoded("bad-headers", topic, storm.fresh(storm.template(topic)), headers=headers)


@kind("compression-bomb", 2)
def compression_bomb(storm: Storm, topic: str) -> Hostile:
    """Megabytes that compress to kilobytes: past the decoder's limit only once decompressed,
    and too large to be dead-lettered with its raw bytes as they are."""
    template = storm.template(topic, having=("string",))
    doc = storm.fresh(template)
    field = storm.rng.choice(
        [f for f in template.event.of_kind("string") if f.path != ("subject",)]
        or template.event.of_kind("string")
    )
    set_path(doc, field.path, LONG[: storm.rng.choice((1_100_000, 2_000_000, 3_000_000))])
    codec = storm.rng.choice(BOMB_CODECS)
    return storm.encoded("compression-bomb", template.event.topic, doc, codec=codec)
