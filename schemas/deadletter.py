"""Dead letters: what a consumer could not decode, kept with its reason and raw bytes.

The record on the dead-letter topic; counting and logging them is `schemas.runtime.deadletter`."""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from schemas.envelope import utcnow


class DeadLetter(BaseModel):
    """The record on the dead-letter topic. `raw` travels base64-encoded in JSON."""

    model_config = ConfigDict(
        frozen=True, extra="forbid", ser_json_bytes="base64", val_json_bytes="base64"
    )

    kind: Literal["DeadLetter"] = "DeadLetter"
    reason: str
    detail: str = ""
    consumer: str = Field(description="Which consumer gave up on it.")
    topic: str
    partition: int
    offset: int
    key: bytes | None = None
    raw: bytes
    dead_lettered_at: AwareDatetime = Field(default_factory=utcnow)

    def to_bytes(self) -> bytes:
        return self.__pydantic_serializer__.to_json(self)

    @classmethod
    def from_bytes(cls, data: bytes) -> DeadLetter:
        return cls.model_validate_json(data)
