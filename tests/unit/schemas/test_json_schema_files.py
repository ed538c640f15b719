from pathlib import Path

import jsonschema
import orjson
from referencing import Registry, Resource
from typer.testing import CliRunner

from centrality.cli import app
from schemas.codec import decode, encode
from schemas.jsonschema import JSON_DIR, render, stale
from schemas.limits import MAX_NODES
from tests.factories import exited


def test_checked_in_schema_files_are_current() -> None:
    changes = stale(JSON_DIR)
    extra = {p.relative_to(JSON_DIR).as_posix() for p in JSON_DIR.rglob("*.json")} - set(render())
    assert not changes and not extra, (
        f"schemas/json is stale ({changes or sorted(extra)}): run `centrality schemas export`"
    )


def test_export_writes_where_it_is_told_and_check_sees_what_it_would_change(
    tmp_path: Path,
) -> None:
    out = tmp_path / "contract"
    runner = CliRunner()
    result = runner.invoke(app, ["schemas", "export", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {p.relative_to(out).as_posix() for p in out.rglob("*.json")} == set(render())
    assert all((out / rel).read_bytes() == body for rel, body in render().items())
    check = ["schemas", "export", "--check", "--directory", str(out)]
    assert runner.invoke(app, check).exit_code == 0

    (out / "events" / "JobExploded.json").write_text("{}")
    (out / "message.json").write_text("{}")
    result = runner.invoke(app, check)
    assert result.exit_code == 1
    assert "JobExploded.json" in result.output and "message.json" in result.output
    assert runner.invoke(app, ["schemas", "export", "-o", str(out)]).exit_code == 0
    assert not (out / "events" / "JobExploded.json").exists()
    assert runner.invoke(app, check).exit_code == 0


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


def test_the_files_state_the_limits_other_validators_honour() -> None:
    """What the codec refuses as `limit` a standard JSON Schema validator refuses from the files
    alone (the future-skew bound, relative to the reader's clock, is stated in prose)."""
    validator = _validator()
    base = orjson.loads(encode(exited()))
    assert validator.is_valid(base)
    cases = {
        "occurred_at": ["9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2016-12-31T23:59:60Z"],
        "subject": ["j" * 500_000],
    }
    for field, values in cases.items():
        for value in values:
            assert not validator.is_valid({**base, field: value}), (field, value[:30])
    nodes = [f"n{i}" for i in range(MAX_NODES + 1)]  # one past the limit the file states
    huge = {**base, "payload": {**base["payload"], "nodes": nodes}}
    assert not validator.is_valid(huge)
    beyond = {**base, "payload": {**base["payload"], "exit_code": 2**63}}
    assert not validator.is_valid(beyond)
