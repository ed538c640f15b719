"""`centrality doctor` with nothing running: what failed, what it did not check, what to do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from tests.ports import free_port

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]


def test_doctor_against_closed_ports_says_what_to_start() -> None:
    closed = free_port()
    outside = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")}
    env = {
        **outside,
        "PYTHONPATH": str(ROOT),
        "CENTRALITY_KAFKA_BOOTSTRAP": f"127.0.0.1:{closed}",
        "CENTRALITY_CLICKHOUSE_URL": f"http://127.0.0.1:{closed}",
    }
    result = subprocess.run(
        [CLI, "doctor", "--json"], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert "Traceback" not in result.stderr and result.stderr == ""
    found = {f["check"]: f for f in orjson.loads(result.stdout)}
    assert found["kafka"]["status"] == "fail"
    assert found["kafka"]["detail"] == f"Kafka at 127.0.0.1:{closed} is unreachable"
    assert (
        "make up" in found["kafka"]["fix"] and "CENTRALITY_KAFKA_BOOTSTRAP" in found["kafka"]["fix"]
    )
    assert (
        found["clickhouse"]["detail"] == f"ClickHouse at http://127.0.0.1:{closed} is unreachable"
    )
    assert "make up" in found["clickhouse"]["fix"]
    for dependent, on in (
        ("topics", "kafka"),
        ("migrations", "clickhouse"),
        ("clock", "clickhouse"),
    ):
        assert found[dependent]["status"] == "skip" and on in found[dependent]["detail"]
    assert found["codecs"]["status"] == found["versions"]["status"] == "ok"

    table = subprocess.run(
        [CLI, "doctor"], env={**env, "COLUMNS": "200"}, capture_output=True, text=True, timeout=120
    )
    assert table.returncode == 1 and "FAIL" in table.stdout and "make up" in table.stdout
