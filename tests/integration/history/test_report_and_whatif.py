"""`centrality report` and `centrality whatif` on ClickHouse: a day whose outcomes are known,
stored twice, judged once; the replay bench's day re-decided under a candidate, priced, kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import orjson
import pytest
from typer.testing import CliRunner

from centrality.bench.history_data import insert_events
from centrality.bench.replay import record_a_day
from centrality.cli import app
from schemas.events import RestartJob
from streams.history.client import connect
from streams.history.query import events_between
from streams.history.settings import ClickHouseSettings
from streams.testing import T0
from tests.support.outcome_day import (
    BENCHMARK_S,
    CONFIRMED,
    DRAIN_S,
    FALSE_ALARM,
    LEMON,
    outcome_day,
)

pytestmark = pytest.mark.usefixtures("cli_env")
runner = CliRunner()


def invoke(*args: str) -> dict:  # type: ignore[type-arg]
    result = runner.invoke(app, list(args))
    assert result.exit_code == 0, result.output
    return orjson.loads(result.stdout)  # type: ignore[no-any-return]


def test_report_judges_each_rule_once_however_often_history_was_written(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    day = outcome_day()
    with connect(clickhouse_settings) as client:
        insert_events(client, day.events)
        insert_events(client, day.events)  # the sink wrote everything twice (a restart)
    span = ("--since", T0.isoformat(), "--until", (T0 + timedelta(days=1)).isoformat())
    doc = invoke("report", *span, "--json")
    quarantines = doc["quarantines"]
    for rule in CONFIRMED.values():
        assert (quarantines[rule]["confirmed"], quarantines[rule]["decisions"]) == (1, 1)
        assert quarantines[rule]["precision"] == 1.0
    for rule in FALSE_ALARM.values():
        assert (quarantines[rule]["false_alarm"], quarantines[rule]["precision"]) == (1, 0.0)
    assert doc["restarts"]["restart_incomplete_exit"]["failed_again"] == 1
    assert doc["restarts"]["restart_incomplete_exit"]["held"] == 2
    steps = {s["name"]: s for s in doc["steps"]}
    assert steps["decided_to_drained"]["p99_s"] == DRAIN_S
    assert steps["drained_to_validated"]["p50_s"] == BENCHMARK_S
    assert [x["node"] for x in doc["lemons"]["nodes"]] == [LEMON]
    assert "chance" in doc["lemons"] and doc["lemons"]["nodes_judged"] > 10
    assert 0 < doc["ettr"]["all"]["ettr"] < 1 and doc["ettr"]["clusters"]["test"]["jobs"] > 40
    again = invoke("report", *span, "--json")
    assert again["quarantines"] == quarantines
    judged = len(doc["stories"]) + len(doc["restart_outcomes"])
    with connect(clickhouse_settings) as client:
        rows = client.query("SELECT count() FROM rule_outcomes FINAL").result_rows
        reports = client.query("SELECT count() FROM reports").result_rows
        lemons = client.query("SELECT DISTINCT node FROM lemon_nodes").result_rows
        jobs = client.query("SELECT count() FROM job_ettr FINAL").result_rows
    assert rows == [(judged,)] and reports == [(2,)] and lemons == [(LEMON,)]
    assert jobs == [(len(doc["ettr"]["jobs"]),)]
    table = runner.invoke(app, ["report", *span, "--no-store"])
    assert table.exit_code == 0 and "Lemon nodes" in table.stdout and LEMON in table.stdout


def test_whatif_prices_the_replay_bench_day_under_a_candidate(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    now = datetime.now(UTC)
    record_a_day(clickhouse_settings, now, jobs=12, nodes=3, tick_s=5.0)
    since, until = now - timedelta(days=1, minutes=1), now + timedelta(minutes=1)
    restarts = [
        e for e in events_between(clickhouse_settings, since, until) if isinstance(e, RestartJob)
    ]
    span = ("--since", since.isoformat(), "--until", until.isoformat(), "--parts", "2")
    doc = invoke("whatif", *span, "--set", "restart_incomplete_exit.max_restarts=0", "--json")
    row = doc["rules"]["restart_incomplete_exit"]
    assert restarts and (row["then"], row["now"], row["missing"]) == (
        len(restarts),
        0,
        len(restarts),
    )
    # Each restart not made leaves a 16-GPU job dead for a person's 30 minutes.
    assert row["work_gpu_h"] == pytest.approx(16 * 0.5 * len(restarts))
    assert doc["total"]["gpu_h"] == pytest.approx(row["gpu_h"])
    assert doc["assumptions"]["response_s"] == 1800 and doc["not_priced"] == {}
    assert len(doc["priced"]) == len(restarts) and doc["groups"][0]["cluster"] == "sim"
    with connect(clickhouse_settings) as client:
        [(decisions, gpu_h)] = client.query(
            "SELECT count(), sum(gpu_hours) FROM whatif_decisions WHERE run_id = {r:UUID}",
            parameters={"r": doc["run_id"]},
        ).result_rows
        [(candidate,)] = client.query("SELECT candidate FROM whatif_runs").result_rows
    assert decisions == len(restarts) and gpu_h == pytest.approx(row["gpu_h"])
    assert candidate == "restart_incomplete_exit.max_restarts=0"
    refused = runner.invoke(app, ["whatif", *span])
    assert refused.exit_code == 2 and "no candidate rules" in refused.stderr
    bad = runner.invoke(app, ["whatif", *span, "--set", "restart_incomplete_exit.nope=1"])
    assert bad.exit_code == 2 and "cannot be loaded" in bad.stderr
