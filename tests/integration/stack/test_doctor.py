"""`centrality doctor` against the real local stack: what is missing, then all well."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from centrality.stack.stack import Stack
from schemas.runtime.settings import KafkaSettings
from streams.history.settings import ClickHouseSettings

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]


def doctor(env: dict[str, str]) -> tuple[int, dict[str, list[dict[str, str]]]]:
    outside = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")}
    result = subprocess.run(
        [CLI, "doctor", "--json"],
        env={**outside, "PYTHONPATH": str(ROOT), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in result.stderr, result.stderr
    by_check: dict[str, list[dict[str, str]]] = {}
    for finding in orjson.loads(result.stdout):
        by_check.setdefault(finding["check"], []).append(finding)
    return result.returncode, by_check


def test_doctor_says_what_is_missing_and_how_to_fix_it(stack: Stack, unique: str) -> None:
    code, found = doctor(
        {
            **stack.env(),
            "CENTRALITY_KAFKA_TOPIC_PREFIX": f"t{unique}.",  # nothing created under it
            "CENTRALITY_CLICKHOUSE_DATABASE": f"t_{unique}",  # never migrated
        }
    )
    assert code == 1
    assert [f["status"] for f in found["kafka"]] == ["ok"]
    assert [f["status"] for f in found["clickhouse"]] == ["ok"]
    [topics] = found["topics"]
    assert topics["status"] == "fail" and f"t{unique}.jobs" in topics["detail"]
    assert "make up" in topics["fix"]
    [migrations] = found["migrations"]
    assert migrations["status"] == "fail" and "001_" in migrations["detail"]
    assert "make up" in migrations["fix"]


def test_doctor_finds_the_migrated_stack_well(
    stack: Stack, kafka_settings: KafkaSettings, clickhouse_settings: ClickHouseSettings
) -> None:
    code, found = doctor(
        {
            **stack.env(),
            "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka_settings.topic_prefix,
            "CENTRALITY_CLICKHOUSE_DATABASE": clickhouse_settings.database,
        }
    )
    statuses = {check: [f["status"] for f in fs] for check, fs in found.items()}
    assert statuses == {
        check: ["ok"]
        for check in (
            "kafka",
            "topics",
            "clickhouse",
            "migrations",
            "clock",
            "codecs",
            "versions",
            "rules",
        )
    }
    assert code == 0
    assert stack.kafka.bootstrap in found["kafka"][0]["detail"]
    assert "ClickHouse 2" in found["clickhouse"][0]["detail"]  # its version
