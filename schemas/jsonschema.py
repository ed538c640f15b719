"""JSON Schema of every event, for producers in other languages. Generated into `schemas/json/`
and checked in; `centrality schemas export` rewrites them and a test fails when they are stale."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from schemas.codec import MAX_MESSAGE_BYTES, WIRE_REQUIRED
from schemas.envelope import Event
from schemas.limits import INT64_MAX, INT64_MIN, TIME_PATTERN
from schemas.registry import event_types

JSON_DIR = Path(__file__).resolve().parent / "json"
# The keywords the files use beyond JSON Schema 2020-12 (and ajv-formats' `formatMinimum`), each
# with the schema of its value. Annotations: none constrains a document. A validator in strict
# mode refuses a keyword it does not know, so `keywords.json` lists them for consumers to declare
# (Ajv: `ajv.addKeyword({keyword, metaSchema})`); tests/js compiles the files so with Ajv.
KEYWORDS: dict[str, dict[str, Any]] = {
    "x-topic": {
        "description": "The catalog topic the event is produced to, before the topic prefix.",
        "type": "string",
    },
    "x-maxBytes": {
        "description": "The most bytes a Kafka message value may have.",
        "type": "integer",
        "minimum": 1,
    },
    "x-maxFutureSkewS": {
        "description": "How many seconds past the reader's clock a timestamp may be (the default;"
        " a deployment may change it: CENTRALITY_CONTRACT_MAX_FUTURE_SKEW_S).",
        "type": "number",
        "minimum": 0,
    },
}


def event_schema(cls: type[Event]) -> dict[str, Any]:
    schema = cls.model_json_schema(mode="validation")
    schema["required"] = sorted({*schema.get("required", ()), "type", *WIRE_REQUIRED})
    schema["properties"]["schema_version"] = {
        "type": "integer",
        "minimum": 1,
        "maximum": cls.current_version,
        "title": "Schema Version",
    }
    if cls.current_version > 1:
        # The file describes the current payload: a document in it says so (an older one is
        # upcast on decode, and would be read as that older version without it).
        schema["properties"]["schema_version"]["minimum"] = cls.current_version
        schema["required"] = sorted({*schema["required"], "schema_version"})
    _tighten(schema)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = _id(schema["title"])
    schema["x-topic"] = cls.topic
    return schema


def message_schema(names: list[str]) -> dict[str, Any]:
    """A Kafka message: one event, or a non-empty array of events of one key."""
    one = {"oneOf": [{"$ref": _id(n)} for n in names]}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "urn:centrality:message",
        "title": "Message",
        "description": f"A Kafka message value: at most {MAX_MESSAGE_BYTES} bytes (x-maxBytes).",
        "x-maxBytes": MAX_MESSAGE_BYTES,
        "oneOf": [one, {"type": "array", "minItems": 1, "items": one}],
    }


def render() -> dict[str, bytes]:
    """Relative path → file content, for every schema file."""
    files: dict[str, bytes] = {}
    types = dict(sorted(event_types().items()))
    for name, cls in types.items():
        files[f"events/{name}.json"] = _dump(event_schema(cls))
    files["message.json"] = _dump(message_schema(list(types)))
    files["keywords.json"] = _dump(KEYWORDS)
    return files


def export(directory: Path = JSON_DIR) -> list[Path]:
    """Write the schema files; remove ones of events that no longer exist. Returns changed files."""
    wanted = render()
    changed = []
    for rel in stale(directory, wanted):
        path = directory / rel
        if rel in wanted:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(wanted[rel])
        else:
            path.unlink()
        changed.append(path)
    return changed


def stale(directory: Path = JSON_DIR, wanted: dict[str, bytes] | None = None) -> list[str]:
    """What `export` would change in `directory`: files missing or different, and files of
    events that no longer exist (relative paths, sorted)."""
    wanted = render() if wanted is None else wanted
    differ = {
        rel
        for rel, content in wanted.items()
        if not (directory / rel).is_file() or (directory / rel).read_bytes() != content
    }
    gone = {f"events/{p.name}" for p in directory.glob("events/*.json")} - set(wanted)
    return sorted(differ | gone)


# `format` is only an annotation for most validators; these patterns make the files say what the
# decoder enforces (a tz-aware timestamp in the contract's years, no leap second, a real UUID),
# and the bound keeps integers in 64 bits.
_PATTERNS = {
    "uuid": "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
    "date-time": TIME_PATTERN,
}
_INT64 = (INT64_MIN, INT64_MAX)


def _tighten(node: Any) -> None:
    if isinstance(node, list):
        for item in node:
            _tighten(item)
        return
    if not isinstance(node, dict):
        return
    if node.get("format") in _PATTERNS:
        node["pattern"] = _PATTERNS[node["format"]]
    if node.get("type") == "integer":
        node.setdefault("minimum", _INT64[0])
        node.setdefault("maximum", _INT64[1])
    for value in node.values():
        _tighten(value)


def _id(name: str) -> str:
    """Refs between files use these ids: load every file into your validator's registry."""
    return f"urn:centrality:event:{name}"


def _dump(schema: dict[str, Any]) -> bytes:
    return orjson.dumps(schema, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS) + b"\n"
