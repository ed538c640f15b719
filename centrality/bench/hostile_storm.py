"""The hostile storm: N messages built cheaply from a small pool of valid templates.

Templates are valid documents from the JSON Schema files, checked once against the decoder. Each
message is one *kind* of hostility (a module of kinds registers them with `@kind`), made from a
template by a cheap mutation — a copy through orjson, one field replaced, or a few bytes changed —
so a million messages take seconds to build. Kinds come in a fixed weighted cycle that starts
with one of each, so even a small run sends every kind; topics are drawn per message.
"""

from __future__ import annotations

import importlib
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from random import Random
from typing import Any

import orjson
from pydantic import SecretStr

from centrality.bench.hostile_schema import DocumentFactory, EventSchema, load
from schemas.codec import DecodeError, decode
from schemas.placement import partition_for
from schemas.signing import SIGNATURE_HEADER, signature
from schemas.topics import TopicSettings, partition_count

TOPICS = ("jobs", "logs", "nodes", "gpu", "triggers", "actions")
KIND_MODULES = ("centrality.bench.hostile_kinds",)
Headers = tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class Hostile:
    kind: str
    topic: str  # catalog name
    key: bytes | None
    value: bytes | None
    partition: int
    headers: Headers = ()
    codec: str | None = None  # set when only a compressing producer can carry it


@dataclass(frozen=True)
class Kind:
    name: str
    weight: int  # per cycle of all kinds' weights
    make: Callable[[Storm, str], Hostile]
    topics: tuple[str, ...] = TOPICS


KINDS: dict[str, Kind] = {}


def kind(
    name: str, weight: int, topics: tuple[str, ...] = TOPICS
) -> Callable[[Callable[[Storm, str], Hostile]], Callable[[Storm, str], Hostile]]:
    def register(make: Callable[[Storm, str], Hostile]) -> Callable[[Storm, str], Hostile]:
        KINDS[name] = Kind(name, weight, make, topics)
        return make

    return register


def registered() -> dict[str, Kind]:
    for module in KIND_MODULES:
        importlib.import_module(module)
    return KINDS


@dataclass(frozen=True)
class Template:
    event: EventSchema
    doc: dict[str, Any]
    raw: bytes  # the document alone

    @property
    def subject(self) -> str:
        return str(self.doc["subject"])


def _chosen(topics: Sequence[str]) -> tuple[str, ...]:
    """The storm's topics, in the catalog's order (every one when none is named)."""
    if unknown := sorted(set(topics) - set(TOPICS)):
        raise ValueError(f"unknown topics {unknown}; a storm goes to {list(TOPICS)}")
    return tuple(t for t in TOPICS if not topics or t in topics)


def aimed(only: Sequence[str], topics: Sequence[str] = ()) -> dict[str, tuple[str, ...]]:
    """The topics each kind of the storm goes to: the kinds `only` names (every one when none
    is named) that go to any of `topics`. ValueError, saying which, for a name not known."""
    known, chosen = registered(), _chosen(topics)
    if unknown := sorted(set(only) - set(known)):
        raise ValueError(f"unknown kinds {unknown}; known: {sorted(known)}")
    out = {
        name: to
        for name, k in known.items()
        if (not only or name in only) and (to := tuple(t for t in k.topics if t in chosen))
    }
    if missed := sorted(set(only) - set(out)):
        raise ValueError(f"kinds {missed} are sent to none of the topics {list(chosen)}")
    if not out:
        raise ValueError(f"no kind is sent to the topics {list(chosen)}")
    return out


