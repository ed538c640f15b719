"""Dashboard aggregates count an event once, even when the sink wrote it twice."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from centrality.bench.history_data import insert_events, results_of
from schemas.envelope import Event
from schemas.events import GpuSampled, GpuXidObserved, JobExited, RestartJob
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings


def facts(at: datetime) -> list[Event]:
    env = {"source": "sim", "cluster": "sim", "occurred_at": at}
    failed = JobExited(
        **env,
        subject="slurm/sim/1",
        payload={"state": "FAILED", "exit_code": 1, "nodes": ["n-1", "n-2"], "gpus": 16},
    )
    restart = RestartJob.decide(
        cause=failed,
        source="rule/test",
        rule="restart_incomplete_exit",
        window="attempt-1",
        reason="test",
        checkpoint_uri=None,
        attempt=1,
    )
    return [
        failed,
        GpuSampled(**env, subject="n-1", payload={"gpu": 3, "ecc_double_bit": 2}),
        GpuXidObserved(**env, subject="n-1", payload={"gpu": 3, "xid": 79, "message": "off"}),
        *results_of(restart),
    ]


def test_a_duplicate_event_is_counted_once(clickhouse_settings: ClickHouseSettings) -> None:
    at = datetime.now(UTC).replace(minute=10, second=0, microsecond=0) - timedelta(hours=1)
    first = facts(at)
    later = JobExited(
        source="sim",
        cluster="sim",
        subject="slurm/sim/2",
        occurred_at=at + timedelta(minutes=1),
        payload={"state": "SUCCEEDED", "exit_code": 0, "nodes": ["n-1"], "gpus": 8},
    )
    with connect(clickhouse_settings) as client:
        # As a sink restarted mid-batch does: the batch again, with more, under no shared token.
        insert_events(client, first)
        insert_events(client, [*first, later])
        copies = client.query(
            "SELECT count() FROM events WHERE event_id = {id:UUID}",
            parameters={"id": first[0].event_id},
        ).result_rows
        assert copies == [(2,)]  # the duplicate did reach the table, and so its views

        def one(sql: str) -> tuple[object, ...]:
            [row] = client.query(sql).result_rows
            return tuple(row)

        assert one(
            "SELECT sum(exits), sum(failures) FROM node_failures_hourly WHERE node = 'n-1'"
        ) == (2, 1)
        assert one("SELECT sum(exits), sum(failures) FROM node_failures_hourly") == (3, 2)
        assert one(
            "SELECT sum(samples), sum(ecc_uncorrected), sum(nvlink_errors), sum(xids) "
            "FROM gpu_errors_hourly WHERE node = 'n-1' AND gpu = 3"
        ) == (1, 1, 0, 1)
        assert one(
            "SELECT sum(exits), sum(succeeded), sum(failed), sum(gpus), sum(gpus_succeeded) "
            "FROM job_goodput_hourly"
        ) == (2, 1, 1, 24, 8)
        assert one(
            "SELECT groupArray((outcome, results)) FROM "
            "(SELECT outcome, sum(results) AS results FROM actions_hourly "
            "GROUP BY outcome ORDER BY outcome)"
        ) == ([("started", 1), ("succeeded", 1)],)
