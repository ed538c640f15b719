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
