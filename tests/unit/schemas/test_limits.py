"""Every limit of the contract: a value just past it is dead-lettered with reason `limit` and the
field it broke, the value at it is accepted, and the JSON Schema files state it."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
import pytest
from pydantic import ValidationError

from schemas import limits
from schemas.codec import DecodeError, decode
from schemas.events import JobExited
from schemas.jsonschema import event_schema
from schemas.registry import event_types
from streams.testing import envelope

NOW = datetime.now(UTC).replace(microsecond=0)
CAUSE = "00000000-0000-0000-0000-000000000001"
TRIGGER = {"rule": "r", "window": "w", "reason": "x", "caused_by": [CAUSE]}
ACTION = {"trigger_id": CAUSE, "trigger_type": "RestartJob", "action": "restart_job"}

# The smallest valid payload of every event type: the base each case breaks one field of.
INCIDENT = {
    "title": "3 nodes stopped sending heartbeats",
    "kind": "heartbeat_lost",
    "cause": "no heartbeats",
    "domain": "cluster a",
    "opened_at": "2026-01-01T00:00:00Z",
    "first_fault_at": "2026-01-01T00:00:00Z",
    "last_fault_at": "2026-01-01T00:00:00Z",
}
VALID: dict[str, dict[str, Any]] = {
    "ActionFailed": {**ACTION, "error": "e", "permanent": True},
    "ActionHeld": {**ACTION, "held_by": "s-1", "until": "2026-01-01T00:00:00Z", "why": "w"},
    "ActionStarted": ACTION,
    "ActionSucceeded": ACTION,
    "BenchmarkCompleted": {"node": "n1", "verdict": "pass"},
    "CancelJob": TRIGGER,
    "CheckpointSaved": {"step": 1, "uri": "s3://c"},
    "GpuSampled": {"gpu": 0},
    "GpuXidObserved": {"gpu": 0, "xid": 79},
    "JobExited": {"state": "FAILED"},
    "JobStateChanged": {"state": "RUNNING", "raw_state": "RUNNING"},
    "JobStatusChanged": {},
    "JobSubmitted": {},
    "LogLinesObserved": {"lines": [{"line": "x"}]},
    "LogSignalDetected": {"signal": "OOM", "line": "x"},
    "NcclSampled": {
        "collective": "all_reduce",
        "size_bytes": 1,
        "algbw_gbps": 1.0,
        "busbw_gbps": 1.0,
        "duration_us": 1.0,
        "ranks": 2,
    },
    "NodeFactsObserved": {},
    "NodeHealthChecked": {"check": "c", "status": "OK"},
    "NodeHeartbeat": {"agent_version": "1", "gpus": 8, "interval_s": 10.0},
    "NodeStateObserved": {"state": "DRAINED", "raw_state": "DRAIN", "scheduler": "slurm"},
    "NodeStatusChanged": {"state": "in_service"},
    **dict.fromkeys(("IncidentOpened", "IncidentUpdated", "IncidentResolved"), INCIDENT),
    "Notify": {**TRIGGER, "title": "t", "incident": "i"},
    "ReleaseJob": {**TRIGGER, "after": "slurm/c/1"},
    "QuarantineNodes": {**TRIGGER, "nodes": ["n1"]},
    "ReleaseNodes": {**TRIGGER, "nodes": ["n1"]},
    "ResetGpus": {**TRIGGER, "nodes": ["n1"]},
    "RebootNodes": {**TRIGGER, "nodes": ["n1"]},
    "EscalateNodes": {**TRIGGER, "nodes": ["n1"]},
    "RestartJob": {**TRIGGER, "checkpoint_uri": None, "attempt": 1},
    "RequestCheckpoint": TRIGGER,
    "RunBenchmark": {**TRIGGER, "nodes": ["n1"]},
    "SilenceAdded": {
        "silence_id": "s-0a1b2c3d",
        "starts_at": NOW.isoformat(),
        "duration_s": 3600.0,
        "reason": "r",
        "operator": "o",
    },
    "SilenceExpired": {"silence_id": "s-0a1b2c3d", "operator": "o"},
    "StepTimesObserved": {"node": "n1", "steps": 3, "median_s": 1.5, "max_s": 2.0},
    "CollectivesTimed": {
        "node": "n1",
        "communicator": "0x9e7a479f95a66c",
        "collective": "AllReduce",
        "size_bytes": 65536,
        "comm_ranks": 32,
        "comm_nodes": 4,
        "ranks": 8,
        "count": 10,
        "exec_us": 110.0,
    },
}
# A valid element of each list field, repeated past its maxItems.
ITEMS: dict[str, Any] = {
    "lines": {"line": "x"},
    "gpus": {"gpu": 0},
    "caused_by": CAUSE,
    "suites": "gpu",
    "hooks": {"release": "slurm/c/2"},
    "jobs": "slurm/c/1",
    "gpu_serials": "1653724026901",
    "partitions": "gpu",
    "features": "h100",
    "ladder": "reboot",
    "xids": 79,
    "ResetGpus.gpus": 0,
}


def doc(type_name: str, payload: dict[str, Any] | None = None, **env: Any) -> dict[str, Any]:
    return {
        "event_id": str(uuid.uuid4()),
        "type": type_name,
        "source": "s",
        "cluster": "c",
        "subject": "j",
        "occurred_at": NOW.isoformat(),
        "observed_at": NOW.isoformat(),
        "payload": VALID[type_name] | (payload or {}),
    } | env


def broken(node: dict[str, Any], name: str, type_name: str) -> Iterator[Any]:
    """Values one past each bound `node` (a property's JSON Schema) states."""
    item = ITEMS.get(f"{type_name}.{name}", ITEMS.get(name, "n1"))
    for option in node.get("anyOf", [node]):
        if "maxLength" in option:
            yield "x" * (option["maxLength"] + 1)
            yield "漢" * (option["maxLength"] + 1)  # characters, not bytes, are counted
        if "maxItems" in option:
            yield [item] * (option["maxItems"] + 1)
        extra = option.get("additionalProperties")
        value = {"string": "v", "number": 1.0, "integer": 1}.get(
            extra.get("type") if isinstance(extra, dict) else ""
        )
        if "maxProperties" in option:
            yield {f"k{i}": value for i in range(option["maxProperties"] + 1)}
        if "propertyNames" in option:
            yield {"k" * (option["propertyNames"]["maxLength"] + 1): value}
        for bound, step in (("maximum", 1), ("minimum", -1)):
            if bound in option:
                yield option[bound] + step
        if "exclusiveMinimum" in option:
            yield option["exclusiveMinimum"]


def cases() -> Iterator[Any]:
    for type_name, cls in sorted(event_types().items()):
        schema = cls.model_json_schema()
        defs = schema.get("$defs", {})
        payload = defs[schema["properties"]["payload"]["$ref"].rsplit("/", 1)[-1]]
        for name, prop in payload["properties"].items():
            for value in broken(prop, name, type_name):
                yield pytest.param(
                    doc(type_name, {name: value}), f"payload.{name}", id=f"{type_name}.{name}"
                )
    for name in ("source", "cluster", "subject"):
        yield pytest.param(doc("JobExited", **{name: "x" * 513}), name, id=f"envelope.{name}")


# Limits inside nested values, stated by hand.
NESTED = [
    (
        "LogLinesObserved",
        {"lines": [{"line": "x" * (limits.LOG_LINE + 1)}]},
        "payload.lines.0.line",
    ),
    ("LogLinesObserved", {"lines": [{"line": "x", "rank": 2**31}]}, "payload.lines.0.rank"),
    (
        "LogLinesObserved",
        {"lines": [{"line": "x", "at": "1999-12-31T23:59:59Z"}]},
        "payload.lines.0.at",
    ),
    ("LogLinesObserved", {"lines": [{"line": "x", "node": "n" * 254}]}, "payload.lines.0.node"),
    ("BenchmarkCompleted", {"gpus": [{"gpu": 1024}]}, "payload.gpus.0.gpu"),
    ("BenchmarkCompleted", {"reasons": ["r" * 4097]}, "payload.reasons.0"),
    ("BenchmarkCompleted", {"thresholds": {"k" * 129: 1.0}}, "payload.thresholds"),
    ("JobSubmitted", {"raw": {"k": "v" * 1025}}, "payload.raw.k"),
    ("JobSubmitted", {"raw": {"k" * 129: "v"}}, "payload.raw"),
    ("JobExited", {"nodes": ["n" * 254]}, "payload.nodes.0"),
    ("JobExited", {"nodes": ["n"] * 50_000}, "payload.nodes"),
    ("JobExited", {"exit_code": 2**63}, "payload.exit_code"),
    ("GpuSampled", {"throttle_reasons": ["t" * 65]}, "payload.throttle_reasons.0"),
    ("NodeHealthChecked", {"details": {"k": "v" * 5000}}, "payload.details.k"),
    ("NodeHealthChecked", {"details": {"k": [2**64]}}, "payload.details.k"),
    ("ActionSucceeded", {"detail": {"k": {"deep": "v" * 5000}}}, "payload.detail.k"),
    ("GpuSampled", {"temperature_c": -300}, "payload.temperature_c"),
]


@pytest.mark.parametrize(("document", "field"), list(cases()))
def test_a_value_past_a_limit_is_dead_lettered_as_limit_naming_the_field(
    document: dict[str, Any], field: str
) -> None:
    expect_limit(document, field)


@pytest.mark.parametrize(("type_name", "payload", "field"), NESTED)
def test_nested_limits(type_name: str, payload: dict[str, Any], field: str) -> None:
    expect_limit(doc(type_name, payload), field)


TIMES = [
    ("year 9999", "9999-12-31T23:59:59Z"),
    ("year 0001", "0001-01-01T00:00:00Z"),
    ("before 2000", "1999-12-31T23:59:59.999999Z"),
    ("before 2000 by its offset", "2000-01-01T00:30:00+01:00"),
    ("leap second", "2016-12-31T23:59:60Z"),
    ("past the future skew", None),  # relative to when the test runs, not to collection
]


@pytest.mark.parametrize("field", ["occurred_at", "observed_at"])
@pytest.mark.parametrize(("why", "value"), TIMES, ids=[t[0] for t in TIMES])
def test_timestamps_outside_the_range_are_limits(why: str, value: str | None, field: str) -> None:
    future = datetime.now(UTC) + limits.max_future_skew() + timedelta(minutes=5)
    expect_limit(doc("JobExited", **{field: value or future.isoformat()}), field)


def test_values_at_the_limits_are_accepted() -> None:
    document = doc(
        "JobExited",
        {
            "nodes": ["n" * limits.NODE_NAME] * 100
            + [f"n{i}" for i in range(limits.MAX_NODES - 100)],
            "exit_code": limits.INT64_MIN,
            "attempt": limits.UINT32_MAX,
            "reason": "🚀" * limits.TEXT,
        },
        subject="漢" * limits.SUBJECT,
        occurred_at="2000-01-01T00:00:00Z",
        observed_at=(NOW + limits.max_future_skew() - timedelta(minutes=5)).isoformat(),
    )
    [event] = decode(orjson.dumps(document))
    assert isinstance(event, JobExited)
    assert len(event.payload.nodes) == limits.MAX_NODES
    assert event.occurred_at == limits.MIN_TIME


def test_the_emitter_side_enforces_the_same_limits() -> None:
    """Building a model is where the Emitter's callers meet the limits: the same error types."""
    with pytest.raises(ValidationError) as info:
        JobExited(**envelope(), payload={"state": "FAILED", "nodes": ["n"] * 50_000})
    assert info.value.errors()[0]["type"] in limits.LIMIT_ERRORS
    with pytest.raises(ValidationError) as info:
        JobExited(
            **envelope() | {"occurred_at": datetime(9999, 1, 1, tzinfo=UTC)},
            payload={"state": "FAILED"},
        )
    assert info.value.errors()[0]["type"] == "time_limit"


def test_other_invalid_input_is_not_a_limit() -> None:
    for document in (
        doc("JobExited", {"exit_code": "one"}),
        doc("JobExited", {"nodes": "n1"}),
        doc("JobExited", subject=""),
        doc("JobExited", occurred_at="yesterday"),
    ):
        with pytest.raises(DecodeError) as info:
            decode(orjson.dumps(document))
        assert info.value.reason == "invalid"


def test_the_json_schema_states_the_limits() -> None:
    schema = event_schema(JobExited)
    payload = schema["$defs"]["JobExitedPayload"]["properties"]
    assert payload["nodes"]["maxItems"] == limits.MAX_NODES
    assert payload["nodes"]["items"]["maxLength"] == limits.NODE_NAME
    assert schema["properties"]["subject"]["maxLength"] == limits.SUBJECT
    occurred = schema["properties"]["occurred_at"]
    assert occurred["formatMinimum"] == "2000-01-01T00:00:00Z"
    assert occurred["x-maxFutureSkewS"] == 86_400
    for value in ("9999-12-31T23:59:59Z", "0001-01-01T00:00:00Z", "2016-12-31T23:59:60Z"):
        assert not re.fullmatch(occurred["pattern"], value), value
    assert re.fullmatch(occurred["pattern"], "2026-01-01T00:00:00.123456+05:30")


def expect_limit(document: dict[str, Any], field: str) -> None:
    with pytest.raises(DecodeError) as info:
        decode(json.dumps(document).encode())  # stdlib json writes integers past 64 bits too
    assert info.value.reason == "limit", info.value
    assert info.value.detail.startswith(f"{field}:") or info.value.detail.startswith(f"{field}."), (
        info.value.detail
    )


def test_a_stale_horizon_never_refuses_a_valid_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cached horizon lags the clock (a process idle for days): a time past it reads the
    clock again before it is refused."""
    horizon = limits._HORIZON
    monkeypatch.setattr(horizon, "at", limits.MIN_TIME)
    monkeypatch.setattr(horizon, "text", "2000-01-01T00:00:00")
    now = datetime.now(UTC)
    for at in (now.isoformat().replace("+00:00", "Z"), now.isoformat()):  # fast and slow paths
        [event] = decode(orjson.dumps(doc("JobExited", occurred_at=at, observed_at=at)))
        assert event.occurred_at == now
    assert horizon.at > now  # refreshed


@pytest.mark.parametrize("at", ["2026-01-01T02:00:00.5+02:00", "2026-01-01T00:00:00.5Z"])
def test_every_time_is_held_in_utc_whatever_offset_it_came_with(at: str) -> None:
    """The instant is kept; the zone is `datetime.UTC` (pydantic's own makes every comparison a
    Python call), and it is written back `…Z`."""
    [event] = decode(orjson.dumps(doc("JobExited", occurred_at=at)))
    assert event.occurred_at == datetime(2026, 1, 1, 0, 0, 0, 500_000, tzinfo=UTC)
    assert event.occurred_at.tzinfo is UTC and event.observed_at.tzinfo is UTC
    assert b'"occurred_at":"2026-01-01T00:00:00.500000Z"' in event.model_dump_json().encode()
