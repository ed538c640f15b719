"""A GPU model's fleet baseline from history: the medians of its nodes' recent passing benchmarks.

One query over `events`, bounded by the window (the table is partitioned by day) and the cluster
(its sort key's first column): each peer counts once, by its latest passing benchmark, so a node
benchmarked ten times does not set the median. A benchmark's model is the name its runner saw for
its first GPU (`torch.cuda.get_device_name`, NVML's name).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import datetime, timedelta

from clickhouse_connect.driver.client import Client

from schemas.envelope import utcnow
from schemas.events import FleetBaseline
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings

PEERS_MAX = 10_000  # peers read at most: the median of that many is the fleet's

_MEDIANS = """
SELECT count(), median(tflops), median(memory), median(busbw)
FROM (
    SELECT
        subject,
        argMax(
            nullIf(arrayMin(arrayFilter(x -> x > 0, arrayMap(
                g -> JSONExtractFloat(g, 'matmul_tflops'), JSONExtractArrayRaw(payload, 'gpus')
            ))), 0),
            occurred_at
        ) AS tflops,
        argMax(
            nullIf(arrayMin(arrayFilter(x -> x > 0, arrayMap(
                g -> JSONExtractFloat(g, 'memory_bandwidth_gbps'),
                JSONExtractArrayRaw(payload, 'gpus')
            ))), 0),
            occurred_at
        ) AS memory,
        argMax(JSONExtract(payload, 'nccl_busbw_gbps', 'Nullable(Float64)'), occurred_at) AS busbw
    FROM events
    WHERE cluster = {cluster:String}
      AND type = 'BenchmarkCompleted'
      AND occurred_at >= {since:DateTime64(6, 'UTC')}
      AND subject NOT IN {nodes:Array(String)}
      AND JSONExtractString(payload, 'verdict') = 'pass'
      AND lower(JSONExtractString(payload, 'gpus', 1, 'model')) = lower({model:String})
    GROUP BY subject
    LIMIT {limit:UInt32}
)
"""


def fleet_baseline(
    settings: ClickHouseSettings,
    cluster: str,
    model: str,
    nodes: Sequence[str],
    window_s: float,
    now: datetime | None = None,
) -> FleetBaseline:
    """The baseline of `model` in `cluster`, over nodes other than `nodes` (the benchmarked)."""
    with connect(settings) as client:
        return _baseline(client, cluster, model, nodes, window_s, now)


class FleetBaselines:
    """`fleet_baseline` over one client kept for every look-up (the action worker's source).

    A client costs a query of its own to open (the server's settings): one per benchmark held
    each benchmark's slot among the worker's actions for longer than the benchmark itself (a
    burst of 375 fatal XIDs queued its drains 5 s behind them). Look-ups run in the handlers'
    threads at once: the client has no session, and one that failed is opened anew."""

    def __init__(self, settings: ClickHouseSettings) -> None:
        self.settings = settings
        self._client: Client | None = None
        self._opening = threading.Lock()

    def __call__(
        self, cluster: str, model: str, nodes: Sequence[str], window_s: float
    ) -> FleetBaseline:
        client = self._open()
        try:
            return _baseline(client, cluster, model, nodes, window_s, None)
        except Exception:
            with self._opening:  # the next look-up opens a new one; not closed here, since
                if self._client is client:  # other threads may be querying it right now
                    self._client = None
            raise

    def _open(self) -> Client:
        with self._opening:
            if self._client is None:
                self._client = connect(self.settings, shared=True)
            return self._client


def _baseline(
    client: Client,
    cluster: str,
    model: str,
    nodes: Sequence[str],
    window_s: float,
    now: datetime | None,
) -> FleetBaseline:
    since = (now or utcnow()) - timedelta(seconds=window_s)
    parameters = {
        "cluster": cluster,
        "since": since,
        "nodes": list(nodes),
        "model": model.strip(),
        "limit": PEERS_MAX,
    }
    [(peers, tflops, memory, busbw)] = client.query(_MEDIANS, parameters=parameters).result_rows
    return FleetBaseline(
        model=model,
        window_s=window_s,
        peers=peers,
        matmul_tflops=_finite(tflops),
        memory_gbps=_finite(memory),
        busbw_gbps=_finite(busbw),
    )


def _finite(value: float | None) -> float | None:
    """Median of no values is NaN (or NULL): no figure."""
    return None if value is None or value != value else float(value)
