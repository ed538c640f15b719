"""Kafka or ClickHouse not there, or not ready: one line naming the address and what starts it."""

from __future__ import annotations

from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NoBrokersAvailable

from centrality.errors import START_HINT, UNAVAILABLE, Failure, explains
from centrality.stack.process import ServiceError


def _kafka_address() -> str:
    from schemas.settings import KafkaSettings

    return KafkaSettings().bootstrap


def _kafka_down(exc: BaseException) -> Failure:
    return Failure(
        UNAVAILABLE,
        f"Kafka at {_kafka_address()} is unreachable",
        f"{START_HINT}, or set CENTRALITY_KAFKA_BOOTSTRAP to a running broker",
    )


explains(KafkaConnectionError)(_kafka_down)
explains(NoBrokersAvailable)(_kafka_down)
explains(KafkaTimeoutError)(_kafka_down)


@explains(ServiceError)
def _local_service(exc: ServiceError) -> Failure:
    # Its first line says what failed and where its log is; the log's tail that follows is
    # what the log file holds in full.
    first = str(exc).splitlines()[0].rstrip(":")
    return Failure(UNAVAILABLE, first, "that log says why" if " log " in first else "")
