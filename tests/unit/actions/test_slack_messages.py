"""Every message the renderers make is one Slack accepts (the fake's own checks), written for
people: no Python repr, no raw JSON, no time without its zone, long node lists folded."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from actions.holds import held_by_silence
from actions.ledger import LedgerEntry
from actions.silences import Silences
from actions.slack.blocks import incident_message
from actions.slack.digest import digest_message
from actions.slack.holds import ended_message
from actions.slack.incidents import (
    notes_message,
    parent_message,
    refused_message,
    resolved_message,
)
from actions.slack.message import Message
from centrality.slack_limits import check_message
from schemas.events import EscalateNodes, RebootNodes, Trigger
from schemas.events.actions import BenchmarkCompletedPayload
from schemas.events.incidents import IncidentPayload, IncidentResolved
from schemas.limits import TEXT
from tests.support.incidents import OPENED, incident
from tests.support.operators import TRUSTED, expired, signed, silence
from tests.support.triggers import benchmark, notify, quarantine, release, restart, rung

NODES = tuple(f"gpu-node-{i:04d}" for i in range(1, 2001))
REPRS = ("{'", '{"', "('", "datetime(", "UUID(", "Decimal(")
# A date and time, not followed by its zone.
NAIVE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?(\.\d+)?(?![:.\d]|\s*UTC|Z|[+-]\d\d)")
DETAIL: dict[str, Any] = {
    "drain": {"scheduler": "slurm", "drained": list(NODES[:300]), "reason": "centrality: xid 79"},
    "taint": {"scheduler": "slurm", "tainted": ["gpu-node-0001"], "key": "centrality.io/bad"},
    "verdicts": {"gpu-node-0001": "pass", "gpu-node-0002": "fail"},
    "at": datetime(2026, 11, 28, 22, 30, tzinfo=UTC),
    "exit_code": 0,
    "forced": None,
    "dry": False,
    "ratio": 0.25,
    "empty": {},
}
BENCH = BenchmarkCompletedPayload.model_validate(
    {"trigger_id": uuid.uuid4(), "node": "gpu-node-0001", "verdict": "fail",
     "reasons": ["gpu 3: matmul 180.0 TFLOP/s < 600"],
     "gpus": [{"gpu": g, "matmul_tflops": 700.5, "memory_bandwidth_gbps": 3900.0}
              for g in range(8)]}
)  # fmt: skip


def triggers() -> Iterator[Trigger]:
    yield restart()
    yield quarantine(("gpu-node-0001",))
    yield quarantine(NODES, window="everything")
    yield benchmark(("gpu-node-0001", "gpu-node-0002"))
    yield release(NODES[:5])
    yield notify("test/gpu-node-0001", "w")
    yield rung(EscalateNodes, ("gpu-node-0001",), tried=("reboot: back",), xids=(79,))
    yield rung(RebootNodes, NODES[:40]).as_shadow()


def decision_messages() -> Iterator[Message]:
    for t in triggers():
        headline = f"{t.type} about {t.subject}"
        yield incident_message(t, headline=headline, done=DETAIL, benchmarks=[BENCH] * 3)
        yield incident_message(t, headline=headline, error="TemporaryError: slurmctld busy")
        yield incident_message(t, headline=headline, error="circuit breaker: 3 of 10", refused=True)
        yield incident_message(t, headline=headline, error="held by silence s-1", held=True)
        yield incident_message(t, headline=headline, note="It stays drained. " * 400)


def incident_messages() -> Iterator[Message]:
    resolved_at = OPENED + timedelta(hours=2)
    for p in (
        incident().payload,
        incident(states={"unreachable": 100, "quarantined": 40, "in_service": 3}).payload,
        incident(refused="circuit breaker: 20 of 100 nodes (20 %) > 10 % in 3600 s").payload,
        incident(held_by=("s-1", "s-2"), jobs=tuple(f"slurm/a/{i}" for i in range(40))).payload,
        incident(title="t" * 2000, cause="c" * 2000, nodes="gpu-[0001-1000],…").payload,
        incident(cls=IncidentResolved, state="resolved", resolved_at=resolved_at,
                 states={"in_service": 140, "escalated": 3}).payload,
        incident(notes=tuple(f"gpu-{i:03d}: kept out: benchmark fail: {'x' * 200}"
                             for i in range(64)), notes_count=90).payload,
    ):  # fmt: skip
        assert isinstance(p, IncidentPayload)
        yield parent_message("inc-7f3a", p)
        yield refused_message("inc-7f3a", p)
        yield notes_message("inc-7f3a", p, 0)
        yield resolved_message("inc-7f3a", p)


def digests() -> Iterator[Message]:
    many = [
        Message(f"Drained {n}: xid 79", line="Drained {nodes}", nodes=(n,)) for n in NODES[:375]
    ]
    varied = [Message(f"incident {i} " + "x" * 500) for i in range(1000)]
    yield digest_message(many, 1.0)
    yield digest_message(many + varied, 0.5)


def ended_messages() -> Iterator[Message]:
    """A silence's end: holding nothing, or 2,000 nodes' drains and 40 jobs' restarts."""
    known = Silences(TRUSTED)
    scopes: list[dict[str, Any]] = [{}, {"nodes": "gpu-node-[0001-2000]", "rule": "fatal_xid"}]
    for i, scope in enumerate(scopes):
        added = silence(silence_id=f"s-{i:08d}", **scope)  # a test id names it: stable
        known.take(*signed(added))
        known.take(*signed(expired(added, reason="r" * TEXT)))
    entries = [
        LedgerEntry(trigger_id=uuid.uuid4(), trigger_type="QuarantineNodes",
                    action="quarantine_nodes", cluster="test", subject=n, rule="fatal_xid",
                    nodes=(n,), outcome="held", incident="i", held_by=s.silence_id)
        for s in known.all() for n in NODES
    ] + [
        LedgerEntry(trigger_id=uuid.uuid4(), trigger_type="RestartJob", action="restart_job",
                    cluster="test", subject=f"slurm/test/{j}", rule="restart_incomplete_exit",
                    outcome="held", incident="i", held_by=known.all()[0].silence_id)
        for j in range(40)
    ]  # fmt: skip
    held = held_by_silence(entries)
    for s in known.all():
        yield ended_message(s, None)
        yield ended_message(s, held[s.silence_id])


