"""Kafka or ClickHouse not there, or not ready: one line naming the address and what starts it."""

from __future__ import annotations

from aiokafka.errors import KafkaConnectionError, KafkaTimeoutError, NoBrokersAvailable

from centrality.errors import START_HINT, UNAVAILABLE, USAGE, Failure, explains
from centrality.oneshot import Undelivered
from centrality.stack.process import ServiceError
from schemas.runtime.admin import MissingTopicsError


def _kafka_address() -> str:
    from schemas.runtime.settings import KafkaSettings

    return KafkaSettings().bootstrap


def _kafka_down(exc: BaseException) -> Failure:
    return Failure(
        UNAVAILABLE,
        f"Kafka at {_kafka_address()} is unreachable",
        f"{START_HINT}, or set CENTRALITY_KAFKA_BOOTSTRAP to a running broker",
    )


explains(KafkaConnectionError)(_kafka_down)
explains(NoBrokersAvailable)(_kafka_down)


@explains(KafkaTimeoutError)
def _kafka_timeout(exc: KafkaTimeoutError) -> Failure:
    """A request that timed out: the broker away, or a broker that answers and lacks the topic
    (a producer waits for its metadata until it gives up)."""
    from schemas.runtime.metrics.server import tcp_reachable

    if not tcp_reachable(_kafka_address())():
        return _kafka_down(exc)
    return Failure(
        UNAVAILABLE,
        f"Kafka at {_kafka_address()} answers, but the request timed out: a topic missing?",
        "create the catalog's topics with `centrality up` (CENTRALITY_KAFKA_TOPIC_PREFIX "
        "names them), or see `centrality doctor`",
    )


@explains(Undelivered)
def _undelivered(exc: Undelivered) -> Failure:
    from schemas.runtime.metrics.server import tcp_reachable

    if tcp_reachable(_kafka_address())():  # it answers, and did not take them: not "down"
        return Failure(
            UNAVAILABLE,
            f"{exc}; Kafka answers, so a topic is probably missing",
            "create the catalog's topics with `centrality up` (CENTRALITY_KAFKA_TOPIC_PREFIX "
            "names them), or see `centrality doctor`",
        )
    return Failure(UNAVAILABLE, str(exc), START_HINT)


@explains(MissingTopicsError)
def _missing_topics(exc: MissingTopicsError) -> Failure:
    # A configuration to fix, not an outage to wait out: nothing creates them by itself.
    return Failure(
        USAGE,
        f"Kafka at {exc.bootstrap} has no topic {', '.join(exc.missing)} "
        f"(CENTRALITY_KAFKA_TOPIC_PREFIX={exc.prefix})",
        "`centrality up` with the same settings creates them; `centrality doctor` checks them",
    )


@explains(ServiceError)
def _local_service(exc: ServiceError) -> Failure:
    # Its first line says what failed and where its log is; the log's tail that follows is
    # what the log file holds in full.
    first = str(exc).splitlines()[0].rstrip(":")
    return Failure(UNAVAILABLE, first, "that log says why" if " log " in first else "")
