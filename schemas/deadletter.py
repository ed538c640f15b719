"""Dead letters: what a consumer could not decode, kept with its reason and raw bytes."""

from __future__ import annotations

from collections import Counter
from typing import Literal

from opentelemetry import metrics
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


_meter = metrics.get_meter("centrality.schemas")
_dead_letters = _meter.create_counter(
    "centrality.dead_letters", unit="{message}", description="Messages sent to the dead letters."
)
# In-process totals by (consumer, reason): what `centrality` status views and tests read.
DEAD_LETTER_COUNTS: Counter[tuple[str, str]] = Counter()


def count_dead_letter(letter: DeadLetter) -> None:
    _dead_letters.add(1, {"consumer": letter.consumer, "reason": letter.reason})
    DEAD_LETTER_COUNTS[(letter.consumer, letter.reason)] += 1
