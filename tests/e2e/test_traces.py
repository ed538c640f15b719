"""One trace across processes: `centrality emit GpuXidObserved` → the streams worker's fold and
`fatal_xid` rule → the action worker's drain → `ActionSucceeded`, read back by the streams
worker, and linked from the history sink's insert.

Every process is started as an operator starts it and is configured only by the standard
`OTEL_*` variables: the real OTLP/HTTP exporter sends to `tests.support.otlp.OtlpReceiver` (an
in-memory exporter cannot cross processes; this receiver is the in-memory end they all share).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from centrality.pipeline import Pipeline
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from tests.support.otlp import OtlpReceiver, ReceivedSpan

pytestmark = pytest.mark.e2e
CLUSTER = "traced"


@dataclass(frozen=True)
class Topics:
    nodes: str
    triggers: str
    actions: str


def test_one_trace_from_a_fatal_xid_to_the_drain_across_processes(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], unique: str, tmp_path: Path
) -> None:
    node = f"gpu-{unique}"
    topics = Topics(*(topic_name(t, kafka_settings) for t in ("nodes", "triggers", "actions")))
    with OtlpReceiver() as receiver:
        env = {
            **worker_env,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,  # alone, it turns tracing on
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "CENTRALITY_ACTIONS_FLEET_SIZE": json.dumps({CLUSTER: 100}),
        }
        with Pipeline(env, tmp_path / "logs") as pipeline:
            cli = Path(sys.executable).with_name("centrality")
            xid = ["GpuXidObserved", "--cluster", CLUSTER, "--subject", node, "--gpu", "0"]
            emitted = subprocess.run(
                [str(cli), "emit", *xid, "--xid", "79", "--json"],
                env={**os.environ, **env},
                capture_output=True,
                check=True,
                timeout=60,
            )
            xid_id = json.loads(emitted.stdout)["event_id"]
            # Spans arrive as each process exports them: the story is checked until it holds.
            deadline = time.monotonic() + 120.0
            while True:
                try:
                    check_story(receiver.snapshot(), xid_id, topics)
                    break
                except AssertionError:
                    pipeline.check()
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.5)


def check_story(spans: list[ReceivedSpan], xid_id: str, topics: Topics) -> None:
    [emit] = [
        s
        for s in spans
        if s.name == f"emit {topics.nodes}" and s.attributes.get("centrality.event.id") == xid_id
    ]
    assert emit.service == "centrality-emit" and emit.parent_span_id == ""  # a new trace
    story = [s for s in spans if s.trace_id == emit.trace_id]

    def child(of: ReceivedSpan, service: str, name: str) -> ReceivedSpan:
        """The one span named so, by that service, whose parent is `of`."""
        found = [
            s
            for s in story
            if s.service == service and s.name == name and s.parent_span_id == of.span_id
        ]
        assert len(found) == 1, f"{name!r} under {of.name!r}: {found}; all: {sorted(names(story))}"
        return found[0]

    assert [s for s in story if s.parent_span_id == ""] == [emit]  # the one root
    consumed = child(emit, "centrality-streams", f"process {topics.nodes}")
    fold = child(consumed, "centrality-streams", "fold nodes")
    rule = child(fold, "centrality-streams", "rule fatal_xid")
    assert rule.attributes["centrality.event.id"] == xid_id
    [decided] = rule.attributes["centrality.triggers"]  # type: ignore[misc]
    # The trigger left inside the fold that decided it: the action worker continues from there.
    acted = child(fold, "centrality-actions", f"process {topics.triggers}")
    action = child(acted, "centrality-actions", "action QuarantineNodes")
    assert decided == f"QuarantineNodes:{action.attributes['centrality.trigger.id']}"
    assert action.attributes["centrality.outcome"] == "succeeded"
    child(action, "centrality-actions", "adapter memory drain")
    results = [
        s
        for s in story
        if s.name == f"emit {topics.actions}" and s.parent_span_id == action.span_id
    ]
    assert len(results) == 2  # ActionStarted, ActionSucceeded
    # The streams worker reads the results back in the same trace (state follows outcomes).
    for result in results:
        child(result, "centrality-streams", f"process {topics.actions}")
    # The sink stores in batches: its insert links to the trace of each record it stored.
    assert any(
        s.service == "centrality-sink"
        and s.name == "history insert"
        and emit.trace_id in s.linked_trace_ids
        for s in spans
    )


def names(spans: list[ReceivedSpan]) -> set[str]:
    return {f"{s.service}: {s.name}" for s in spans}