class Storm:
    """Builds the messages; `unsigned` collects the ids of the valid triggers sent unsigned."""

    def __init__(
        self,
        key: SecretStr,
        seed: int = 12,
        per_type: int = 8,
        subjects: int = 1000,
        now: datetime | None = None,
        only: Sequence[str] = (),
        topics: Sequence[str] = (),
    ) -> None:
        self.rng = Random(seed)
        self.key = key
        # As the deployment creates its topics (read once: a settings read per message was
        # most of a storm's cost).
        created = TopicSettings()
        self.partitions = {t: partition_count(t, created) for t in TOPICS}
        self.aimed = aimed(only, topics)
        self.topics = _chosen(topics)
        self.kinds = {name: k for name, k in registered().items() if name in self.aimed}
        self.events = load()
        self.factory = DocumentFactory(self.rng, now or datetime.now(UTC))
        self.jobs = [f"slurm/hostile/{i}" for i in range(subjects)]
        self.nodes = [f"hn-{i:04d}" for i in range(subjects)]
        self.templates: dict[str, list[Template]] = {t: [] for t in TOPICS}
        for event in self.events:
            if event.topic not in self.templates:  # read by people and the sink, not workers
                continue
            made = (self._template(event) for _ in range(per_type * 4))
            self.templates[event.topic] += [t for t in made if t is not None][:per_type]
        if not all(self.templates.values()):
            raise RuntimeError(f"no valid template for some topics: {self.templates.keys()}")
        self.unsigned: set[uuid.UUID] = set()
        self._counts: Counter[str] = Counter()
        self._pools: dict[tuple[str, tuple[str, ...]], list[Template]] = {}

    def _template(self, event: EventSchema) -> Template | None:
        doc = self.factory.document(event, self.subject_for(event))
        raw = orjson.dumps(doc)
        try:
            decode(raw)
        except DecodeError:  # a constraint the schema files do not state; try another draw
            return None
        return Template(event, doc, raw)

    def subject_for(self, event: EventSchema) -> str:
        on_nodes = event.topic in ("nodes", "gpu") or (
            event.topic == "triggers" and event.name != "RestartJob"
        )
        return self.rng.choice(self.nodes if on_nodes else self.jobs)

    def reaches(self, topics: Sequence[str]) -> bool:
        """Whether the storm goes to any of these topics (a worker's inputs)."""
        return not set(topics).isdisjoint(self.topics)

    def schedule(self) -> list[str]:
        """One of each kind first, then each kind by weight, spread over the cycle."""
        cycle = [k.name for k in self.kinds.values() for _ in range(max(0, k.weight - 1))]
        Random(1).shuffle(cycle)
        return list(self.kinds) + cycle

    def messages(self, n: int) -> Iterator[Hostile]:
        cycle = self.schedule()
        rng = self.rng
        for i in range(n):
            k = self.kinds[cycle[i % len(cycle)]]
            yield k.make(self, rng.choice(self.aimed[k.name]))

    def markers(self, topics: Sequence[str]) -> list[Hostile]:
        """A valid event on every partition of these topics, sent after what is to be counted as
        consumed: a consumer may hold back the offset of the last record it read (Faust acks
        an event when it takes the next one), so the records before a marker are the ones whose
        commit can be awaited."""
        out = []
        for topic in topics:
            for partition in range(self.partitions[topic]):
                doc = self.fresh(self.template(topic))
                subject = next(
                    f"hostile-marker/{i}"
                    for i in range(10_000)
                    if _partition(f"hostile-marker/{i}".encode(), self.partitions[topic])
                    == partition
                )
                doc["subject"] = subject
                out.append(self.encoded("marker", topic, doc))
        return out

    # Building blocks for kinds.

    def count(self, name: str) -> int:
        """How many times `name` was counted before: for kinds that step through sizes."""
        self._counts[name] += 1
        return self._counts[name] - 1

    def template(self, topic: str, having: tuple[str, ...] = ()) -> Template:
        """A template of `topic`; with `having`, one with a field of those kinds (from another
        topic if none of this topic's has one)."""
        pool = self._pools.get((topic, having))
        if pool is None:
            pool = self.templates[topic]
            if having:
                pool = [t for t in pool if t.event.of_kind(*having)] or [
                    t
                    for other in self.topics
                    for t in self.templates[other]
                    if t.event.of_kind(*having)
                ]
            if not pool:
                raise ValueError(f"no event of the topics {list(self.topics)} has a {having} field")
            self._pools[(topic, having)] = pool
        return self.rng.choice(pool)

    def fresh(self, template: Template) -> dict[str, Any]:
        """A copy of the template with its own id and a subject from the pool."""
        doc: dict[str, Any] = orjson.loads(template.raw)
        doc["event_id"] = str(uuid.UUID(int=self.rng.getrandbits(128), version=4))
        doc["subject"] = self.subject_for(template.event)
        return doc

    def finish(
        self,
        name: str,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        *,
        partition: int | None = None,
        headers: Headers = (),
        sign: bool = True,
        codec: str | None = None,
    ) -> Hostile:
        """Placed as the Emitter would (murmur2 of the key) unless `partition` says otherwise;
        signed with the workers' key on `triggers`, so most hostile triggers get past the
        signature check and reach the decoder."""
        partitions = self.partitions[topic]
        if partition is None:
            partition = _partition(key, partitions) if key else self.rng.randrange(partitions)
        if sign and topic == "triggers" and value is not None:
            headers = (*headers, (SIGNATURE_HEADER, signature(value, self.key)))
        return Hostile(name, topic, key, value, partition, headers, codec)

    def encoded(self, name: str, topic: str, doc: Any, **kw: Any) -> Hostile:
        """A document sent as a producer keying by its subject would."""
        return self.finish(name, topic, key_of(doc), orjson.dumps(doc), **kw)


# Keys repeat (a pool of subjects), and murmur2 in Python costs ~1 µs per 10 bytes of key.
_partition = lru_cache(maxsize=16_384)(partition_for)


def key_of(doc: Any) -> bytes | None:
    subject = doc.get("subject") if isinstance(doc, dict) else None
    return subject.encode() if isinstance(subject, str) else None


def crc32_partition(key: bytes, partitions: int) -> int:
    """librdkafka's default (`consistent_random`) for a keyed message."""
    return zlib.crc32(key) % partitions


def has_parent(doc: dict[str, Any], path: Sequence[str]) -> bool:
    """Whether the object `path` ends in is there: an optional object left out of a message
    cannot be made up around one field (its required fields would be missing)."""
    for name in path[:-1]:
        inner = doc.get(name)
        if not isinstance(inner, dict):
            return False
        doc = inner
    return True


def set_path(doc: dict[str, Any], path: Sequence[str], value: Any) -> None:
    for name in path[:-1]:
        inner = doc.get(name)
        if not isinstance(inner, dict):
            inner = doc[name] = {}
        doc = inner
    doc[path[-1]] = value


def drop_path(doc: dict[str, Any], path: Sequence[str]) -> None:
    for name in path[:-1]:
        inner = doc.get(name)
        if not isinstance(inner, dict):
            return
        doc = inner
    doc.pop(path[-1], None)
