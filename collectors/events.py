"""Building envelopes: every collector stamps source, cluster and subject the same way."""

from __future__ import annotations

import socket
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, TypeVar

from schemas.envelope import Event, utcnow

E = TypeVar("E", bound=Event)


def hostname() -> str:
    return socket.gethostname().split(".")[0]


@dataclass(frozen=True)
class Stamp:
    """Who observes (`source`) in which cluster; `make` wraps a payload in an envelope."""

    source: str
    cluster: str

    def make(
        self,
        cls: type[E],
        subject: str,
        payload: Any,
        occurred_at: datetime | None = None,
        event_id: uuid.UUID | None = None,
    ) -> E:
        now = utcnow()
        extra = {"event_id": event_id} if event_id is not None else {}
        return cls.model_validate(
            {
                **extra,
                "source": self.source,
                "cluster": self.cluster,
                "subject": subject,
                "occurred_at": occurred_at or now,
                "observed_at": now,
                "payload": payload,
            }
        )
