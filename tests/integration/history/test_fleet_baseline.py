"""The fleet baseline a benchmark's pass is judged against (issue 28), read from a real ClickHouse:
the medians of the model's other nodes' latest passing benchmarks within the window."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta

from actions.benchmark.baseline import with_baselines
from centrality.bench.history_data import insert_events
from schemas.events import BenchmarkCompleted
from streams.history.baseline import FleetBaselines, fleet_baseline
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from streams.state.judge import judge
from streams.testing import benchmark
from tests.ports import free_port

H100, A100 = "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"
NOW = datetime.now(UTC).replace(microsecond=0)
WEEK_S = 7 * 86400.0


def bench(node: str, days_ago: float, tflops: float, **kw: object) -> BenchmarkCompleted:
    made = benchmark(node, tflops=tflops, memory_gbps=tflops * 4, model=H100, **kw)  # type: ignore[arg-type]
    return made.model_copy(update={"occurred_at": NOW - timedelta(days=days_ago)})


def test_the_median_of_each_peers_latest_pass_of_the_model(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    events = [
        bench("p1", 1, 800.0, busbw_gbps=400.0),
        bench("p2", 2, 900.0, busbw_gbps=380.0),
        bench("p3", 3, 700.0, busbw_gbps=420.0),
        bench("p3", 6, 100.0),  # p3's older pass: its latest counts, once
        bench("p4", 1, 850.0, busbw_gbps=390.0),
        bench("p5", 1, 50.0, verdict="fail"),  # not healthy
        bench("p6", 9, 50.0),  # outside the window
        benchmark("a1", tflops=250.0, model=A100).model_copy(update={"occurred_at": NOW}),
        bench("h1", 0, 10.0),  # the node benchmarked now is not its own peer
        bench("x1", 1, 10.0).model_copy(update={"cluster": "other"}),
    ]
    with connect(clickhouse_settings) as client:
        insert_events(client, events)
    got = fleet_baseline(clickhouse_settings, "test", H100.lower(), ["h1"], WEEK_S, now=NOW)
    assert (got.peers, got.matmul_tflops, got.memory_gbps, got.busbw_gbps) == (
        4,
        825.0,
        3300.0,
        395.0,
    )
    assert got.unavailable is None and got.window_s == WEEK_S
    # Too few peers of a model: counted, and too few for a verdict.
    a100 = fleet_baseline(clickhouse_settings, "test", A100, ["h1"], WEEK_S, now=NOW)
    assert a100.peers == 1 and a100.matmul_tflops == 250.0 and a100.busbw_gbps is None
    none = fleet_baseline(clickhouse_settings, "test", "NVIDIA B200", [], WEEK_S, now=NOW)
    assert none.peers == 0 and none.matmul_tflops is None

    # As the action worker does it: h1's pass carries its model's baseline, and fails by it.
    h1 = bench("h1", 0, 600.0).payload
    source = FleetBaselines(clickhouse_settings)
    [judged] = with_baselines([h1], source, "test", WEEK_S)
    assert judged.fleet is not None and judged.fleet.peers == 4
    verdict = judge(judged, H100)
    assert verdict.verdict == "fail" and verdict.reasons[0].startswith(
        "slowest GPU's matmul 600.0 TFLOP/s = 73% of the median 825.0 of 4 peers"
    )


def test_the_worker_s_one_client_answers_its_handlers_threads_at_once(
    clickhouse_settings: ClickHouseSettings,
) -> None:
    """Benchmarks finishing together look their baselines up from their own threads, through
    the one client the worker keeps (a session would refuse the concurrent queries)."""
    cluster = "threads"
    peers = [bench(f"c{i}", 1, 800.0 + i).model_copy(update={"cluster": cluster}) for i in range(5)]
    with connect(clickhouse_settings) as client:
        insert_events(client, peers)
    one_by_one = {
        i: fleet_baseline(clickhouse_settings, cluster, H100, [f"c{i}"], WEEK_S) for i in range(5)
    }
    source = FleetBaselines(clickhouse_settings)
    with ThreadPoolExecutor(16) as pool:
        found = list(pool.map(lambda i: source(cluster, H100, [f"c{i % 5}"], WEEK_S), range(64)))
    assert all(b.peers == 4 and b.unavailable is None for b in found)
    assert [b.matmul_tflops for b in found] == [one_by_one[i % 5].matmul_tflops for i in range(64)]
    assert {b.matmul_tflops for b in found} == {801.5, 802.0, 802.5}  # each without its node


def test_history_unreachable_leaves_a_verdict_without_the_fleet_that_says_so() -> None:
    down = ClickHouseSettings(url=f"http://127.0.0.1:{free_port()}", connect_timeout_s=2)
    source = FleetBaselines(down)
    [passed] = with_baselines([bench("h1", 0, 900.0).payload], source, "test", WEEK_S)
    assert passed.fleet is not None and passed.fleet.unavailable == (
        "history unreachable (OperationalError)"
    )
    verdict = judge(passed, H100)
    assert verdict.verdict == "pass"
    assert verdict.basis.endswith("no fleet baseline: history unreachable (OperationalError)")
