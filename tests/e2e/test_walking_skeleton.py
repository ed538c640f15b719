"""JobExited → rule → RestartJob → action → ActionSucceeded → ClickHouse, on the real stack."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from centrality.pipeline import Pipeline
from schemas.envelope import Event
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.history.query import rows_for, wait_for_types
from streams.history.settings import ClickHouseSettings
from streams.testing import checkpoint, completed
from tests.factories import exited

pytestmark = pytest.mark.e2e


async def emit(settings: KafkaSettings, events: list[Event]) -> None:
    async with Emitter(settings) as emitter:
        for event in events:
            await emitter.emit(event)


def test_crash_without_completion_is_restarted_from_checkpoint_and_recorded(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    unique: str,
    tmp_path: Path,
) -> None:
    crashed, finished = f"slurm/e2e/{unique}-1", f"slurm/e2e/{unique}-2"
    start = (
        datetime.now(UTC) - timedelta(minutes=5) - datetime(2026, 1, 1, tzinfo=UTC)
    ).total_seconds()
    events: list[Event] = [
        checkpoint(1200, subject=crashed, at_s=start),
        checkpoint(900, subject=finished, at_s=start),
        completed(subject=finished, at_s=start + 5),
        exited("SUCCEEDED", subject=finished, at_s=start + 6, exit_code=0),
        exited("FAILED", subject=crashed, at_s=start + 10),
    ]
    with Pipeline(worker_env, tmp_path / "logs") as pipeline:
        asyncio.run(emit(kafka_settings, events))
        rows = wait_for_types(
            clickhouse_settings,
            [crashed, finished],
            {"RestartJob", "ActionSucceeded"},
            150.0,
            pipeline.check,
        )

    by_type: dict[str, list[dict[str, object]]] = {}
    for row in rows:
        by_type.setdefault(row.type, []).append(
            {"subject": row.subject, "id": row.event_id, **json.loads(row.payload)}
        )
    # Everything emitted reached history, exactly once.
    assert {str(e.event_id) for e in events} <= {r.event_id for r in rows}
    assert len(rows) == len({r.event_id for r in rows})

    [restart] = by_type["RestartJob"]
    assert restart["subject"] == crashed
    assert restart["checkpoint_uri"] == "s3://ckpt/step-1200"
    assert restart["caused_by"] == [str(events[-1].event_id)]

    [started] = by_type["ActionStarted"]
    [succeeded] = by_type["ActionSucceeded"]
    for result in (started, succeeded):
        assert result["trigger_id"] == restart["id"]
        assert result["subject"] == crashed
    detail = succeeded["detail"]
    assert isinstance(detail, dict)
    assert detail["job_id"] == crashed
    assert detail["checkpoint_uri"] == "s3://ckpt/step-1200"

    # The finished job said 'Training Complete': no trigger, no action (what people read of it,
    # its status, changed with each of its events).
    told = {"CheckpointSaved", "LogSignalDetected", "JobExited", "JobStatusChanged"}
    assert all(r.subject == crashed for r in rows if r.type not in told)
    of_finished = [r.type for r in rows_for(clickhouse_settings, [finished])]
    assert sorted(t for t in of_finished if t != "JobStatusChanged") == [
        "CheckpointSaved",
        "JobExited",
        "LogSignalDetected",
    ]
