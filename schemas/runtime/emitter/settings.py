"""Settings of the Emitter (`CENTRALITY_EMITTER_*`)."""

from pathlib import Path

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.runtime.local_stack import LocalStackSettings


class EmitterSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CENTRALITY_EMITTER_", extra="ignore")

    spool_dir: Path = Field(
        default_factory=lambda: LocalStackSettings().state_dir / "spool",
        description="Where undeliverable messages wait for Kafka; one dir per producing process "
        "(in the local stack's state dir unless set: a second stack spools apart).",
    )
    spool_max_bytes: int = Field(
        default=256 * 1024 * 1024, gt=0, description="Beyond this the Emitter refuses events."
    )
    batch_linger_ms: int = Field(
        default=200, ge=0, description="How long events of batched families wait for company."
    )
    batch_max_events: int = Field(default=500, ge=1, description="Events per batched message.")
    batch_max_bytes: int = Field(
        default=512 * 1024,
        ge=1024,
        le=1024 * 1024,
        description="Bytes per batched message (at most the 1 MiB message limit).",
    )
    pending_max_bytes: int = Field(
        default=16 * 1024 * 1024,
        ge=1024,
        description="Bytes of batched events held in memory while neither Kafka nor the spool "
        "takes them; beyond it `emit` refuses events (SpoolFullError).",
    )
    delivery_timeout_ms: int = Field(
        default=5000, ge=100, description="Longer than this without an ack: spool it."
    )
    retry_backoff_max_s: float = Field(
        default=10.0, gt=0, description="Longest pause between redelivery attempts from the spool."
    )
