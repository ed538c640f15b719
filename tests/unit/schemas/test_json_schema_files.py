import jsonschema
import orjson
from referencing import Registry, Resource

from schemas.codec import decode, encode
from schemas.jsonschema import JSON_DIR, render
from tests.factories import exited


def test_checked_in_schema_files_are_current() -> None:
    stale = [
        rel
        for rel, content in render().items()
        if not (JSON_DIR / rel).is_file() or (JSON_DIR / rel).read_bytes() != content
    ]
    extra = {p.relative_to(JSON_DIR).as_posix() for p in JSON_DIR.rglob("*.json")} - set(render())
    assert not stale and not extra, (
        f"schemas/json is stale ({stale or sorted(extra)}): run `centrality schemas export`"
    )


def _validator() -> jsonschema.Draft202012Validator:
    """What a producer in another language does: load every file, validate against message."""
    schemas = [orjson.loads(p.read_bytes()) for p in (JSON_DIR / "events").glob("*.json")]
    registry = Registry().with_resources((s["$id"], Resource.from_contents(s)) for s in schemas)
    message = orjson.loads((JSON_DIR / "message.json").read_bytes())
    return jsonschema.Draft202012Validator(message, registry=registry)


def test_what_we_encode_is_valid_per_the_files() -> None:
    validator = _validator()
    event = exited()
    validator.validate(orjson.loads(encode(event)))
    validator.validate([orjson.loads(encode(event))] * 2)


def test_the_files_reject_what_decode_rejects() -> None:
    validator = _validator()
    doc = orjson.loads(encode(exited()))
    del doc["event_id"]
    assert not validator.is_valid(doc)
    try:
        decode(orjson.dumps(doc))
    except ValueError as exc:
        assert "event_id" in str(exc)
    else:
        raise AssertionError("decode accepted a document without event_id")
