"""Settings of the local stack: where it keeps its state and which loopback ports it serves (those
its clients read too are `schemas.runtime.local_stack`'s; this adds what only the servers need)."""

import re
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, model_validator

from schemas.runtime.local_stack import KAFKA_CONTROLLER_PORT, LocalStackSettings

SecureListener = Literal["SSL", "SASL_PLAINTEXT", "SASL_SSL"]

_SAFE_CREDENTIAL = re.compile(r"[A-Za-z0-9._~+/-]+")


def _home(*parts: str) -> Path:
    return Path.home().joinpath(*parts)


class StackSettings(LocalStackSettings):
    """`CENTRALITY_STACK_*`: the embedded Kafka broker and ClickHouse server `up` runs. The
    first five (`schemas.runtime.local_stack`) are read by every client and worker too: with
    `CENTRALITY_STACK_PORT_OFFSET` alone a second stack, its clients and its workers' metrics
    run beside the first."""

    cache_dir: Path = Field(
        default_factory=lambda: _home(".cache", "centrality"),
        description="Kafka jars fetched by Maven; shared by every state dir on the machine.",
    )
    kafka_controller_port: int = Field(
        default_factory=lambda data: KAFKA_CONTROLLER_PORT + data["port_offset"],
        description="KRaft controller listener port (9093 + `port_offset` unless set).",
    )
    kafka_heap_mb: int = Field(default=768, description="JVM heap of the local broker.")
    kafka_secure_listeners: dict[SecureListener, int] = Field(
        default_factory=dict,
        description='Extra client listeners beside PLAINTEXT, by protocol: `{"SASL_SSL": 9094}`.',
    )
    kafka_tls_keystore: Path | None = Field(
        default=None,
        description="PKCS12 keystore with the broker's key and certificate (SSL listeners).",
    )
    kafka_tls_truststore: Path | None = Field(
        default=None,
        description="PKCS12 truststore with the CA of client certificates; if set, the SSL "
        "listener requires one.",
    )
    kafka_tls_store_password: SecretStr | None = Field(
        default=None, description="Password of the keystore, its key and the truststore."
    )
    kafka_sasl_users: dict[str, SecretStr] = Field(
        default_factory=dict,
        description="SASL users of the local broker (PLAIN, SCRAM-SHA-256/512): name -> "
        "password. SCRAM users are stored when the storage is formatted (first start).",
    )
    clickhouse_password: SecretStr | None = Field(
        default=None,
        description="If set, the local ClickHouse server requires it (user `default`).",
    )
    clickhouse_tls_certfile: Path | None = Field(
        default=None, description="If set (with its key), the local ClickHouse serves HTTPS."
    )
    clickhouse_tls_keyfile: Path | None = Field(
        default=None, description="PEM key of `clickhouse_tls_certfile`."
    )
    start_timeout_s: float = Field(default=90.0, description="How long `up` waits for a service.")

    @model_validator(mode="after")
    def _secure_listeners_configured(self) -> Self:
        if (self.clickhouse_tls_certfile is None) != (self.clickhouse_tls_keyfile is None):
            raise ValueError("clickhouse_tls_certfile and clickhouse_tls_keyfile go together")
        listeners = set(self.kafka_secure_listeners)
        tls = listeners & {"SSL", "SASL_SSL"}
        if tls and (self.kafka_tls_keystore is None or self.kafka_tls_store_password is None):
            raise ValueError(f"{sorted(tls)} listener(s) need kafka_tls_keystore and its password")
        if listeners & {"SASL_PLAINTEXT", "SASL_SSL"} and not self.kafka_sasl_users:
            raise ValueError("SASL listeners need kafka_sasl_users")
        for name, password in self.kafka_sasl_users.items():
            # Both land in the broker's JAAS config and `format --add-scram` argument verbatim.
            if not _SAFE_CREDENTIAL.fullmatch(name + password.get_secret_value()):
                raise ValueError(f"SASL user {name!r}: names and passwords use [A-Za-z0-9._~+/-]")
        return self
