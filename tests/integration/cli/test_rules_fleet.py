"""`centrality rules` and `doctor` read the fleet from the real status topic: each node-group
scope with the known nodes it selects, and the doctor's warning on one that selects none."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import orjson
import pytest

from centrality.doctor.rules import rules as rules_check
from centrality.rules_cli import rules
from centrality.stack.stack import Stack
from schemas.events import NodeStatusChanged
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings

pytestmark = pytest.mark.integration

CONFIG = {
    "repeated_health_failures": {
        "scopes": [
            {"match": {"gpu_model": "NVIDIA A100*"}, "threshold": 5},
            {"match": {"gpu_model": "NVIDIA H100"}, "threshold": 6},
        ]
    }
}


async def tell(kafka: KafkaSettings) -> None:
    async with Emitter(kafka) as emitter:
        for i in range(3):
            await emitter.emit(
                NodeStatusChanged(
                    source="streams",
                    cluster="a",
                    subject=f"a{i}",
                    occurred_at=datetime.now(UTC),
                    payload={"state": "in_service", "gpu_model": "NVIDIA A100-SXM4-80GB"},
                )
            )


def test_rules_count_the_known_nodes_of_each_scope_and_doctor_warns_on_none(
    stack: Stack,
    kafka_settings: KafkaSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    asyncio.run(tell(kafka_settings))
    for name, value in stack.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CENTRALITY_KAFKA_TOPIC_PREFIX", kafka_settings.topic_prefix)
    monkeypatch.delenv("CENTRALITY_RULES", raising=False)
    monkeypatch.setenv("CENTRALITY_STREAMS_RULE_CONFIG", orjson.dumps(CONFIG).decode())
    rules(json=True)
    out, err = capsys.readouterr()
    assert "fleet not read" not in err
    rows = {r["rule"]: r for r in orjson.loads(out)}
    assert [s["nodes"] for s in rows["repeated_health_failures"]["scopes"]] == [3, 0]
    monkeypatch.setenv("COLUMNS", "250")
    rules(json=False)
    table = capsys.readouterr().out
    assert "3 nodes" in table and "no known node" in table
    [finding] = rules_check()
    assert finding.status == "warn"
    assert finding.detail.endswith(
        "scopes selecting no known node: rule 'repeated_health_failures' scopes.1 "
        "(gpu_model=NVIDIA H100)"
    )
