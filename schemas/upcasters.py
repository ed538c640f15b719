"""Upcasters turn an old payload into the current schema on decode, so rules never branch on it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from schemas.envelope import Event

Doc = dict[str, Any]
Upcaster = Callable[[Doc], Doc]

_UPCASTERS: dict[tuple[str, int], Upcaster] = {}


def upcaster(type_name: str, from_version: int) -> Callable[[Upcaster], Upcaster]:
    """Register `fn` to lift documents of `type_name` from `from_version` to the next version."""

    def register(fn: Upcaster) -> Upcaster:
        key = (type_name, from_version)
        if key in _UPCASTERS:
            raise ValueError(f"two upcasters for {type_name} v{from_version}")
        _UPCASTERS[key] = fn
        return fn

    return register


def upcast(cls: type[Event], doc: Doc) -> Doc:
    version = doc.get("schema_version", 1)
    if not isinstance(version, int):
        raise ValueError("schema_version must be an integer")
    if version > cls.current_version:
        raise ValueError(
            f"schema_version {version} is newer than this reader's {cls.current_version}"
        )
    type_name = doc["type"]
    while version < cls.current_version:
        try:
            doc = _UPCASTERS[(type_name, version)](doc)
        except KeyError:
            raise ValueError(f"no upcaster for {type_name} v{version}") from None
        version += 1
        doc = {**doc, "schema_version": version}
    return doc


@upcaster("NodeStatusChanged", 1)
def node_states_one_vocabulary(doc: Doc) -> Doc:
    """v1 named who took a node out in its state (`held`: an operator, `drained`: someone in
    the scheduler) beside `decided_by`/`held_by`; v2 says `quarantined`, and who in `by`. A v1
    `held` by a silence (a rule's drain it holds, no operator) stays `held`."""
    if not isinstance(doc.get("payload"), dict):
        return doc  # not a payload at all: validation says so, as for any other document
    payload = dict(doc["payload"])
    operator = payload.pop("held_by", None)
    by = payload.pop("decided_by", None) or (f"operator/{operator}" if operator else None)
    state = payload.get("state")
    if state == "drained" or (state == "held" and str(by or "").startswith("operator/")):
        payload["state"] = "quarantined"
    if by is not None:
        payload["by"] = by
    return {**doc, "payload": payload}
