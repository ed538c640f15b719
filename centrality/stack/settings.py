"""Settings of the local stack: where it keeps its state and which loopback ports it serves."""

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict


def _home(*parts: str) -> Path:
    return Path.home().joinpath(*parts)


class StackSettings(BaseSettings):
    """`CENTRALITY_STACK_*`: the embedded Kafka broker and ClickHouse server `up` runs."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_STACK_", extra="ignore")

    state_dir: Path = Field(
        default_factory=lambda: _home(".local", "share", "centrality"),
        description="Data of the local broker and ClickHouse, pid files, logs; kept.",
    )
    cache_dir: Path = Field(
        default_factory=lambda: _home(".cache", "centrality"),
        description="Kafka jars fetched by Maven; shared by every state dir on the machine.",
    )
    host: str = Field(default="127.0.0.1", description="Address both services bind to.")
    kafka_port: int = Field(default=9092, description="Kafka client listener port.")
    kafka_controller_port: int = Field(default=9093, description="KRaft controller listener port.")
    kafka_heap_mb: int = Field(default=768, description="JVM heap of the local broker.")
    clickhouse_port: int = Field(
        default=8123, description="HTTP port of the local ClickHouse server."
    )
    clickhouse_password: SecretStr | None = Field(
        default=None,
        description="If set, the local ClickHouse server requires it (user `default`).",
    )
    start_timeout_s: float = Field(default=90.0, description="How long `up` waits for a service.")
