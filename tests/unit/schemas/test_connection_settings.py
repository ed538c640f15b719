"""Kafka security and topic layout settings, and the client arguments made from them."""

from __future__ import annotations

import re
import ssl
from pathlib import Path

import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth
from pydantic import SecretStr, ValidationError

from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import CATALOG, Layout, TopicSettings, partition_count, spec
from streams.faust.credentials import broker_credentials
from tests.support.tls import Certificates, make_certificates

PASSWORD = "pw-7f3a-unit"


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("tls"))


def sasl_ssl(certs: Certificates, mechanism: str = "SCRAM-SHA-512") -> KafkaSettings:
    return KafkaSettings(
        bootstrap="127.0.0.1:9094",
        security_protocol="SASL_SSL",
        sasl_mechanism=mechanism,  # type: ignore[arg-type]
        sasl_username="alice",
        sasl_password=SecretStr(PASSWORD),
        ssl_cafile=certs.ca,
    )


def test_plaintext_is_the_default_and_carries_no_tls_or_sasl() -> None:
    kwargs = kafka_clients.connection(KafkaSettings())
    assert kwargs == {
        "bootstrap_servers": "127.0.0.1:9092",
        "client_id": "centrality",
        "security_protocol": "PLAINTEXT",
        "ssl_context": None,
    }


async def test_a_request_timeout_set_reaches_every_client_and_a_producer_may_keep_its_own() -> None:
    settings = KafkaSettings(request_timeout_s=2.5)
    assert kafka_clients.connection(settings)["request_timeout_ms"] == 2500
    assert kafka_clients.consumer(settings)._request_timeout_ms == 2500
    emitter_like = kafka_clients.producer(settings, request_timeout_ms=700)
    assert emitter_like._request_timeout_ms == 700


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_ssl_gives_every_client_the_user_and_a_verifying_context(
    certs: Certificates, mechanism: str
) -> None:
    kwargs = kafka_clients.connection(sasl_ssl(certs, mechanism))
    assert kwargs["security_protocol"] == "SASL_SSL"
    assert kwargs["sasl_mechanism"] == mechanism
    assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("alice", PASSWORD)
    context = kwargs["ssl_context"]
    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert [c["subject"] for c in context.get_ca_certs()] == [
        ((("commonName", "centrality test CA"),),)
    ]


def test_ssl_with_a_client_certificate_loads_it(certs: Certificates) -> None:
    settings = KafkaSettings(
        security_protocol="SSL",
        ssl_cafile=certs.ca,
        ssl_certfile=certs.client_cert,
        ssl_keyfile=certs.client_key,
    )
    kwargs = kafka_clients.connection(settings)
    assert "sasl_mechanism" not in kwargs
    assert isinstance(kwargs["ssl_context"], ssl.SSLContext)
    wrong = settings.model_copy(update={"ssl_keyfile": certs.server_key})
    with pytest.raises(ssl.SSLError):  # a key that is not the certificate's is refused early
        kafka_clients.connection(wrong)


def test_half_a_configuration_is_refused_when_read() -> None:
    with pytest.raises(ValidationError, match="needs sasl_username and sasl_password"):
        KafkaSettings(security_protocol="SASL_SSL", sasl_username="alice")
    with pytest.raises(ValidationError, match="go together"):
        KafkaSettings(security_protocol="SSL", ssl_certfile=Path("client.pem"))
    with pytest.raises(ValidationError):
        KafkaSettings(security_protocol="SASL_SSL", sasl_mechanism="GSSAPI")  # type: ignore[arg-type]


