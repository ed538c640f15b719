"""Hypothesis strategies from a JSON Schema: documents a producer that knows only our schema
files could build. Covers the subset `schemas/json/` uses, and fails loudly on anything else."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import strategies as st

Schema = dict[str, Any]
JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=12)


def from_schema(schema: Schema) -> st.SearchStrategy[Any]:
    return _strategy(schema, schema.get("$defs", {}))


def _strategy(node: Schema, defs: Schema) -> st.SearchStrategy[Any]:
    if "$ref" in node:
        return _strategy(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "const" in node:
        return st.just(node["const"])
    if "enum" in node:
        return st.sampled_from(node["enum"])
    if "anyOf" in node or "oneOf" in node:
        return st.one_of([_strategy(n, defs) for n in node.get("anyOf", node.get("oneOf"))])
    kind = node.get("type")
    if kind == "object":
        return _object(node, defs)
    if kind == "array":
        return st.lists(
            _strategy(node.get("items", {}), defs),
            min_size=node.get("minItems", 0),
            max_size=node.get("maxItems", 4),
        )
    if kind == "string":
        return _string(node)
    if kind == "integer":
        return st.integers(node.get("minimum", -(2**63)), node.get("maximum", 2**63 - 1))
    if kind == "number":
        low, high = node.get("minimum", node.get("exclusiveMinimum")), node.get("maximum")
        return st.floats(
            low,
            high,
            exclude_min="exclusiveMinimum" in node,
            allow_nan=False,
            allow_infinity=False,
        )
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    if not kind and set(node) <= {"title", "description", "default"}:
        return JSON_SCALARS  # `Any`
    raise NotImplementedError(f"schema construct not covered: {sorted(node)}")


def _object(node: Schema, defs: Schema) -> st.SearchStrategy[dict[str, Any]]:
    props = node.get("properties")
    if props is None:  # a mapping: values typed by additionalProperties, or anything
        extra = node.get("additionalProperties", True)
        values = _strategy(extra, defs) if isinstance(extra, dict) else JSON_SCALARS
        return st.dictionaries(st.text(max_size=8), values, max_size=3)
    required = set(node.get("required", ()))
    fixed = {k: _strategy(v, defs) for k, v in props.items() if k in required}
    optional = {k: _strategy(v, defs) for k, v in props.items() if k not in required}
    return st.fixed_dictionaries(fixed, optional=optional)


def _string(node: Schema) -> st.SearchStrategy[str]:
    fmt = node.get("format")
    if fmt == "uuid":
        return st.uuids().map(str)
    if fmt == "date-time":
        # RFC 3339 offsets are whole minutes (historical zones had seconds).
        offsets = st.integers(-14 * 60, 14 * 60).map(lambda m: timezone(timedelta(minutes=m)))
        # Local times a day inside the range (formatMinimum .. now + skew), whatever the offset.
        low = datetime.fromisoformat(node["formatMinimum"]).replace(tzinfo=None) + timedelta(1)
        high = datetime.now(UTC).replace(tzinfo=None)
        return st.datetimes(low, high, timezones=offsets).map(lambda d: d.isoformat())
    if "pattern" in node:
        return st.from_regex(node["pattern"], fullmatch=True)
    return st.text(min_size=node.get("minLength", 0), max_size=max(node.get("minLength", 0), 16))
