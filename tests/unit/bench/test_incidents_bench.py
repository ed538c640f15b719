"""What the incidents bench concludes from what it reads: each node's silences and returns, each
burst node's decision (a drain done or refused), what reached Slack apart from edits, and the
targets."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
from aiokafka import ConsumerRecord

from centrality.bench.incidents import Options
from centrality.bench.incidents_phases import Phase, refused, said, told
from centrality.bench.incidents_report import targets
from centrality.bench.incidents_watch import Seen
from centrality.slack_fake import SlackFake
from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import ActionFailed, ActionSucceeded, NodeStatusChanged
from streams.testing import xid

AT = datetime(2026, 11, 28, 23, 0, tzinfo=UTC)
REFUSED = {"permanent": True, "refused": True}
HEADERS = {"Authorization": "Bearer xoxb-test", "Content-Type": "application/json"}


def approx(seconds: float) -> object:
    return pytest.approx(seconds, abs=1e-3)


def _at(event: Event, at_s: float) -> ConsumerRecord[bytes, bytes]:
    value = encode(event)
    return ConsumerRecord("t", 0, 0, int(at_s * 1000), 0, b"k", value, None, 0, len(value), ())


def status(node: str, state: str) -> NodeStatusChanged:
    return NodeStatusChanged(
        source="streams", cluster="b", subject=node, occurred_at=AT, payload={"state": state}
    )


def result_of(action: str, nodes: tuple[str, ...], **failed: Any) -> Event:
    payload: dict[str, Any] = {
        "trigger_id": uuid.uuid4(),
        "trigger_type": "QuarantineNodes",
        "action": action,
        "nodes": nodes,
    }
    common: dict[str, Any] = {"source": "actions", "cluster": "b", "subject": nodes[0]}
    if failed:
        return ActionFailed(**common, occurred_at=AT, payload=payload | failed)
    return ActionSucceeded(**common, occurred_at=AT, payload=payload)


def test_a_node_silent_twice_is_measured_from_its_latest_silence() -> None:
    seen = Seen()
    for state, at in (
        ("unreachable", 10.0),
        ("unreachable", 11.0),  # published again (its incident named): the same silence
        ("in_service", 20.0),
        ("unreachable", 30.0),
    ):
        seen.see(_at(status("n1", state), at))
    assert seen.unreachable_at == {"n1": approx(30.0)} and seen.lost["n1"] == 2
    assert "n1" not in seen.back_at  # silent again: not back
    seen.see(_at(status("n1", "in_service"), 41.0))
    seen.see(_at(status("n2", "in_service"), 42.0))  # never silent: never back either
    assert seen.back_at == {"n1": approx(41.0)}


def test_a_burst_node_is_decided_by_its_drain_done_or_refused() -> None:
    seen = Seen()
    for event, at in (
        (xid("a"), 1.0),
        (xid("b"), 1.5),
        (xid("c"), 1.6),
        (xid("a", at_s=9), 1.7),  # only the first XID counts
        (result_of("quarantine_nodes", ("a",), error="circuit breaker: 21 of 200", **REFUSED), 2.5),
        (result_of("quarantine_nodes", ("b",)), 3.0),
        (result_of("quarantine_nodes", ("c",), error="scontrol: timeout", permanent=False), 3.1),
        (result_of("run_benchmark", ("c",)), 3.2),  # not its drain
    ):
        seen.see(_at(event, at))
    assert [seen.decided_s(n) for n in "abcd"] == [approx(1.5), approx(1.5), None, None]
    assert seen.refusals == {"circuit breaker: 21 of 200": 1}


def _call(fake: SlackFake, method: str, **args: Any) -> dict[str, Any]:
    answer: dict[str, Any] = fake.answer(f"/api/{method}", HEADERS, json.dumps(args))[2]
    return answer


def test_what_reached_slack_counts_new_messages_apart_from_edits() -> None:
    now = [0.0]
    fake = SlackFake(clock=lambda: now[0])
    parent = _call(fake, "chat.postMessage", channel="#gpu-incidents", text="200 nodes silent")
    phase = Phase.now(fake)
    for at, method, args in (
        (0.5, "chat.update", {"ts": parent["ts"], "text": "200 nodes silent (edited)"}),
        (0.8, "chat.postMessage", {"thread_ts": parent["ts"], "text": "too soon"}),  # a 429
        (1.0, "chat.postMessage", {"thread_ts": parent["ts"], "text": "Resolved"}),
        (2.0, "chat.postMessage", {"text": "37 messages at once, told together: …"}),
    ):
        now[0] = at
        _call(fake, method, channel="#gpu-incidents", **args)
    now[0] = 5.0
    assert told(fake, 0.5) == {
        "messages": 2,
        "top_level": 1,
        "replies": 1,
        "digests": 1,
        "edits": 1,
    }
    assert told(fake, 0.0, 1.0)["messages"] == 1  # the parent, at 0.0; the edit is not one
    assert said(fake, 0.5) == ["↳ Resolved", "37 messages at once, told together: …"]
    assert refused(fake, phase) == {"chat.postMessage: ratelimited": 1}


def options(**targets: Any) -> Options:
    return Options(
        nodes=200,
        burst=40,
        burst_s=5,
        interval_s=2,
        limit_s=6,
        beats=2,
        tick_s=1,
        slack_window_s=30,
        seed=1,
        ready_timeout_s=60,
        phase_timeout_s=60,
        keep=False,
        **targets,
    )


def measured(**changes: Any) -> dict[str, Any]:
    """A run that met every target; `changes` replace figures (`silent__quarantines`)."""
    incident = {"kind": "heartbeat_lost", "nodes": 200, "state": "resolved", "states": {}}
    result: dict[str, Any] = {
        "silent": {
            "unreachable": 200,
            "listed_unreachable": 200,
            "beat_to_unreachable_max_ms": 11_000.0,
            "incidents_opened": {"inc-1": incident},
            "listed_heartbeat_lost": [200],
            "listed_incidents": 1,
            "listed_incidents_named": ["inc-1"],
            "slack": {"messages": 2},
            "quarantines": 0,
            "back_all": True,
        },
        "burst": {
            "decided": 40,
            "xids": 40,
            "xid_to_decided_p99_ms": 2000.0,
            "slack_in_window": {"messages": 4},
        },
        "slack_lost": 0,
        "slack_refused": {"chat.update: ratelimited": 3},  # waited out, as Slack asked
    }
    for name, value in changes.items():
        phase, _, figure = name.partition("__")
        if figure:
            result[phase][figure] = value
        else:
            result[phase] = value
    return result


@pytest.mark.parametrize(
    ("changes", "missed"),
    [
        ({}, set()),
        ({"silent__beat_to_unreachable_max_ms": 12_001.0}, {"silent_every_node_unreachable"}),
        ({"silent__listed_unreachable": 199}, {"silent_every_node_unreachable"}),
        (
            {"silent__incidents_opened": {"inc-1": {"kind": "heartbeat_lost", "nodes": 120}}},
            {"silent_one_incident"},
        ),
        ({"silent__listed_incidents_named": ["inc-1", "none"]}, {"silent_one_incident"}),
        ({"silent__slack": {"messages": 4}}, {"silent_messages"}),
        ({"silent__quarantines": 1}, {"silent_no_drain"}),
        ({"silent__back_all": False}, {"silent_back_and_resolved"}),
        ({"burst__decided": 39}, {"burst_every_xid_decided"}),
        ({"burst__xid_to_decided_p99_ms": 5000.1}, {"burst_decided_p99"}),
        ({"burst__slack_in_window": {"messages": 11}}, {"burst_messages_first_window"}),
        (
            {"slack_refused": {"chat.postMessage: msg_blocks_too_long": 1}},
            {"slack_every_call_taken"},
        ),
        ({"slack_lost": 1}, {"slack_every_call_taken"}),
    ],
)
def test_each_target_is_missed_by_its_own_figure(changes: dict[str, Any], missed: set[str]) -> None:
    met = targets(measured(**changes), options())
    assert {name for name, ok in met.items() if not ok} == missed


def test_the_heartbeat_limit_is_the_rules_for_the_agents_interval() -> None:
    assert options().rule_limit_s == 6.0
    # Agents declaring 10 s are lost after 3 missed beats, past a shorter limit_s.
    longer = Options(**{**options().__dict__, "interval_s": 10.0, "limit_s": 20.0})
    assert longer.rule_limit_s == 30.0
