"""`centrality rules` and `doctor` count the known nodes each node-group scope selects, and say
which select none; with the fleet unreadable they say so in one line and still list the rules."""

from __future__ import annotations

import orjson
import pytest

from centrality.doctor.rules import rules as rules_check
from centrality.rules_cli import rules
from centrality.scope_nodes import KnownNodes
from schemas.groups import NODES, Facts
from streams.rules.registry import RuleEngine
from streams.settings import BUILTIN_RULES

CONFIG = {
    "repeated_health_failures": {
        "scopes": [
            {"match": {"gpu_model": "NVIDIA A100*"}, "threshold": 5},
            {"match": {"gpu_model": "NVIDIA H100"}, "threshold": 6},  # NVML says more than that
            {"match": {"cluster": "a", "label": {"pool": "inference"}}, "threshold": 7},
        ]
    },
    "restart_incomplete_exit": {"scopes": [{"match": {"partition": "x"}, "max_restarts": 9}]},
}


def fleet(*nodes: Facts) -> KnownNodes:
    return KnownNodes(nodes)


def node(name: str, cluster: str = "a", **facts: object) -> Facts:
    return Facts(NODES, cluster, node=name, **facts)  # type: ignore[arg-type]


def loaded() -> RuleEngine:
    return RuleEngine.load(BUILTIN_RULES, CONFIG)


def test_each_scope_counts_the_known_nodes_it_selects() -> None:
    known = fleet(
        node("a1", gpu_model="NVIDIA A100-SXM4-80GB", labels={"pool": "inference"}),
        node("a2", gpu_model="NVIDIA A100-SXM4-80GB"),
        node("b1", cluster="b", labels={"pool": "inference"}),
    )
    engine = loaded()
    health = next(b for b in engine.rules if b.spec.name == "repeated_health_failures")
    assert known.counts(health) == [2, 0, 1]
    # A job class selects jobs, not nodes: not counted, never reported.
    restart = next(b for b in engine.rules if b.spec.name == "restart_incomplete_exit")
    assert known.counts(restart) == [None]
    assert known.empty_scopes(engine.rules) == [
        "rule 'repeated_health_failures' scopes.1 (gpu_model=NVIDIA H100)"
    ]
    # Unread, or no node known yet (a fleet starting): nothing counted, nothing reported.
    assert KnownNodes(None, "away").counts(health) == [None, None, None]
    assert fleet().empty_scopes(engine.rules) == []


@pytest.fixture
def kafka_away(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CENTRALITY_RULES", raising=False)
    monkeypatch.setenv("CENTRALITY_KAFKA_BOOTSTRAP", "127.0.0.1:1")  # nothing listens there
    monkeypatch.setenv("CENTRALITY_STREAMS_RULE_CONFIG", orjson.dumps(CONFIG).decode())


@pytest.mark.usefixtures("kafka_away")
def test_with_the_fleet_unread_rules_are_listed_and_it_says_so_in_one_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    rules(json=True)
    out, err = capsys.readouterr()
    # (aiokafka's own log lines may come too, where an earlier test set up logging)
    said = [line for line in err.splitlines() if "fleet" in line]
    assert said == [
        "fleet not read, scopes' nodes not counted: Kafka at 127.0.0.1:1 is unreachable"
    ]
    rows = {r["rule"]: r for r in orjson.loads(out)}
    assert [s["nodes"] for s in rows["repeated_health_failures"]["scopes"]] == [None] * 3
    assert {"fatal_xid", "quarantine_story"} <= set(rows)
    [finding] = rules_check()
    assert finding.status == "ok"
    assert "scopes not checked against the fleet: Kafka at 127.0.0.1:1 is unreachable" in (
        finding.detail
    )
