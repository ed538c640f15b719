"""The one place Kafka clients are built: every producer, consumer and admin client of ours gets
its broker address, client id and security (TLS, SASL) from `KafkaSettings` here, so a secured
cluster is configured once and no client is left speaking PLAINTEXT to it.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.helpers import create_ssl_context

from schemas.runtime.settings import KafkaSettings


def ssl_context(settings: KafkaSettings) -> ssl.SSLContext | None:
    """The TLS context of SSL/SASL_SSL connections (hostnames always checked), else None."""
    if not settings.tls:
        return None
    password = settings.ssl_key_password
    context: ssl.SSLContext = create_ssl_context(
        cafile=settings.ssl_cafile,
        certfile=settings.ssl_certfile,
        keyfile=settings.ssl_keyfile,
        password=password.get_secret_value() if password else None,
    )
    return context


def connection(settings: KafkaSettings) -> dict[str, Any]:
    """aiokafka arguments every client shares: where the broker is, how to authenticate, and
    how long a request may take."""
    kwargs: dict[str, Any] = {
        "bootstrap_servers": settings.bootstrap,
        "client_id": settings.client_id,
        "security_protocol": settings.security_protocol,
        "ssl_context": ssl_context(settings),
    }
    if settings.request_timeout_s is not None:
        kwargs["request_timeout_ms"] = int(settings.request_timeout_s * 1000)
    if settings.sasl:
        assert settings.sasl_password is not None  # KafkaSettings validates it
        kwargs |= {
            "sasl_mechanism": settings.sasl_mechanism,
            "sasl_plain_username": settings.sasl_username,
            "sasl_plain_password": settings.sasl_password.get_secret_value(),
        }
    return kwargs


def producer(settings: KafkaSettings, **options: Any) -> AIOKafkaProducer:
    """A producer that loses nothing the broker acknowledged: every in-sync replica has the
    record (`acks=all`, so `min.insync.replicas` holds). Callers may still pass their own tuning
    (linger, sizes, timeouts).

    Not idempotent, on purpose: aiokafka's idempotent producer turns a partition leader's move
    into seconds of non-retriable `OutOfOrderSequenceNumber` failures. Retries still never
    reorder (aiokafka keeps one batch in flight per partition), and the duplicate a retry may
    make is absorbed where it lands: every consumer deduplicates by event or trigger id."""
    return AIOKafkaProducer(**(connection(settings) | {"acks": "all"} | options))


def consumer(settings: KafkaSettings, *topics: str, **options: Any) -> AIOKafkaConsumer:
    """A consumer that reads committed records only: what a transactional producer aborted
    (Flink or Kafka Streams exactly-once, a librdkafka `transactional.id`) never happened, and
    its end offsets are the last stable offsets. The streams worker reads so too
    (`streams.faust.transport`, fix 12)."""
    committed = {"isolation_level": "read_committed"}
    return AIOKafkaConsumer(*topics, **(connection(settings) | committed | options))


async def stop(consumer: AIOKafkaConsumer) -> None:
    """`consumer.stop()`, without the CancelledError of aiokafka's own fetches: its fetcher
    cancels a fetch still pending (one backing off while the broker is away) and then awaits it,
    which raised into the caller and ended a worker stopped during an outage with a traceback.
    A cancellation of the caller itself still propagates."""
    try:
        await consumer.stop()
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise


def admin(settings: KafkaSettings, **options: Any) -> AIOKafkaAdminClient:
    return AIOKafkaAdminClient(**(connection(settings) | options))


def librdkafka_config(settings: KafkaSettings) -> dict[str, str]:
    """The same connection for librdkafka clients (confluent-kafka, and producers in other
    languages built on it), in its own property names."""
    config = {
        "bootstrap.servers": settings.bootstrap,
        "client.id": settings.client_id,
        "security.protocol": settings.security_protocol.lower(),
    }
    if settings.sasl:
        assert settings.sasl_password is not None  # KafkaSettings validates it
        config |= {
            "sasl.mechanism": settings.sasl_mechanism,
            "sasl.username": settings.sasl_username or "",
            "sasl.password": settings.sasl_password.get_secret_value(),
        }
    files = {
        "ssl.ca.location": settings.ssl_cafile,
        "ssl.certificate.location": settings.ssl_certfile,
        "ssl.key.location": settings.ssl_keyfile,
    }
    config |= {key: str(path) for key, path in files.items() if path is not None}
    if settings.ssl_key_password is not None:
        config["ssl.key.password"] = settings.ssl_key_password.get_secret_value()
    return config
