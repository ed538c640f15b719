"""Kafka connection settings shared by every producer and consumer of the contract.

One class for every client (Emitter, Faust worker, action worker, sink, replay, admin): how it
reaches the broker and how it proves who it is. `schemas.runtime.kafka_clients` turns it into client
arguments; nothing else builds a Kafka client.
"""

from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.runtime.local_stack import LocalStackSettings

SecurityProtocol = Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
SaslMechanism = Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


class KafkaSettings(BaseSettings):
    """`CENTRALITY_KAFKA_*`: which broker to use, how to authenticate, how topics are spelled."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_KAFKA_", extra="ignore")

    bootstrap: str = Field(
        default_factory=lambda: LocalStackSettings().kafka_bootstrap,
        description="Bootstrap servers; unset, the local stack's (`CENTRALITY_STACK_HOST`, "
        "`_KAFKA_PORT`, `_PORT_OFFSET`). Set to another address, it names an existing Kafka: "
        "`up` then starts none.",
    )
    topic_prefix: str = Field(
        default="centrality.",
        description="Prepended to every catalog topic name; tests use a unique one per test.",
    )
    client_id: str = Field(default="centrality", description="Kafka client id of our clients.")
    request_timeout_s: float | None = Field(
        default=None,
        gt=0,
        description="How long a request may go unanswered before a client gives it up (and "
        "tries again): every consumer, admin client and the ledger's producer, and the streams "
        "worker's consumer. Unset: the client's own (aiokafka 40 s, Faust 90 s). The Emitter's "
        "sends have `CENTRALITY_EMITTER_DELIVERY_TIMEOUT_MS`, the streams worker's "
        "`CENTRALITY_STREAMS_SEND_RETRY_S`.",
    )
    security_protocol: SecurityProtocol = Field(
        default="PLAINTEXT",
        description="PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
    )
    sasl_mechanism: SaslMechanism = Field(
        default="SCRAM-SHA-512",
        description="PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL_* protocols only).",
    )
    sasl_username: str | None = Field(default=None, description="SASL user (SASL_* protocols).")
    sasl_password: SecretStr | None = Field(
        default=None, description="SASL password (SASL_* protocols)."
    )
    ssl_cafile: Path | None = Field(
        default=None,
        description="PEM CA bundle the broker certificates are checked against; "
        "the system's CAs if unset (SSL, SASL_SSL).",
    )
    ssl_certfile: Path | None = Field(
        default=None, description="PEM client certificate, for brokers that require one (mTLS)."
    )
    ssl_keyfile: Path | None = Field(default=None, description="PEM private key of `ssl_certfile`.")
    ssl_key_password: SecretStr | None = Field(
        default=None, description="Password of `ssl_keyfile`, if it is encrypted."
    )

    @field_validator("bootstrap")
    @classmethod
    def _addresses(cls, value: str) -> str:
        """`host:port[,host:port…]`, each port a number: said here, not as a crash later."""
        for address in value.split(","):
            host, _, port = address.strip().rpartition(":")
            if not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{address.strip()!r} is not host:port with a port number")
        return value

    @model_validator(mode="after")
    def _complete(self) -> Self:
        """Refuse half a configuration here, not as an opaque handshake failure later."""
        if self.sasl and (not self.sasl_username or self.sasl_password is None):
            raise ValueError(
                f"security_protocol {self.security_protocol} needs sasl_username and sasl_password"
            )
        if (self.ssl_certfile is None) != (self.ssl_keyfile is None):
            raise ValueError("ssl_certfile and ssl_keyfile go together")
        return self

    @property
    def external(self) -> bool:
        """True when the user pointed us at a broker of their own."""
        return "bootstrap" in self.model_fields_set

    @property
    def sasl(self) -> bool:
        return self.security_protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.security_protocol.endswith("SSL")
