"""Kafka connection settings shared by every producer and consumer of the contract."""

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class KafkaSettings(BaseSettings):
    """`CENTRALITY_KAFKA_*`: which broker to use and how topic names are spelled."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_KAFKA_", extra="ignore")

    bootstrap: str = Field(
        default="127.0.0.1:9092",
        description="Bootstrap servers. Setting it means an existing Kafka: `up` then starts none.",
    )
    topic_prefix: str = Field(
        default="centrality.",
        description="Prepended to every catalog topic name; tests use a unique one per test.",
    )
    client_id: str = Field(default="centrality", description="Kafka client id of our clients.")

    @property
    def external(self) -> bool:
        """True when the user pointed us at a broker of their own."""
        return "bootstrap" in self.model_fields_set
