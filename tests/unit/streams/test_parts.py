"""A brain cut into parts by node key decides what the whole brain decides
(`streams.brain.parts`)."""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest

from schemas.envelope import Event
from schemas.events import Trigger
from streams.analysis.replay.rerun import rerun_stream
from streams.brain.parts import NotSplittable, Part, PartBrain, split_types
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.testing import checkpoint, facts, running, sample, step_times
from tests.support.crossing_day import PAIR, crossing_day
from tests.support.peer_rule import MODULE as PEER_RULE

TICK_S = StreamsSettings().tick_interval_s


def engine(
    modules: Iterable[str] = (), config: dict[str, dict[str, str]] | None = None
) -> RuleEngine:
    return RuleEngine.load([*StreamsSettings().rule_modules, *modules], config or {})


@pytest.fixture(scope="module")
def history() -> list[Event]:
    return crossing_day()


@pytest.fixture(scope="module")
def whole(history: list[Event]) -> list[Trigger]:
    """What the whole brain decides on the history: what every split is held to."""
    return rerun_stream(history, Brain(engine()), TICK_S)


def reads(part: Part, event: Event) -> bool:
    """What the part's query selects (`ClickHouseSource.stream`), decisions of then aside."""
    return event.type not in split_types() or part.holds(event.subject)


def decisions(triggers: list[Trigger]) -> list[tuple[str, str, str]]:
    """Each decision as replay compares it (its time of making, `observed_at`, aside)."""
    return sorted((str(t.event_id), t.type, t.payload.model_dump_json()) for t in triggers)


def part_of(node: str, count: int) -> int:
    [index] = [i for i in range(count) if Part(i, count).holds(node)]
    return index


def decided_by_parts(facts: list[Event], count: int, rules: RuleEngine) -> list[Trigger]:
    decided: list[Trigger] = []
    for index in range(count):
        part = Part(index, count)
        decided += rerun_stream(
            [e for e in facts if reads(part, e)], PartBrain(rules, part), TICK_S
        )
    return decided


@pytest.mark.parametrize("count", [2, 3])
def test_parts_decide_what_the_whole_brain_decides(
    history: list[Event], whole: list[Trigger], count: int
) -> None:
    assert part_of(PAIR[0], count) != part_of(PAIR[1], count)
    parts = decided_by_parts(history, count, engine())
    assert decisions(parts) == decisions(whole)
    # What crosses parts was decided: a node set's quarantine of nodes in two parts, its results
    # reaching both (their benchmarks), and each node's own decisions.
    rules = Counter(t.payload.rule for t in whole)
    assert rules["repeated_failures_on_node_set"] >= 1 and rules["fatal_xid"] >= 1, rules
    benchmarked = {n for t in whole if t.type == "RunBenchmark" for n in t.payload.nodes}
    assert set(PAIR) <= benchmarked, benchmarked


def test_a_node_rule_naming_a_node_of_another_part_cannot_be_split(history: list[Event]) -> None:
    facts = history
    rules = engine([PEER_RULE], {"quarantine_peer": {"peer": PAIR[0]}})
    with pytest.raises(NotSplittable, match="another part"):
        decided_by_parts(facts, 2, rules)
    assert any(
        t.payload.rule == "quarantine_peer" for t in rerun_stream(facts, Brain(rules), TICK_S)
    )


def test_a_part_is_one_of_its_count() -> None:
    with pytest.raises(ValueError, match="does not exist"):
        Part(2, 2)
    assert sum(Part(i, 3).holds("n-0042") for i in range(3)) == 1


def test_the_live_path_knows_nothing_of_parts() -> None:
    """Parts wrap the brain (`PartBrain`): the step, the brain and the live worker are plain."""
    streams = Path(__file__).resolve().parents[3] / "streams"
    for name in ("state/entities.py", "brain/process.py", "faust/app.py"):
        tree = ast.parse((streams / name).read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)} | {
            a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names
        }
        assert "streams.brain.parts" not in imported, name


def _slow_day() -> list[Event]:
    """A job on four nodes: one host behind the others in step times, another's GPU throttling
    under it, checkpoints every half hour; what the nodes decide rests on what the job tells."""
    hosts = ("n1", "n2", "n3", "n4")
    day: list[Event] = [
        facts("n2", gpu_model="NVIDIA H100 80GB HBM3"),
        running(nodes=hosts, at_s=1.0),
    ]
    for t in range(60, 7200, 60):
        day += [step_times(h, 1.8 if h == "n3" and t > 4200 else 1.0, at_s=t) for h in hosts]
        day.append(sample("n2", gpu=1, at_s=t + 1, utilization_pct=99.0, sm_clock_mhz=1000,
                          throttle_reasons=("HwSlowdown",)))  # fmt: skip
    day += [checkpoint(i, at_s=1800.0 * i + 5) for i in range(1, 4)]
    return sorted(day, key=lambda e: e.occurred_at)


@pytest.mark.parametrize("count", [2, 3])
def test_a_slow_node_s_decisions_split_by_node(count: int) -> None:
    history = _slow_day()
    whole = rerun_stream(history, Brain(engine()), TICK_S)
    assert {t.payload.rule for t in whole} >= {"slow_node"}, whole
    assert decisions(decided_by_parts(history, count, engine())) == decisions(whole)
