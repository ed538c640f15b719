"""Grafana's driver, clickhouse-go over HTTP, reads every dashboard query and batch-inserts.

Grafana's ClickHouse plugin talks through clickhouse-go (Native at the client's protocol revision,
compressed blocks); no Grafana is installable here, so its driver, at the plugin's pinned version,
runs the dashboards' SQL with the macros expanded as the plugin would (tests/grafana_macros.py).
The Go program is tests/go/clickhouse; the module proxy fills the default module cache once.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from streams.history.client import connect
from streams.history.settings import ClickHouseSettings
from tests.grafana_macros import expand, panel_queries, variable_queries
from tests.integration.history.conftest import DashboardHistory

MINUTE = timedelta(minutes=1)  # the panels' interval

GO_MODULE = Path(__file__).resolve().parents[2] / "go" / "clickhouse"
COMPRESSIONS = ("none", "lz4", "zstd", "gzip", "br")
# The first run downloads clickhouse-go and its dependencies; later runs take seconds.
GO_TIMEOUT_S = 280
# Beyond what the dashboards select: every layout the server must walk to re-frame a block.
WIDE_TYPES = """
SELECT toInt8(-1) AS i8, toUInt128(1) AS u128, toInt256(-5) AS i256, toFloat32(1.5) AS f32,
    toDecimal128(3.25, 4) AS d128, toDate('2026-01-02') AS d, toDate32('1900-01-01') AS d32,
    toDateTime64('2026-01-02 03:04:05.678', 3, 'Asia/Tokyo') AS dt64,
    toDateTime(number, 'Europe/Berlin') AS dtz, generateUUIDv4() AS u, toIPv4('1.2.3.4') AS ip4,
    toIPv6('::1') AS ip6, CAST('b', 'Enum8(\\'a\\' = 1, \\'b\\' = 2)') AS e, true AS b,
    toFixedString('ab', 3) AS fs, [toNullable(number), NULL] AS an,
    toLowCardinality(if(number = 1, NULL, toString(number))) AS lcn, map('k', [number]) AS m,
    CAST((number, 'x'), 'Tuple(a UInt64, b String)') AS t, [[toString(number)]] AS aa,
    if(number = 2, NULL, number) AS nn
FROM numbers(3)
"""
WIDE_TYPE_NAMES = [
    "Int8", "UInt128", "Int256", "Float32", "Decimal(38, 4)", "Date", "Date32",
    "DateTime64(3, 'Asia/Tokyo')", "DateTime('Europe/Berlin')", "UUID", "IPv4", "IPv6",
    "Enum8('a' = 1, 'b' = 2)", "Bool", "FixedString(3)", "Array(Nullable(UInt64))",
    "LowCardinality(Nullable(String))", "Map(String, Array(UInt64))",
    "Tuple(a UInt64, b String)", "Array(Array(String))", "Nullable(UInt64)",
]  # fmt: skip


def _run_go(plan: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    go = shutil.which("go")
    if go is None:
        pytest.fail("the Go toolchain (`go`) is needed to run clickhouse-go against the server")
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan))
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    done = subprocess.run(
        [go, "run", ".", str(plan_file)],
        cwd=GO_MODULE,
        env=env,
        capture_output=True,
        text=True,
        timeout=GO_TIMEOUT_S,
        check=False,
    )
    assert done.returncode == 0, f"clickhouse-go failed:\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_clickhouse_go_reads_every_dashboard_query_and_inserts(
    dashboard_history: DashboardHistory, clickhouse_settings: ClickHouseSettings, tmp_path: Path
) -> None:
    h = dashboard_history
    variables = [
        (f"{board} ${name}", name, expand(sql, h.start, h.end, MINUTE, h.variables))
        for board, name, sql in variable_queries()
    ]
    panels = [
        (f"{q.dashboard} / {q.panel}", expand(q.sql, h.start, h.end, MINUTE, h.variables))
        for q in panel_queries()
    ]
    assert len(variables) >= 5 and len(panels) >= 20
    password = clickhouse_settings.password
    plan = {
        "addr": f"{clickhouse_settings.host}:{clickhouse_settings.port}",
        "user": clickhouse_settings.user,
        "password": password.get_secret_value() if password else "",
        "database": clickhouse_settings.database,
        "queries": [{"name": n, "sql": sql} for n, _, sql in variables]
        + [{"name": n, "sql": sql} for n, sql in panels]
        + [{"name": "wide types", "sql": WIDE_TYPES}],
    }

    result = _run_go(plan, tmp_path)

    assert "26." in result["server_version"]
    by_key = {(q["name"], q["compression"]): q for q in result["queries"]}
    assert len(by_key) == len(plan["queries"]) * len(COMPRESSIONS)
    for compression in COMPRESSIONS:
        for label, name, _ in variables:
            found = by_key[(label, compression)]["first_column"]
            assert h.variables[name] in found, f"{compression}: {label}: {found}"
        empty = [label for label, _ in panels if by_key[(label, compression)]["rows"] == 0]
        assert not empty, f"{compression}: panels without rows: {empty}"
    # Every scanned column carried its ClickHouse type, time zones included.
    for q in result["queries"]:
        assert q["types"] and all(q["types"]), q
    for compression in COMPRESSIONS:
        wide = by_key[("wide types", compression)]
        assert wide["types"] == WIDE_TYPE_NAMES
        assert wide["first_column"] == ["-1", "-1", "-1"]
    for compression in COMPRESSIONS:
        error = result["errors"].get(compression, "")
        assert "Code: 47" in error and "UNKNOWN_IDENTIFIER" in error, (compression, error)
    assert result["inserted_rows"] == result["read_back_rows"] == 1000
    # What clickhouse-go inserted is what another client reads.
    with connect(clickhouse_settings) as client:
        row = client.query(
            "SELECT count(), sum(id), countIf(value IS NULL), max(attrs['k']), "
            "toTypeName(any(at)) FROM go_batch"
        ).result_rows[0]
    assert row == (1000, sum(range(1000)), 334, 999, "DateTime64(3, 'UTC')")
