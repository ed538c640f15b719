"""Operators for tests: fixed Ed25519 keys, whom the test workers trust, and their silences."""

from __future__ import annotations

import json
import uuid
from datetime import datetime, timedelta
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from schemas.codec import encode
from schemas.envelope import Event, utcnow
from schemas.events import SilenceAdded, SilenceExpired
from schemas.operators import Operator, OperatorKey


def _key(name: str, seed: int) -> OperatorKey:
    return OperatorKey(name, Ed25519PrivateKey.from_private_bytes(bytes([seed]) * 32))


ALICE = _key("alice", 1)  # trusted on cluster `test`
BOB = _key("bob", 2)  # trusted on cluster `other` only
MALLORY = _key("mallory", 3)  # trusted nowhere
TRUSTED = {
    "alice": Operator(public_key=ALICE.public_key, clusters=("test",)),
    "bob": Operator(public_key=BOB.public_key, clusters=("other",)),
}


def trusted_json() -> str:
    """`CENTRALITY_OPERATORS` for workers and commands that trust `TRUSTED`."""
    return json.dumps({name: o.model_dump(mode="json") for name, o in TRUSTED.items()})


def signed(event: Event, key: OperatorKey = ALICE) -> tuple[bytes, list[tuple[str, bytes]]]:
    value = encode(event)
    return value, key.headers(value)


def silence(
    cluster: str = "test",
    *,
    operator: str = "alice",
    starts_at: datetime | None = None,
    duration_s: float = 3600.0,
    silence_id: str | None = None,
    **scope: Any,
) -> SilenceAdded:
    silence_id = silence_id or f"s-{uuid.uuid4().hex[:8]}"
    return SilenceAdded(
        source=f"operator/{operator}",
        cluster=cluster,
        subject=silence_id,
        occurred_at=utcnow(),
        payload={
            "silence_id": silence_id,
            "starts_at": starts_at or utcnow() - timedelta(seconds=1),
            "duration_s": duration_s,
            "reason": "driver upgrade",
            "operator": operator,
            **scope,
        },
    )


def expired(
    added: SilenceAdded, operator: str = "alice", reason: str | None = None
) -> SilenceExpired:
    return SilenceExpired(
        source=f"operator/{operator}",
        cluster=added.cluster,
        subject=added.subject,
        occurred_at=utcnow(),
        payload={"silence_id": added.payload.silence_id, "operator": operator, "reason": reason},
    )
