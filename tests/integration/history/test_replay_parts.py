"""Replay on several processes (`streams.analysis.replay.parallel`), reading ClickHouse a part at
a time: each process its own nodes' events and every job's, the whole range's decisions
reproduced."""

from __future__ import annotations

from datetime import timedelta

import pytest

from centrality.bench.history_data import insert_events
from schemas.events import Trigger
from streams.analysis.replay.clickhouse_source import ClickHouseSource, Scope
from streams.analysis.replay.parallel import rerun_parts
from streams.analysis.replay.rerun import compare, current_brain, rerun
from streams.brain.parts import key_hash
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from streams.settings import StreamsSettings
from tests.support.crossing_day import END, START, crossing_day
from tests.support.peer_rule import MODULE as PEER_RULE

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
WARMUP_S = 3600.0
PEER = {"quarantine_peer": {"peer": "n-0001"}}


def recorded_day(settings: ClickHouseSettings, streams: StreamsSettings) -> int:
    """The crossing day written as the sink would, with what `streams`' rules decided then;
    the facts of the replayed range (warm-up included) it holds."""
    facts = crossing_day()
    decided = rerun(facts, current_brain(streams), streams.tick_interval_s)
    with connect(settings) as client:
        insert_events(client, [*facts, *decided])
    return len(facts)


def test_parts_read_and_decide_the_range_the_whole_brain_does(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    facts = recorded_day(clickhouse_settings, StreamsSettings())
    source = ClickHouseSource(clickhouse_settings, Scope(START + timedelta(hours=2), END))
    shares: dict[int, list[float]] = {1: [], 2: [], 3: []}
    whole = rerun_parts(source, WARMUP_S, 1, on_progress=shares[1].append)
    assert whole.parts == 1 and whole.events < facts and whole.recorded
    for count in (2, 3):
        split = rerun_parts(source, WARMUP_S, count, on_progress=shares[count].append)
        assert split.parts == count
        assert shares[count][-1] == 1.0
        assert split.events == whole.events  # each read once, by one part
        decisions = compare(split.decided, whole.recorded)
        assert {d.status for d in decisions} == {"same"} and len(decisions) == len(whole.decided)
        assert sorted(str(t.event_id) for t in split.recorded) == sorted(
            str(t.event_id) for t in whole.recorded
        )
    # Progress, in event time: the whole range's share, never going back.
    for seen in shares.values():
        assert len(seen) > 1 and seen == sorted(seen) and seen[0] >= 0 and seen[-1] <= 1.0, shares
    # The ranges' decisions are the node set's, the nodes' in both parts and the jobs'.
    assert {t.type for t in whole.decided} >= {"QuarantineNodes", "RunBenchmark", "RestartJob"}


def test_a_rule_that_does_not_split_has_the_range_decided_whole(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    streams = StreamsSettings.model_validate({"CENTRALITY_RULES": PEER_RULE, "rule_config": PEER})
    assert PEER_RULE in streams.rule_modules
    recorded_day(clickhouse_settings, streams)
    source = ClickHouseSource(clickhouse_settings, Scope(START, END))
    result = rerun_parts(source, 0.0, 2, streams)
    assert result.parts == 1
    decisions = compare(result.decided, result.recorded)
    assert {d.status for d in decisions} == {"same"}
    assert any(
        isinstance(d.now, Trigger) and d.now.payload.rule == "quarantine_peer" for d in decisions
    )


def test_the_server_cuts_subjects_into_parts_as_python_does(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    subjects = ["n-0001", "gpu-node-17.cluster.local", "nœud-é", "节点-3", "x" * 300, ""]
    with connect(clickhouse_settings) as client:
        rows = client.query(
            "SELECT crc32(s) FROM (SELECT arrayJoin({s:Array(String)}) AS s)",
            parameters={"s": subjects},
        ).result_rows
    assert [r[0] for r in rows] == [key_hash(s) for s in subjects]
