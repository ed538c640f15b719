"""A second local stack, secured: the real Kafka broker with SSL, SASL_PLAINTEXT and SASL_SSL
listeners (SCRAM-SHA-256/512 and PLAIN users), and the ClickHouse server over HTTPS with a
password. Certificates come from `tests.support.tls` (openssl, keytool). Session-scoped and
started only by the tests that ask for it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from centrality.stack.settings import StackSettings
from centrality.stack.stack import Stack
from schemas.runtime.settings import KafkaSettings, SaslMechanism, SecurityProtocol
from streams.history.settings import ClickHouseSettings
from tests.ports import free_ports
from tests.support.tls import Certificates, make_certificates

USER = "centrality"


@dataclass(frozen=True)
class Secured:
    stack: Stack
    certs: Certificates
    ports: dict[SecurityProtocol, int]
    kafka_password: str  # distinctive, so a test can grep output for it
    clickhouse_password: str

    def kafka(
        self,
        protocol: SecurityProtocol = "SASL_SSL",
        mechanism: SaslMechanism = "SCRAM-SHA-512",
        *,
        password: str | None = None,
        mutual_tls: bool = True,
    ) -> KafkaSettings:
        """Client settings for one of the broker's listeners, as a deployment would set them."""
        fields: dict[str, object] = {
            "bootstrap": f"127.0.0.1:{self.ports[protocol]}",
            "security_protocol": protocol,
        }
        if protocol.startswith("SASL_"):
            fields |= {
                "sasl_mechanism": mechanism,
                "sasl_username": USER,
                "sasl_password": SecretStr(password or self.kafka_password),
            }
        if protocol.endswith("SSL"):
            fields["ssl_cafile"] = self.certs.ca
        if protocol == "SSL" and mutual_tls:
            fields |= {"ssl_certfile": self.certs.client_cert, "ssl_keyfile": self.certs.client_key}
        return KafkaSettings.model_validate(fields)

    @property
    def clickhouse(self) -> ClickHouseSettings:
        return self.stack.clickhouse

    def env(self, kafka: KafkaSettings) -> dict[str, str]:
        """Environment of a worker or CLI process using `kafka` and the HTTPS ClickHouse."""
        env = {
            "CENTRALITY_KAFKA_BOOTSTRAP": kafka.bootstrap,
            "CENTRALITY_KAFKA_SECURITY_PROTOCOL": kafka.security_protocol,
            "CENTRALITY_CLICKHOUSE_URL": self.clickhouse.url,
            "CENTRALITY_CLICKHOUSE_PASSWORD": self.clickhouse_password,
            "CENTRALITY_CLICKHOUSE_CA_CERT": str(self.certs.ca),
        }
        if kafka.sasl:
            assert kafka.sasl_password is not None and kafka.sasl_username is not None
            env |= {
                "CENTRALITY_KAFKA_SASL_MECHANISM": kafka.sasl_mechanism,
                "CENTRALITY_KAFKA_SASL_USERNAME": kafka.sasl_username,
                "CENTRALITY_KAFKA_SASL_PASSWORD": kafka.sasl_password.get_secret_value(),
            }
        files = {
            "CENTRALITY_KAFKA_SSL_CAFILE": kafka.ssl_cafile,
            "CENTRALITY_KAFKA_SSL_CERTFILE": kafka.ssl_certfile,
            "CENTRALITY_KAFKA_SSL_KEYFILE": kafka.ssl_keyfile,
        }
        return env | {name: str(path) for name, path in files.items() if path is not None}


@pytest.fixture(scope="session")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    certs = make_certificates(tmp_path_factory.mktemp("tls"))
    kafka_port, controller, sasl_ssl, tls, sasl_plaintext, clickhouse = free_ports(6)
    ports: dict[SecurityProtocol, int] = {
        "PLAINTEXT": kafka_port,
        "SASL_SSL": sasl_ssl,
        "SSL": tls,
        "SASL_PLAINTEXT": sasl_plaintext,
    }
    kafka_password = f"kafka-pw-{uuid.uuid4().hex}"
    clickhouse_password = f"clickhouse-pw-{uuid.uuid4().hex}"
    settings = StackSettings(
        state_dir=tmp_path_factory.mktemp("secured-stack"),
        kafka_port=kafka_port,
        kafka_controller_port=controller,
        clickhouse_port=clickhouse,
        kafka_secure_listeners={"SASL_SSL": sasl_ssl, "SSL": tls, "SASL_PLAINTEXT": sasl_plaintext},
        kafka_tls_keystore=certs.keystore,
        kafka_tls_truststore=certs.truststore,
        kafka_tls_store_password=SecretStr(certs.store_password),
        kafka_sasl_users={USER: SecretStr(kafka_password)},
        clickhouse_password=SecretStr(clickhouse_password),
        clickhouse_tls_certfile=certs.server_cert,
        clickhouse_tls_keyfile=certs.server_key,
    )
    stack = Stack(settings, clickhouse=ClickHouseSettings(ca_cert=certs.ca))
    try:
        stack.up()
        yield Secured(stack, certs, ports, kafka_password, clickhouse_password)
    finally:
        stack.down()
