"""Kafka or ClickHouse not there, or not ready: one line naming the address and what starts it."""

from __future__ import annotations

from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NoBrokersAvailable
from clickhouse_connect.driver.exceptions import DatabaseError

from centrality.errors import START_HINT, UNAVAILABLE, USAGE, Failure, explains
from centrality.stack.process import ServiceError


def _kafka_address() -> str:
    from schemas.settings import KafkaSettings

    return KafkaSettings().bootstrap


def _clickhouse_address() -> str:
    from streams.history.settings import ClickHouseSettings

    return ClickHouseSettings().url


def _kafka_down(exc: BaseException) -> Failure:
    return Failure(
        UNAVAILABLE,
        f"Kafka at {_kafka_address()} is unreachable",
        f"{START_HINT}, or set CENTRALITY_KAFKA_BOOTSTRAP to a running broker",
    )


explains(KafkaConnectionError)(_kafka_down)
explains(NoBrokersAvailable)(_kafka_down)
explains(KafkaTimeoutError)(_kafka_down)

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


@explains(ServiceError)
def _local_service(exc: ServiceError) -> Failure:
    # Its first line says what failed and where its log is; the log's tail that follows is
    # what the log file holds in full.
    first = str(exc).splitlines()[0].rstrip(":")
    return Failure(UNAVAILABLE, first, "that log says why" if " log " in first else "")