ALL = [*decision_messages(), *incident_messages(), *digests(), *ended_messages()]


def texts(message: Message) -> Iterator[str]:
    yield message.text

    def walk(value: Any) -> Iterator[str]:
        if isinstance(value, dict):
            for key, inner in value.items():
                yield from [inner] if key == "text" and isinstance(inner, str) else walk(inner)
        elif isinstance(value, list):
            for inner in value:
                yield from walk(inner)

    yield from walk(message.blocks)


@pytest.mark.parametrize("message", ALL, ids=lambda m: m.text[:40])
def test_slack_accepts_it_and_people_can_read_it(message: Message) -> None:
    check_message(message.text, message.blocks)  # raises `Refused` as the fake refuses
    for text in texts(message):
        assert not any(r in text for r in REPRS), text
        assert not NAIVE.search(text), text


def test_long_node_lists_are_folded_and_times_carry_their_zone() -> None:
    drained = incident_message(
        quarantine(NODES, window="all"), headline="Drained", done={"drain": {"drained": NODES}}
    )
    shown = json.dumps(drained.blocks)
    assert "gpu-node-[0001-2000]" in shown and "gpu-node-0002," not in shown
    parent = json.dumps(parent_message("inc-1", incident().payload).blocks)
    assert "<!date^1795905000^{date_short_pretty} {time_secs}|2026-11-28 22:30:00 UTC>" in parent
    assert "`centrality incident inc-1`" in parent
    assert "unreachable 143" in parent


def test_details_are_words() -> None:
    message = incident_message(quarantine(("n1",)), headline="Drained n1", done=DETAIL)
    said = json.dumps(message.blocks)
    assert "drain: scheduler slurm; drained gpu-node-[0001-0300]; reason centrality: xid 79" in said
    assert "verdicts: gpu-node-0001 pass; gpu-node-0002 fail" in said
    assert "forced: none" in said and "dry: no" in said and "ratio: 0.25" in said
