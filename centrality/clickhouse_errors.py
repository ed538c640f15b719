"""ClickHouse not there, not migrated, or refusing the login: one line each. Registered only
where clickhouse-connect is installed (a producer's base install has no ClickHouse client)."""

from __future__ import annotations

from clickhouse_connect.driver.exceptions import DatabaseError

from centrality.errors import START_HINT, UNAVAILABLE, USAGE, Failure, explains


def _clickhouse_address() -> str:
    from streams.history.settings import ClickHouseSettings

    return ClickHouseSettings().url


# ClickHouse's own error names (system.errors) that mean "history was never set up here".
_NOT_MIGRATED = {"UNKNOWN_DATABASE", "UNKNOWN_TABLE"}
_BAD_LOGIN = {"AUTHENTICATION_FAILED", "REQUIRED_PASSWORD", "UNKNOWN_USER"}


@explains(DatabaseError)
def _clickhouse(exc: DatabaseError) -> Failure | None:
    address = _clickhouse_address()
    if exc.code is None and exc.name is None:  # no answer from a server at all
        return Failure(
            UNAVAILABLE,
            f"ClickHouse at {address} is unreachable",
            f"{START_HINT}, or set CENTRALITY_CLICKHOUSE_URL to a running server",
        )
    if exc.name in _NOT_MIGRATED:
        return Failure(
            UNAVAILABLE,
            f"ClickHouse at {address} has no history tables ({exc.name})",
            "apply the migrations with `make up` (or `centrality up`), "
            "or check CENTRALITY_CLICKHOUSE_DATABASE",
        )
    if exc.name in _BAD_LOGIN:
        return Failure(
            USAGE,
            f"ClickHouse at {address} refused the login ({exc.name})",
            "check CENTRALITY_CLICKHOUSE_USER and CENTRALITY_CLICKHOUSE_PASSWORD",
        )
    return None
