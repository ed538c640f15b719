"""Kafka connection settings shared by every producer and consumer of the contract.

One class for every client (Emitter, Faust worker, action worker, sink, replay, admin): how it
reaches the broker and how it proves who it is. `schemas.kafka_clients` turns it into client
arguments; nothing else builds a Kafka client.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Self, get_args

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.local_stack import LocalStackSettings

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


TopicFamily = Literal["tables", "logs", "triggers", "deadletter"]


@dataclass(frozen=True)
class Layout:
    """How the topics of one family are spread and replicated on the cluster."""

    partitions: int
    replication_factor: int
    min_insync_replicas: int


class TopicSettings(BaseSettings):
    """`CENTRALITY_TOPICS_*`: partitions, replication factor and `min.insync.replicas` per topic
    family. `tables`: the topics the streams tables are keyed by (jobs, nodes, gpu, actions, and
    the streams worker's own topics and changelogs); their partition count is the most streams
    workers that share the load, and all of them must have it (checked when the worker starts).
    `logs`: raw log lines. `triggers`: triggers and the action ledger (the most action workers
    that share the load). `deadletter`: dead letters. On a cluster of 3+ brokers use replication
    factor 3 and `min.insync.replicas` 2: every producer of ours waits for all in-sync replicas.
    """

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_TOPICS_", extra="ignore")

    tables_partitions: int = Field(default=4, ge=1, description="Partitions of `tables` topics.")
    tables_replication_factor: int = Field(default=1, ge=1, description="Their replicas.")
    tables_min_insync_replicas: int = Field(default=1, ge=1, description="Their min ISR.")
    logs_partitions: int = Field(default=4, ge=1, description="Partitions of the logs topic.")
    logs_replication_factor: int = Field(default=1, ge=1, description="Its replicas.")
    logs_min_insync_replicas: int = Field(default=1, ge=1, description="Its min ISR.")
    triggers_partitions: int = Field(
        default=4, ge=1, description="Partitions of the triggers and action-ledger topics."
    )
    triggers_replication_factor: int = Field(default=1, ge=1, description="Their replicas.")
    triggers_min_insync_replicas: int = Field(default=1, ge=1, description="Their min ISR.")
    deadletter_partitions: int = Field(
        default=1, ge=1, description="Partitions of the dead-letter topic."
    )
    deadletter_replication_factor: int = Field(default=1, ge=1, description="Its replicas.")
    deadletter_min_insync_replicas: int = Field(default=1, ge=1, description="Its min ISR.")

    @model_validator(mode="after")
    def _reachable_isr(self) -> Self:
        for family in get_args(TopicFamily):
            layout = self.of(family)
            if layout.min_insync_replicas > layout.replication_factor:
                raise ValueError(
                    f"{family}: min_insync_replicas {layout.min_insync_replicas} > "
                    f"replication_factor {layout.replication_factor} (no write could succeed)"
                )
        return self

    def of(self, family: TopicFamily) -> Layout:
        return Layout(
            partitions=getattr(self, f"{family}_partitions"),
            replication_factor=getattr(self, f"{family}_replication_factor"),
            min_insync_replicas=getattr(self, f"{family}_min_insync_replicas"),
        )