def test_settings_come_from_the_documented_environment(
    monkeypatch: pytest.MonkeyPatch, certs: Certificates
) -> None:
    env = {
        "CENTRALITY_KAFKA_SECURITY_PROTOCOL": "SASL_PLAINTEXT",
        "CENTRALITY_KAFKA_SASL_MECHANISM": "SCRAM-SHA-256",
        "CENTRALITY_KAFKA_SASL_USERNAME": "bob",
        "CENTRALITY_KAFKA_SASL_PASSWORD": PASSWORD,
        "CENTRALITY_KAFKA_SSL_CAFILE": str(certs.ca),
        "CENTRALITY_KAFKA_SSL_CERTFILE": str(certs.client_cert),
        "CENTRALITY_KAFKA_SSL_KEYFILE": str(certs.client_key),
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = KafkaSettings()
    assert settings.sasl and not settings.tls
    assert settings.sasl_password == SecretStr(PASSWORD)
    assert (settings.ssl_cafile, settings.ssl_keyfile) == (certs.ca, certs.client_key)
    # SASL_PLAINTEXT: the TLS files are ignored, not half-used.
    assert kafka_clients.connection(settings)["ssl_context"] is None
    assert PASSWORD not in repr(settings) and PASSWORD not in str(settings.model_dump())


def test_librdkafka_gets_the_same_connection(certs: Certificates) -> None:
    config = kafka_clients.librdkafka_config(sasl_ssl(certs))
    assert config == {
        "bootstrap.servers": "127.0.0.1:9094",
        "client.id": "centrality",
        "security.protocol": "sasl_ssl",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": PASSWORD,
        "ssl.ca.location": str(certs.ca),
    }


def test_faust_clients_get_the_same_credentials(certs: Certificates) -> None:
    assert broker_credentials(KafkaSettings()) is None
    auth = credentials_to_aiokafka_auth(broker_credentials(sasl_ssl(certs, "SCRAM-SHA-256")))
    assert auth["security_protocol"] == "SASL_SSL"
    assert auth["sasl_mechanism"] == "SCRAM-SHA-256"
    assert (auth["sasl_plain_username"], auth["sasl_plain_password"]) == ("alice", PASSWORD)
    assert isinstance(auth["ssl_context"], ssl.SSLContext)
    sasl_plaintext = sasl_ssl(certs).model_copy(update={"security_protocol": "SASL_PLAINTEXT"})
    plain_auth = credentials_to_aiokafka_auth(broker_credentials(sasl_plaintext))
    assert plain_auth["security_protocol"] == "SASL_PLAINTEXT"
    assert plain_auth["ssl_context"] is None
    tls = KafkaSettings(security_protocol="SSL", ssl_cafile=certs.ca)
    tls_auth = credentials_to_aiokafka_auth(broker_credentials(tls))
    assert tls_auth["security_protocol"] == "SSL"
    assert isinstance(tls_auth["ssl_context"], ssl.SSLContext)


async def test_producers_wait_for_every_in_sync_replica_and_are_not_idempotent() -> None:
    producer = kafka_clients.producer(KafkaSettings(), client_id="centrality-x")  # not started
    assert producer.client._client_id == "centrality-x"
    # aiokafka's idempotence fails sends for seconds after a leader moves (kafka_clients.producer)
    assert producer._txn_manager is None
    assert producer._sender._acks == -1  # all in-sync replicas


def test_topic_layout_is_per_family() -> None:
    topics = TopicSettings(
        tables_partitions=12,
        triggers_partitions=6,
        triggers_replication_factor=3,
        triggers_min_insync_replicas=2,
    )
    assert topics.of("tables") == Layout(12, 1, 1)
    assert topics.of("triggers") == Layout(6, 3, 2)
    assert topics.of("deadletter") == Layout(1, 1, 1)
    assert partition_count("gpu", topics) == 12 and partition_count("action-ledger", topics) == 6
    assert spec("action-ledger").configs(topics.of("triggers"))["min.insync.replicas"] == "2"
    assert {s.family for s in CATALOG} == {"tables", "logs", "triggers", "deadletter"}


def test_min_insync_replicas_above_the_replication_factor_is_refused() -> None:
    with pytest.raises(ValidationError, match="min_insync_replicas 2 > replication_factor 1"):
        TopicSettings(logs_min_insync_replicas=2)


def test_no_kafka_client_is_built_outside_kafka_clients() -> None:
    """A client built elsewhere would miss the security settings and speak PLAINTEXT."""
    root = Path(__file__).resolve().parents[3]
    built = re.compile(r"\b(AIOKafkaProducer|AIOKafkaConsumer|AIOKafkaAdminClient)\(")
    offenders = [
        str(path.relative_to(root))
        for package in ("schemas", "streams", "actions", "collectors", "centrality")
        for path in (root / package).rglob("*.py")
        if built.search(path.read_text())
        and path != root / "schemas" / "runtime" / "kafka_clients.py"
    ]
    assert offenders == []
