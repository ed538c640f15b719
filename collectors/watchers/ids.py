"""Deterministic event ids for watchers: the same observation gets the same id after a restart,
so even a resend (crash between sending and saving) is recognised downstream."""

from __future__ import annotations

import uuid

_NAMESPACE = uuid.UUID("5c0a3f3e-27d4-4bb1-9f5e-0d6a2c8e4b71")


def observation_id(*parts: object) -> uuid.UUID:
    return uuid.uuid5(_NAMESPACE, "\x1f".join(map(str, parts)))
