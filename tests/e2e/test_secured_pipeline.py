"""The whole pipeline on a secured stack: Kafka over SASL_SSL (SCRAM-SHA-512, the test CA) and
ClickHouse over HTTPS with a password, driven by the `centrality` commands an operator runs. The
secrets are distinctive strings; no log line and no `--json` output may contain them."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from centrality.pipeline import Pipeline
from schemas.envelope import Event
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.topics import CATALOG
from streams.history.query import wait_for_types
from streams.testing import checkpoint
from tests.factories import exited
from tests.support.secured import Secured
from tests.support.triggers import TRIGGER_KEY

pytestmark = pytest.mark.e2e

CLI = str(Path(sys.executable).with_name("centrality"))


def centrality(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [CLI, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, f"centrality {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done


def test_a_story_runs_secured_and_no_secret_is_ever_printed(
    secured: Secured, unique: str, tmp_path: Path
) -> None:
    kafka = secured.kafka("SASL_SSL", "SCRAM-SHA-512").model_copy(
        update={"topic_prefix": f"s{unique}."}
    )
    env = {
        **secured.env(kafka),
        "CENTRALITY_KAFKA_TOPIC_PREFIX": kafka.topic_prefix,
        "CENTRALITY_CLICKHOUSE_DATABASE": f"s_{unique}",
        "CENTRALITY_STACK_STATE_DIR": str(tmp_path / "state"),
        "CENTRALITY_TRIGGER_KEY": TRIGGER_KEY.get_secret_value(),
        "CENTRALITY_TRIGGER_KEY_FILE": str(tmp_path / "trigger.key"),
        "CENTRALITY_STREAMS_APP_ID": f"streams-{unique}",
        "CENTRALITY_STREAMS_DATA_DIR": str(tmp_path / "streams"),
        "CENTRALITY_ACTIONS_GROUP_ID": f"actions-{unique}",
        "CENTRALITY_SINK_GROUP_ID": f"sink-{unique}",
        "CENTRALITY_SINK_BATCH_MAX_MS": "200",
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool"),
    }
    clickhouse = secured.clickhouse.model_copy(update={"database": f"s_{unique}"})
    shown: list[str] = []  # everything the commands printed, stdout and stderr

    up = centrality(env, "up", "--json")  # the user's Kafka and ClickHouse: topics, migrations
    shown += [up.stdout, up.stderr]
    assert len(json.loads(up.stdout)["catalog"]["created"]) == len(CATALOG)
    status = centrality(env, "status", "--json")
    shown += [status.stdout, status.stderr]
    assert {s["name"]: s["running"] for s in json.loads(status.stdout)} == {
        "kafka": True,
        "clickhouse": True,
    }

    crashed = f"slurm/sec/{unique}"
    start = datetime.now(UTC) - timedelta(minutes=5) - datetime(2026, 1, 1, tzinfo=UTC)
    events: list[Event] = [
        checkpoint(1200, subject=crashed, at_s=start.total_seconds()),
        exited("FAILED", subject=crashed, at_s=start.total_seconds() + 10),
    ]
    with Pipeline(env, tmp_path / "logs") as pipeline:
        asyncio.run(_emit(kafka, events))
        rows = wait_for_types(
            clickhouse, [crashed], {"RestartJob", "ActionSucceeded"}, 150.0, pipeline.check
        )
        emitted = centrality(
            env, "emit", "NodeHeartbeat", "--cluster", "sec", "--subject", f"n-{unique}",
            "--agent_version", "1", "--gpus", "8", "--interval_s", "30", "--json",
        )  # fmt: skip
        assert "Kafka unreachable" not in emitted.stderr  # sent, not spooled
        shown += [emitted.stdout, emitted.stderr]
        lag = centrality(env, "history", "lag", "--json")
        shown += [lag.stdout, lag.stderr]
    assert {str(e.event_id) for e in events} <= {r.event_id for r in rows}
    timeline = centrality(env, "history", "job", crashed, "--json")
    shown += [timeline.stdout, timeline.stderr]
    assert "RestartJob" in timeline.stdout

    logs = {p.name: p.read_text(errors="replace") for p in (tmp_path / "logs").iterdir()}
    assert set(logs) == {"streams.log", "actions.log", "sink.log"}
    assert all(logs.values()), "every worker logged something"
    for secret in (secured.kafka_password, secured.clickhouse_password):
        assert secret not in "\n".join(shown)
        for name, text in logs.items():
            assert secret not in text, f"{name} shows a secret"


async def _emit(settings: KafkaSettings, events: list[Event]) -> None:
    async with Emitter(settings) as emitter:
        for event in events:
            await emitter.emit(event)
