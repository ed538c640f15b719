"""Documents from the JSON Schema files (`schemas/json/`), as a producer in another language that
knows only those files would build them, and the fields a mutation can aim at.

Plain `random`, not hypothesis: the storm builds a small pool of templates once, and constructs
the files do not use yet (or use only as annotations) are ignored rather than refused, so the
bench keeps working while the contract's limits evolve.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from random import Random
from typing import Any

import orjson

from schemas.jsonschema import JSON_DIR

Schema = dict[str, Any]
INT64 = (-(2**63), 2**63 - 1)
SCALARS: tuple[Any, ...] = (None, True, 0, -1, 1.5, "", "x")


@dataclass(frozen=True)
class Field:
    """A leaf the storm may replace: its path from the document root and its schema."""

    path: tuple[str, ...]
    kind: str  # string, date-time, uuid, integer, number, boolean, array, object, enum, const
    schema: Schema
    nullable: bool


@dataclass(frozen=True)
class EventSchema:
    name: str
    topic: str
    schema: Schema
    defs: Schema
    fields: tuple[Field, ...]

    def of_kind(self, *kinds: str) -> list[Field]:
        return [f for f in self.fields if f.kind in kinds]


def load(directory: Path = JSON_DIR) -> list[EventSchema]:
    out = []
    for path in sorted((directory / "events").glob("*.json")):
        schema = orjson.loads(path.read_bytes())
        defs = schema.get("$defs", {})
        fields = tuple(_fields(schema, defs, ()))
        out.append(EventSchema(schema["title"], schema["x-topic"], schema, defs, fields))
    return out


def resolve(node: Schema, defs: Schema) -> Schema:
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def _fields(node: Schema, defs: Schema, path: tuple[str, ...]) -> list[Field]:
    """Object properties all the way down; arrays are leaves (their items are not walked)."""
    out = []
    for name, sub in resolve(node, defs).get("properties", {}).items():
        sub, nullable = _non_null(resolve(sub, defs), defs)
        kind = kind_of(sub)
        out.append(Field((*path, name), kind, sub, nullable))
        if kind == "object" and "properties" in sub:
            out += _fields(sub, defs, (*path, name))
    return out


def _non_null(node: Schema, defs: Schema) -> tuple[Schema, bool]:
    """`X | None` → (X, True); anything else unchanged."""
    options = node.get("anyOf") or node.get("oneOf")
    if not options:
        return node, False
    typed = [resolve(o, defs) for o in options if o.get("type") != "null"]
    return (typed[0] if len(typed) == 1 else node), len(typed) < len(options)


def kind_of(node: Schema) -> str:
    if "const" in node:
        return "const"
    if "enum" in node:
        return "enum"
    kind = node.get("type")
    if kind == "string" and node.get("format") in ("date-time", "uuid"):
        return str(node["format"])
    return kind if isinstance(kind, str) else "any"


def timestamp(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


class DocumentFactory:
    """Valid documents of one event schema: small, sane values inside every stated bound."""

    def __init__(self, rng: Random, now: datetime | None = None) -> None:
        self.rng = rng
        self.now = now or datetime.now(UTC)

    def document(self, event: EventSchema, subject: str) -> dict[str, Any]:
        doc: dict[str, Any] = self.value(event.schema, event.defs)
        doc.update(
            type=event.name,
            subject=subject,
            source="bench-hostile",
            cluster="hostile",
            event_id=str(uuid.UUID(int=self.rng.getrandbits(128), version=4)),
            schema_version=event.schema["properties"]["schema_version"].get("maximum", 1),
        )
        return doc

    def value(self, node: Schema, defs: Schema) -> Any:
        node = resolve(node, defs)
        rng = self.rng
        if "const" in node:
            return node["const"]
        if "enum" in node:
            return rng.choice(node["enum"])
        options = node.get("anyOf") or node.get("oneOf")
        if options:
            return self.value(rng.choice(options), defs)
        kind = kind_of(node)
        if kind == "object":
            props = node.get("properties")
            if props is None:  # a mapping
                extra = node.get("additionalProperties")
                return {
                    f"k{i}": self.value(extra, defs) if isinstance(extra, dict) else i
                    for i in range(rng.randint(0, 2))
                }
            required = set(node.get("required", ()))
            return {
                name: self.value(sub, defs)
                for name, sub in props.items()
                if name in required or rng.random() < 0.5
            }
        if kind == "array":
            low = node.get("minItems", 0)
            high = max(low, min(node.get("maxItems", 3), 3))
            return [self.value(node.get("items", {}), defs) for _ in range(rng.randint(low, high))]
        if kind == "date-time":
            return timestamp(self.now - timedelta(seconds=rng.uniform(0, 600)))
        if kind == "uuid":
            return str(uuid.UUID(int=rng.getrandbits(128), version=4))
        if kind == "string":
            low = node.get("minLength", 0)
            high = max(low, min(node.get("maxLength", 12), 12))
            return "".join(rng.choices("abcdefghij-_/0123456789", k=rng.randint(max(low, 1), high)))
        if kind == "integer":
            low, high = int_bounds(node)
            return rng.randint(max(low, 0), min(high, 1000)) if high >= 0 else high
        if kind == "number":
            low = float(node.get("minimum", node.get("exclusiveMinimum")) or 0.0)
            high = float(node.get("maximum", low + 100.0))
            return rng.uniform(low, high) or (low + high) / 2 or 0.5
        if kind == "boolean":
            return rng.random() < 0.5
        if kind == "null":
            return None
        return rng.choice(SCALARS)


def number_bounds(node: Schema) -> tuple[float, float]:
    """The extreme floats the schema allows (an exclusive bound's next float inwards)."""
    low = float(node.get("minimum", -1e308))
    high = float(node.get("maximum", 1e308))
    if "exclusiveMinimum" in node:
        low = math.nextafter(float(node["exclusiveMinimum"]), math.inf)
    if "exclusiveMaximum" in node:
        high = math.nextafter(float(node["exclusiveMaximum"]), -math.inf)
    return low, high


def int_bounds(node: Schema) -> tuple[int, int]:
    return int(node.get("minimum", INT64[0])), int(node.get("maximum", INT64[1]))
