from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from centrality.cli import app

FIXTURES = Path(__file__).parent / "fixtures"


def test_simulate_dry_run_prints_one_json_line() -> None:
    result = CliRunner().invoke(
        app, ["simulate", "--nodes", "50", "--duration-s", "30", "--dry-run", "--json"]
    )
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert doc["ticks"] == 4 and doc["by_type"]["GpuSampled"] == 4 * 50 * 8
    assert doc["events_per_s"] > 0


def test_simulate_says_when_it_cannot_keep_the_pace_asked_for() -> None:
    # 500 nodes x 8 GPUs every 10 s of cluster time, at x10,000: a millisecond per tick.
    args = ["simulate", "--nodes", "500", "--duration-s", "60", "--speed", "10000"]
    result = CliRunner().invoke(app, [*args, "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert doc["realtime_ratio"] < 0.95 and doc["behind_s_max"] > 0
    assert "the simulator fell behind real time x10000" in " ".join(result.stderr.split())


def test_nccl_file_summary() -> None:
    path = FIXTURES / "all_reduce_perf_2x8.txt"
    result = CliRunner().invoke(app, ["nccl", str(path), "--node", "n1", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert (doc["rows"], doc["ranks"], doc["max_busbw_gbps"]) == (8, 16, 177.35)


def test_nccl_file_of_a_failed_run_sends_nothing_and_exits_1() -> None:
    path = FIXTURES.parents[2] / "fixtures/realworld/nccl/inc_switch_4gpu_wrong_counts_failed.txt"
    result = CliRunner().invoke(app, ["nccl", str(path), "--node", "n1", "--dry-run", "--json"])
    assert result.exit_code == 1, result.output
    doc = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert (doc["rows"], doc["sent"], doc["ranks"]) == (27, 0, 4)
    assert doc["invalid_runs"] == [
        "unknown: 216 out-of-bounds values, 27 of 27 sizes with wrong elements"
    ]


def test_every_collector_command_is_registered() -> None:
    names = {c.name for c in app.registered_commands}
    assert {"agent", "tail", "checkpoints", "nccl", "simulate"} <= names
    groups = {g.name for g in app.registered_groups}
    assert {"watch", "bench"} <= groups


def test_simulate_lists_what_it_faulted_and_ends_its_period_now() -> None:
    args = ["simulate", "--nodes", "20", "--xid-nodes", "2", "--crash-jobs", "1"]
    result = CliRunner().invoke(app, [*args, "--duration-s", "900", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout.strip().splitlines()[-1])
    xids = [f for f in doc["faulted"] if f["how"] == "XID 79"]
    assert len(xids) == 2 and all(f["kind"] == "node" and f["count"] >= 2 for f in xids)
    assert {f["kind"] for f in doc["faulted"]} == {"node", "job"}
    first, last = datetime.fromisoformat(doc["first_at"]), datetime.fromisoformat(doc["last_at"])
    assert (last - first).total_seconds() == 900 and last <= datetime.now(UTC)
    table = CliRunner().invoke(app, [*args, "--duration-s", "900", "--dry-run"])
    assert table.exit_code == 0 and "faulted" in table.stdout and "XID 79" in table.stdout


def test_simulate_bad_nodes_need_the_file_the_memory_adapter_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CENTRALITY_MEMORY_UNHEALTHY_FILE", raising=False)
    args = ["simulate", "--nodes", "8", "--bad-nodes", "2", "--duration-s", "30", "--dry-run"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2
    assert "CENTRALITY_MEMORY_UNHEALTHY_FILE" in " ".join(result.stderr.split())
