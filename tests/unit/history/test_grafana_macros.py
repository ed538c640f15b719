"""The dashboards' macros expand as grafana-clickhouse-datasource 4.20.0 expands them: the
outputs its query-editor docs and `pkg/macros` tests state, for the same time range
(2014-11-12T11:45:26.123Z to 2015-11-12T11:45:26.456Z) and a 20 s interval."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.grafana_macros import PLUGIN_DRIVER, PLUGIN_VERSION, expand

FROM = datetime(2014, 11, 12, 11, 45, 26, 123000, tzinfo=UTC)
TO = datetime(2015, 11, 12, 11, 45, 26, 456000, tzinfo=UTC)
TWENTY_S = timedelta(seconds=20)


def plugin(sql: str, interval: timedelta = TWENTY_S) -> str:
    return expand(sql, FROM, TO, interval, {})


@pytest.mark.parametrize(
    ("macro", "expanded"),
    [
        (
            "$__timeFilter(time)",
            "time >= toDateTime(1415792726) AND time <= toDateTime(1447328726)",
        ),
        (
            "$__timeFilter_ms(time)",
            "time >= fromUnixTimestamp64Milli(1415792726123) "
            "AND time <= fromUnixTimestamp64Milli(1447328726456)",
        ),
        ("$__dateFilter(date)", "date >= toDate('2014-11-12') AND date <= toDate('2015-11-12')"),
        (
            "$__dateTimeFilter(date, time)",
            "(date >= toDate('2014-11-12') AND date <= toDate('2015-11-12')) AND "
            "(time >= toDateTime(1415792726) AND time <= toDateTime(1447328726))",
        ),
        (
            "$__dt(date, time)",
            "(date >= toDate('2014-11-12') AND date <= toDate('2015-11-12')) AND "
            "(time >= toDateTime(1415792726) AND time <= toDateTime(1447328726))",
        ),
        ("$__timeFrom(time)", "time >= toDateTime(1415792726)"),
        ("$__timeTo(time)", "time <= toDateTime(1447328726)"),
        ("$__fromTime", "toDateTime(1415792726)"),
        ("$__toTime", "toDateTime(1447328726)"),
        ("$__fromTime_ms", "fromUnixTimestamp64Milli(1415792726123)"),
        ("$__toTime_ms", "fromUnixTimestamp64Milli(1447328726456)"),
        ("$__interval_s", "20"),
        ("$__timeInterval(column)", "toStartOfInterval(toDateTime(column), INTERVAL 20 second)"),
        (
            "$__timeInterval_ms(column)",
            "toStartOfInterval(toDateTime64(column, 3), INTERVAL 20000 millisecond)",
        ),
        (
            "$__timeFilter(cast(sth as timestamp) )",
            "cast(sth as timestamp) >= toDateTime(1415792726) "
            "AND cast(sth as timestamp) <= toDateTime(1447328726)",
        ),
    ],
)
def test_each_macro_gives_the_plugins_documented_output(macro: str, expanded: str) -> None:
    assert plugin(f"SELECT {macro}") == f"SELECT {expanded}"


def test_a_date_filter_is_a_date_in_the_plugins_zone_not_a_server_function() -> None:
    late = datetime(2026, 1, 1, 23, 30, tzinfo=UTC)
    sql = "WHERE $__dateFilter(d)"
    assert expand(sql, late, late, TWENTY_S, {}) == (
        "WHERE d >= toDate('2026-01-01') AND d <= toDate('2026-01-01')"
    )
    # A Grafana whose plugin process runs in Tokyo sees the next day already.
    tokyo = expand(sql, late, late, TWENTY_S, {}, zone=ZoneInfo("Asia/Tokyo"))
    assert tokyo == "WHERE d >= toDate('2026-01-02') AND d <= toDate('2026-01-02')"


@pytest.mark.parametrize(
    ("interval", "seconds", "millis"),
    [
        (timedelta(milliseconds=200), 1, 200),
        (timedelta(milliseconds=1500), 1, 1500),
        (timedelta(0), 1, 1),
        (timedelta(minutes=2), 120, 120_000),
    ],
)
def test_intervals_are_floored_at_one_second_and_one_millisecond(
    interval: timedelta, seconds: int, millis: int
) -> None:
    sql = "SELECT $__timeInterval(t), $__interval_s, $__timeInterval_ms(t)"
    assert plugin(sql, interval) == (
        f"SELECT toStartOfInterval(toDateTime(t), INTERVAL {seconds} second), {seconds}, "
        f"toStartOfInterval(toDateTime64(t, 3), INTERVAL {millis} millisecond)"
    )


def test_comments_are_blanked_before_any_macro_is_expanded() -> None:
    sql = "SELECT 1 -- per $__timeInterval(t)\nFROM x /* $__fromTime */ WHERE $__timeFilter(t)"
    assert plugin(sql) == (
        "SELECT 1 " + " " * len("-- per $__timeInterval(t)") + "\nFROM x "
        + " " * len("/* $__fromTime */")
        + " WHERE t >= toDateTime(1415792726) AND t <= toDateTime(1447328726)"
    )  # fmt: skip
    # An unterminated block comment runs to the end, hiding what follows.
    assert plugin("SELECT 1 /* $__toTime") == "SELECT 1 " + " " * len("/* $__toTime")


@pytest.mark.parametrize(
    "quoted",
    [
        "'a--b'",
        "'a/*b'",
        r"'it\'s -- fine'",
        "'it''s -- fine'",
        "`a--b`",
        "`it's`",
        "$doc$a--b$doc$",
        '"col--name"',
    ],
)
def test_what_is_quoted_is_never_a_comment(quoted: str) -> None:
    assert plugin(f"SELECT {quoted} AS x WHERE $__toTime > 0") == (
        f"SELECT {quoted} AS x WHERE toDateTime(1447328726) > 0"
    )


def test_a_macro_inside_a_string_literal_is_expanded_as_the_plugin_does() -> None:
    # The plugin's engine blanks comments but has no notion of literals.
    assert plugin("SELECT '$__fromTime' AS since") == "SELECT 'toDateTime(1415792726)' AS since"


def test_a_macro_in_another_macros_arguments_is_expanded_first() -> None:
    assert plugin("WHERE $__timeFilter(coalesce(closed_at, $__toTime))") == (
        "WHERE coalesce(closed_at, toDateTime(1447328726)) >= toDateTime(1415792726) "
        "AND coalesce(closed_at, toDateTime(1447328726)) <= toDateTime(1447328726)"
    )


def test_a_longer_name_is_not_taken_for_a_shorter_macro() -> None:
    # `$__timeFilterEpoch` is no macro of the plugin: left alone there, refused here.
    with pytest.raises(ValueError, match="timeFilterEpoch"):
        plugin("WHERE $__timeFilterEpoch(t)")


def test_variables_are_replaced_everywhere_before_the_macros() -> None:
    sql = expand(
        "SELECT '$node' AS n, ${cluster} -- $job\nWHERE $__timeFilter(t)",
        FROM,
        TO,
        TWENTY_S,
        {"node": "n-1", "cluster": "c", "job": "j"},
    )
    assert sql == (
        "SELECT 'n-1' AS n, c " + " " * len("-- j")
        + "\nWHERE t >= toDateTime(1415792726) AND t <= toDateTime(1447328726)"
    )  # fmt: skip


def test_the_modelled_plugin_is_the_one_compose_installs_and_its_driver_the_one_tested() -> None:
    root = Path(__file__).resolve().parents[3]
    compose = (root / "infra" / "compose" / "compose.yaml").read_text()
    assert f"grafana-clickhouse-datasource@{PLUGIN_VERSION}" in compose
    go_mod = (root / "tests" / "go" / "clickhouse" / "go.mod").read_text()
    assert f"github.com/ClickHouse/clickhouse-go/v2 {PLUGIN_DRIVER}\n" in go_mod
