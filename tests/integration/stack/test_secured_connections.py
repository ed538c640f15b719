"""Every Kafka security protocol and SASL mechanism against the real broker, and ClickHouse over
HTTPS with a password, through the clients the workers use (`schemas.runtime.kafka_clients`, the
Emitter, the catalog admin, `streams.history.client`) and librdkafka."""

from __future__ import annotations

import asyncio
import logging
import time

import clickhouse_connect.driver.exceptions as ch_errors
import confluent_kafka
import pytest
from aiokafka.errors import KafkaError

from schemas.runtime import kafka_clients
from schemas.runtime.admin import ensure_topics
from schemas.runtime.emitter import Emitter
from schemas.runtime.kafka_probe import kafka_answers
from schemas.runtime.settings import KafkaSettings, SaslMechanism, SecurityProtocol
from schemas.topics import CATALOG, topic_name
from streams.history.client import connect
from tests.factories import exited
from tests.support.secured import Secured

pytestmark = pytest.mark.integration

ROUTES: list[tuple[SecurityProtocol, SaslMechanism]] = [
    ("SASL_SSL", "SCRAM-SHA-512"),
    ("SASL_SSL", "SCRAM-SHA-256"),
    ("SASL_SSL", "PLAIN"),
    ("SASL_PLAINTEXT", "SCRAM-SHA-256"),
    ("SASL_PLAINTEXT", "PLAIN"),
    ("SSL", "PLAIN"),  # mutual TLS: the client certificate is the credential
]


async def _read(settings: KafkaSettings, topic: str, count: int) -> list[bytes]:
    consumer = kafka_clients.consumer(settings, topic, auto_offset_reset="earliest")
    await consumer.start()
    values: list[bytes] = []
    try:
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            for records in (await consumer.getmany(timeout_ms=500)).values():
                values += [r.value for r in records if r.value is not None]
    finally:
        await consumer.stop()
    return values


@pytest.mark.parametrize(("protocol", "mechanism"), ROUTES)
async def test_catalog_emitter_consumer_and_librdkafka_all_connect(
    secured: Secured, protocol: SecurityProtocol, mechanism: SaslMechanism, unique: str
) -> None:
    settings = secured.kafka(protocol, mechanism).model_copy(
        update={"topic_prefix": f"sec{unique}."}
    )
    report = await ensure_topics(settings)  # admin
    assert len(report.created) == len(CATALOG) and not report.drift
    event = exited("FAILED", subject=f"slurm/sec/{unique}")
    async with Emitter(settings) as emitter:
        await emitter.emit(event)
    jobs = topic_name("jobs", settings)
    foreign = confluent_kafka.Producer(kafka_clients.librdkafka_config(settings))
    foreign.produce(jobs, b"from librdkafka", key=b"k")
    assert foreign.flush(30) == 0
    values = await _read(settings, jobs, 2)  # consumer
    assert b"from librdkafka" in values
    assert any(str(event.event_id).encode() in v for v in values)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512", "PLAIN"])
async def test_a_wrong_password_is_refused(
    secured: Secured, mechanism: SaslMechanism, caplog: pytest.LogCaptureFixture
) -> None:
    settings = secured.kafka("SASL_SSL", mechanism, password="not-the-password")
    # At a level of its own: a CLI test run in this process before may have quieted aiokafka.
    with caplog.at_level(logging.INFO, logger="aiokafka"), pytest.raises(KafkaError):
        await asyncio.wait_for(ensure_topics(settings), 60)
    # aiokafka gives up with "Unable to bootstrap"; why is in its log.
    assert any("Authentication failed" in r.getMessage() for r in caplog.records)


async def test_a_broker_certificate_from_another_ca_is_refused(
    secured: Secured, caplog: pytest.LogCaptureFixture
) -> None:
    # No CA file: the system's CAs, which never signed the test broker's certificate.
    settings = secured.kafka("SASL_SSL").model_copy(update={"ssl_cafile": None})
    with caplog.at_level(logging.INFO, logger="aiokafka"), pytest.raises(KafkaError):
        await asyncio.wait_for(ensure_topics(settings), 60)
    assert any("CERTIFICATE_VERIFY_FAILED" in r.getMessage() for r in caplog.records)


async def test_the_ssl_listener_wants_a_client_certificate(secured: Secured) -> None:
    with pytest.raises(KafkaError):
        await asyncio.wait_for(ensure_topics(secured.kafka("SSL", mutual_tls=False)), 60)


@pytest.mark.parametrize("protocol", ["PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL"])
def test_the_outage_probe_hears_every_listener_only_as_configured(
    secured: Secured, protocol: SecurityProtocol
) -> None:
    """ApiVersions needs no credentials, but TLS where a listener speaks it, from a CA we trust."""
    settings = secured.kafka(protocol)
    assert kafka_answers(settings)()
    plain = settings.model_copy(update={"security_protocol": "PLAINTEXT"})
    assert kafka_answers(plain)() is not settings.tls  # a TLS listener does not answer plaintext
    if settings.tls:
        assert not kafka_answers(settings.model_copy(update={"ssl_cafile": None}))()


@pytest.mark.filterwarnings("ignore::urllib3.exceptions.InsecureRequestWarning")
def test_clickhouse_over_https_with_a_password(secured: Secured) -> None:
    settings = secured.clickhouse
    assert settings.secure and settings.password is not None
    with connect(settings) as client:
        assert client.command("SELECT 1") == 1
    with pytest.raises(ch_errors.DatabaseError, match="Authentication failed"):
        connect(settings.model_copy(update={"password": None}))
    with pytest.raises(ch_errors.OperationalError):  # the system's CAs do not know ours
        connect(settings.model_copy(update={"ca_cert": None}))
    unverified = settings.model_copy(update={"ca_cert": None, "verify": False})
    with connect(unverified) as client:
        assert client.command("SELECT 2") == 2
