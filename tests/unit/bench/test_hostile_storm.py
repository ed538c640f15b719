"""The hostile storm sends what it says: each kind breaks (or keeps) the contract as named, on the
topics, partitions and codecs it claims, signed where it should be."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from functools import cache
from random import Random

import jsonschema
import orjson
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from centrality import cli
from centrality.bench.hostile_schema import DocumentFactory, EventSchema, Field, load
from centrality.bench.hostile_send import CODECS
from centrality.bench.hostile_storm import TOPICS, Hostile, Storm
from centrality.bench.run import INPUTS
from schemas.codec import MAX_MESSAGE_BYTES, DecodeError, decode
from schemas.placement import partition_for
from schemas.signing import verify
from schemas.topics import partition_count

KEY = SecretStr("bench-test-key")
NOW = datetime(2026, 11, 24, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def storm() -> Storm:
    return Storm(KEY, seed=3, now=NOW)


@pytest.fixture(scope="module")
def messages(storm: Storm) -> list[Hostile]:
    return list(storm.messages(4_000))


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(_events()[name].schema)


@cache
def _events() -> dict[str, EventSchema]:
    return {e.name: e for e in load()}


def _decodes(message: Hostile) -> bool:
    try:
        decode(message.value or b"")
    except DecodeError:
        return False
    return True


def test_documents_from_the_schema_files_are_valid_per_the_files_and_decode() -> None:
    factory = DocumentFactory(Random(1), NOW)
    for event in load():
        validator = jsonschema.Draft202012Validator(event.schema)
        for i in range(20):
            doc = factory.document(event, f"slurm/t/{i}")
            validator.validate(doc)
    storm = Storm(KEY, seed=1, now=NOW)
    assert {t.event.name for ts in storm.templates.values() for t in ts} == {
        e.name for e in load() if e.topic in TOPICS
    }, "every event type a worker reads has a template the decoder accepts"


def test_every_kind_topic_and_codec_is_sent_even_in_a_small_storm(storm: Storm) -> None:
    first = list(Storm(KEY, seed=3, now=NOW).messages(len(storm.kinds)))
    assert {m.kind for m in first} == set(storm.kinds)
    assert {m.topic for m in first} <= set(TOPICS)


def test_the_same_seed_gives_the_same_messages() -> None:
    one = list(Storm(KEY, seed=9, now=NOW).messages(500))
    two = list(Storm(KEY, seed=9, now=NOW).messages(500))
    assert one == two


def test_kinds_spread_over_every_topic(messages: list[Hostile]) -> None:
    assert {m.topic for m in messages} == set(TOPICS)
    counts = Counter(m.kind for m in messages)
    assert counts["byte-mutation"] > counts["valid"] > counts["huge-list"] > 0


def test_valid_and_extreme_valid_messages_are_valid_per_the_schema_files(
    messages: list[Hostile],
) -> None:
    checked = 0
    for m in messages:
        if m.kind not in ("valid", "extreme-valid"):
            continue
        doc = orjson.loads(m.value or b"")
        for one in doc if isinstance(doc, list) else [doc]:
            _validator(one["type"]).validate(one)
            checked += 1
        assert m.key == doc_subject(doc)
        assert m.partition == partition_for(m.key or b"", partition_count(m.topic))
    assert checked > 500


def doc_subject(doc: object) -> bytes:
    one = doc[0] if isinstance(doc, list) else doc
    assert isinstance(one, dict)
    return str(one["subject"]).encode()


def test_what_must_not_decode_does_not(messages: list[Hostile]) -> None:
    for m in messages:
        if m.kind in ("truncated", "unknown-type", "compression-bomb"):
            assert not _decodes(m), (m.kind, (m.value or b"")[:200])


def test_broken_limits_break_them(messages: list[Hostile]) -> None:
    """Some string or list is past its `maxLength`/`maxItems`, or at least 1000 long where the
    files state no limit (yet)."""
    for m in messages:
        if m.kind not in ("too-long-string", "huge-list"):
            continue
        doc = orjson.loads(m.value or b"")
        if isinstance(doc, list):  # a huge batch
            assert len(doc) >= 1000 or len(m.value or b"") > 800_000
            continue
        assert any(_past_limit(doc, f) for f in _events()[doc["type"]].fields), m.kind


def _past_limit(doc: dict[str, object], field: Field) -> bool:
    value: object = doc
    for name in field.path:
        if not isinstance(value, dict) or name not in value:
            return False
        value = value[name]
    if not isinstance(value, str | list):
        return False
    limit = field.schema.get("maxLength" if isinstance(value, str) else "maxItems")
    return len(value) > limit if limit is not None else len(value) >= 1000


def test_the_issue_sizes_are_in_the_first_cycle(storm: Storm) -> None:
    """A 500,000-character subject and a list of 50,000 nodes, even in a small run (with a seed
    whose first huge list is a list of node names; others draw a list of GPU figures, cut to
    what fits a message)."""
    first = list(Storm(KEY, seed=3, now=NOW).messages(len(storm.kinds)))
    [long] = [m for m in first if m.kind == "too-long-string"]
    assert long.key is not None and len(long.key) == 500_000
    [huge] = [m for m in first if m.kind == "huge-list"]
    doc = orjson.loads(huge.value or b"")
    assert any(isinstance(v, list) and len(v) == 50_000 for v in doc["payload"].values())


def test_placement_kinds_are_misplaced(messages: list[Hostile]) -> None:
    for m in messages:
        doc = orjson.loads(m.value or b"") if m.kind in ("wrong-key", "mixed-subjects") else None
        if m.kind == "wrong-partition":
            assert m.key is not None
            assert m.partition != partition_for(m.key, partition_count(m.topic))
        elif m.kind == "wrong-key":
            assert m.key != str(doc["subject"]).encode()  # type: ignore[index]
        elif m.kind == "mixed-subjects":
            assert len({d["subject"] for d in doc}) > 1  # type: ignore[union-attr]
        elif m.kind == "wrong-topic":
            assert _events()[orjson.loads(m.value or b"")["type"]].topic != m.topic


def test_triggers_are_signed_unless_the_kind_is_unsigned(
    storm: Storm, messages: list[Hostile]
) -> None:
    triggers = [m for m in messages if m.topic == "triggers" and m.value is not None]
    unsigned = [m for m in triggers if m.kind == "unsigned-trigger"]
    assert unsigned and all(not verify(m.value or b"", m.headers, KEY) for m in unsigned)
    assert all(verify(m.value or b"", m.headers, KEY) for m in triggers if m not in unsigned)
    assert {m.key for m in unsigned} and all(
        (m.key or b"").startswith(b"hostile-unsigned/") for m in unsigned
    )
    assert len(storm.unsigned) == len(unsigned)
    assert all(_decodes(m) for m in unsigned), "only the signature is wrong"


def test_compression_bombs_need_a_compressing_producer(messages: list[Hostile]) -> None:
    bombs = [m for m in messages if m.kind == "compression-bomb"]
    assert bombs
    for m in bombs:
        assert len(m.value or b"") > MAX_MESSAGE_BYTES
        assert m.codec in CODECS and not m.codec.endswith(":none")


def test_markers_cover_every_partition_and_decode(storm: Storm) -> None:
    markers = storm.markers(("jobs", "nodes", "gpu"))
    placed = {(m.topic, m.partition) for m in markers}
    assert placed == {(t, p) for t in ("jobs", "nodes", "gpu") for p in range(partition_count(t))}
    for m in markers:
        assert m.key is not None and m.partition == partition_for(m.key, partition_count(m.topic))
        assert all(e.topic == m.topic for e in decode(m.value or b""))


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown kinds"):
        Storm(KEY, only=("no-such-kind",))
    only = list(Storm(KEY, only=("truncated",)).messages(50))
    assert {m.kind for m in only} == {"truncated"}


def test_a_storm_aimed_at_some_topics_goes_to_those_only() -> None:
    storm = Storm(KEY, topics=("triggers",))
    assert storm.reaches(INPUTS["actions"]) and not storm.reaches(INPUTS["streams"])
    aimed = list(storm.messages(600))
    assert {m.topic for m in aimed} == {"triggers"}
    kinds = {m.kind for m in aimed}
    assert {"unsigned-trigger", "out-of-range-int", "huge-list"} <= kinds  # fields of triggers'
    everywhere = list(Storm(KEY, seed=4, now=NOW).messages(300))
    assert everywhere == list(Storm(KEY, seed=4, now=NOW, topics=TOPICS).messages(300))


def test_topics_and_kinds_a_storm_cannot_send_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"unknown topics \['status'\]"):
        Storm(KEY, topics=("status",))
    with pytest.raises(ValueError, match=r"kinds \['unsigned-trigger'\] are sent to none"):
        Storm(KEY, only=("unsigned-trigger",), topics=("nodes",))


def test_the_bench_refuses_a_storm_it_cannot_send_before_starting_anything() -> None:
    refused = CliRunner().invoke(cli.app, ["bench", "hostile", "--topics", "triggers,status"])
    assert refused.exit_code == 2
    assert "unknown topics ['status']" in refused.output
