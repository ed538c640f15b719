"""A producer nobody here wrote: librdkafka through confluent-kafka, with a Kafka codec."""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import Producer

from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name

CODECS = ("gzip", "snappy", "lz4", "zstd")
Message = tuple[bytes, bytes, Sequence[tuple[str, bytes]]]  # key, value, headers
# catalog topic, key, value (and headers)
Addressed = tuple[str, bytes, bytes] | tuple[str, bytes, bytes, Sequence[tuple[str, bytes]]]


def produce(kafka: KafkaSettings, topic: str, codec: str, messages: Sequence[Message]) -> None:
    """Send `messages` to the catalog topic, batched and compressed with `codec`, keyed by
    murmur2 as the contract asks (the Emitter's and Java's partitioner)."""
    producer = Producer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "compression.type": codec,
            "linger.ms": 200,  # so the messages of one key share a compressed batch
            "partitioner": "murmur2_random",
            "enable.idempotence": True,
        }
    )
    for key, value, headers in messages:
        producer.produce(topic_name(topic, kafka), value=value, key=key, headers=list(headers))
    left = producer.flush(30)
    assert left == 0, f"{left} messages not delivered"


def transactional(kafka: KafkaSettings, transactional_id: str) -> Producer:
    """A librdkafka transactional producer, as Flink's and Kafka Streams' exactly-once writers
    produce, its transactions initialised."""
    producer = Producer(
        {
            "bootstrap.servers": kafka.bootstrap,
            "transactional.id": transactional_id,
            "partitioner": "murmur2_random",
        }
    )
    producer.init_transactions(30)
    return producer


def put(producer: Producer, kafka: KafkaSettings, messages: Sequence[Addressed]) -> None:
    """In the open transaction, on the broker when this returns (not yet committed)."""
    for topic, key, value, *headers in messages:
        extra = {"headers": list(headers[0])} if headers else {}
        producer.produce(topic_name(topic, kafka), value=value, key=key, **extra)
    assert producer.flush(30) == 0, "records not delivered"


def produce_transactions(
    kafka: KafkaSettings,
    transactional_id: str,
    transactions: Sequence[tuple[bool, Sequence[Addressed]]],
) -> None:
    """Each (commit?, messages) as one transaction, committed or aborted once its records are on
    the broker, so an aborted one's records are there too."""
    producer = transactional(kafka, transactional_id)
    for commit, messages in transactions:
        producer.begin_transaction()
        put(producer, kafka, messages)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
