"""Outages of Kafka and ClickHouse as a worker sees them (schemas.runtime.outages): a line when one
starts, a summary now and then, a line when it ends, the client libraries' retries held back
meanwhile and counted, readiness and metrics following the probe, downtime added up."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
import structlog
from prometheus_client import REGISTRY

from schemas.runtime.logs import configure_logging
from schemas.runtime.metrics.server import READINESS, watch_kafka
from schemas.runtime.outages import (
    KAFKA_LOGGERS,
    OUTAGES,
    REPEATS_SHOWN,
    Dependency,
    OutageSettings,
)
from schemas.runtime.settings import KafkaSettings
from tests.ports import free_port
from tests.support.fake_broker import api_versions, serve

SUMMARY_S = 60.0
PER_S = 5  # retries a second, each logged by three libraries and once by us


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level
    logging.captureWarnings(False)
    structlog.reset_defaults()
    READINESS.remove("kafka")


def lines(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    """What the test logged (not asyncio's word on a task an earlier test left behind)."""
    said = [orjson.loads(line) for line in capsys.readouterr().err.splitlines()]
    return [line for line in said if line["logger"] != "asyncio"]


def kafka(reachable: list[bool]) -> Dependency:
    return OUTAGES.watch("kafka", "127.0.0.1:1", lambda: reachable[0], KAFKA_LOGGERS)


def retries(n: int) -> None:
    """What aiokafka logs while its broker is away, and a line of ours about it."""
    for _ in range(n):
        logging.getLogger("aiokafka").error("Unable connect to node with id %s: %s", 1, "refused")
        logging.getLogger("aiokafka.consumer.fetcher").error("Failed fetch messages from 1")
        logging.getLogger("faust.topics").warning("_on_published error for message topic")
        if not OUTAGES.explains("kafka"):
            structlog.get_logger("sink").warning("commit_failed")


def test_an_outage_is_three_kinds_of_line_however_many_retries_it_saw(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json=True)
    dependency = kafka([True])
    dependency.observe(True, 0.0, SUMMARY_S)
    dependency.observe(False, 1.0, SUMMARY_S)
    for second in range(2, 300):  # five minutes away, probed every second, retries galore
        retries(PER_S)
        dependency.observe(False, float(second), SUMMARY_S)
    retries(PER_S)
    logging.getLogger("aiokafka").critical("a critical line always passes")
    logging.getLogger("streams").error("nor is anything else held back")
    dependency.observe(True, 300.0, SUMMARY_S)
    retries(1)  # back: said again

    said = lines(capsys)
    events = [line["event"] for line in said]
    assert events[0] == "dependency_down" and said[0]["dependency"] == "kafka"
    assert events[1:5] == ["dependency_still_down"] * 4  # at 61, 121, 181, 241 s
    assert [line["down_s"] for line in said[1:5]] == [60.0, 120.0, 180.0, 240.0]
    assert events[5:8] == [
        "a critical line always passes",
        "nor is anything else held back",
        "dependency_up",
    ]
    assert said[7]["down_s"] == 299.0
    # Each summary counts what was held back since the line before it.
    held = [line["lines_held_back"] for line in said[1:5]] + [said[7]["lines_held_back"]]
    assert sum(held) == 299 * PER_S * 4 and held[0] == 60 * PER_S * 4
    assert events[8:] == [
        "Unable connect to node with id 1: refused",
        "Failed fetch messages from 1",
        "_on_published error for message topic",
        "commit_failed",
    ]


def test_a_library_a_dependency_does_not_explain_is_not_held_back(
    capsys: pytest.CaptureFixture[str],
) -> None:
    configure_logging(json=True)
    clickhouse = OUTAGES.watch("clickhouse", "http://127.0.0.1:1", lambda: False, ("urllib3",))
    clickhouse.observe(False, 0.0, SUMMARY_S)
    logging.getLogger("aiokafka").error("Kafka is not what is away")
    logging.getLogger("urllib3.connectionpool").warning("Retrying (Retry(total=2))")
    assert [line["event"] for line in lines(capsys)] == [
        "dependency_down",
        "Kafka is not what is away",
    ]


def test_downtime_adds_up_the_outages_current_one_included() -> None:
    dependency = kafka([True])
    assert OUTAGES.downtime_s("kafka") == 0.0
    dependency.observe(False, 10.0, SUMMARY_S)
    dependency.observe(True, 25.0, SUMMARY_S)
    dependency.observe(True, 40.0, SUMMARY_S)
    assert dependency.downtime_s(now=100.0) == 15.0
    dependency.observe(False, 100.0, SUMMARY_S)
    assert dependency.downtime_s(now=107.5) == 22.5
    assert OUTAGES.downtime_s("clickhouse") == 0.0  # not watched: never away


def metric(name: str, dependency: str) -> float | None:
    return REGISTRY.get_sample_value(name, {"dependency": dependency})


async def test_readiness_and_metrics_follow_a_real_probe() -> None:
    """A peer answering as a broker does, then a port that refuses connections."""
    server, address = await serve(api_versions())
    dependency = watch_kafka(KafkaSettings(bootstrap=address))
    outages_before = metric("centrality_dependency_outages_total", "kafka") or 0.0
    settings = OutageSettings(probe_interval_s=0.05, summary_interval_s=SUMMARY_S)
    async with OUTAGES.probing(settings):
        await asyncio.sleep(0.3)
        assert READINESS.results()["kafka"] and metric("centrality_dependency_up", "kafka") == 1
        server.close()
        await server.wait_closed()
        await asyncio.sleep(0.5)
        assert dependency.down and not READINESS.results()["kafka"]
        assert metric("centrality_dependency_up", "kafka") == 0
        assert (metric("centrality_dependency_down_seconds", "kafka") or 0.0) > 0.1
    assert metric("centrality_dependency_outages_total", "kafka") == outages_before + 1


def test_watching_again_keeps_the_state_of_the_same_address() -> None:
    settings = KafkaSettings(bootstrap=f"127.0.0.1:{free_port()}")
    first = watch_kafka(settings)
    first.observe(False, 0.0, SUMMARY_S)
    assert watch_kafka(settings) is first and first.down
    assert watch_kafka(KafkaSettings(bootstrap=f"127.0.0.1:{free_port()}")) is not first


async def test_a_client_warning_while_its_dependency_looks_up_has_it_probed_at_once() -> None:
    configure_logging(json=True)
    dependency = watch_kafka(KafkaSettings(bootstrap=f"127.0.0.1:{free_port()}"))  # closed
    settings = OutageSettings(probe_interval_s=30.0, summary_interval_s=SUMMARY_S)
    async with OUTAGES.probing(settings):
        await asyncio.sleep(0.1)  # the first probe, at start
        assert dependency.down
        # As if it had come back at a probe: the next one is 30 s away.
        dependency.observe(True, time.monotonic(), SUMMARY_S)
        logging.getLogger("aiokafka").error("Unable connect to node with id 1")
        for _ in range(20):
            await asyncio.sleep(0.01)
            if dependency.down:
                break
        assert dependency.down  # probed again within milliseconds, not 30 s


async def test_while_up_a_template_is_shown_a_few_times_an_interval_and_the_rest_counted(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """One broker of three away: the cluster answers, and aiokafka logs every reconnect."""
    configure_logging(json=True)
    kafka([True])
    held_before = metric("centrality_dependency_log_lines_held_back_total", "kafka") or 0.0
    coordinator = logging.getLogger("aiokafka.consumer.group_coordinator")
    for _ in range(REPEATS_SHOWN + 1):  # not probing: nothing counts the repeats, all shown
        coordinator.info("OffsetCommit failed for group %s, will retry", "g")
    assert len(lines(capsys)) == REPEATS_SHOWN + 1
    settings = OutageSettings(probe_interval_s=0.05, summary_interval_s=1.0)
    async with OUTAGES.probing(settings):
        await asyncio.sleep(0.1)  # the first probe opens the interval
        for node in range(100):
            logging.getLogger("aiokafka").error("Unable connect to node with id %s: %s", node, 1)
            coordinator.info("OffsetCommit failed for group %s, will retry", "g")
        logging.getLogger("aiokafka").warning("another template: its own count")
        logging.getLogger("aiokafka").critical("critical lines always pass")
        assert len(lines(capsys)) == 2 * REPEATS_SHOWN + 2  # nothing said of the rest yet
        await asyncio.sleep(1.3)  # the interval ends at a probe
        for _ in range(REPEATS_SHOWN + 1):  # a new interval: shown again
            coordinator.info("OffsetCommit failed for group %s, will retry", "g")
        said = lines(capsys)

    repeated = {line["from_logger"]: line for line in said if line["event"] == "lines_repeated"}
    assert repeated["aiokafka"]["repeated"] == 100 - REPEATS_SHOWN
    assert repeated["aiokafka"]["template"] == "Unable connect to node with id %s: %s"
    assert repeated["aiokafka.consumer.group_coordinator"]["repeated"] == 100 - REPEATS_SHOWN
    assert [line["event"] for line in said if line["event"] != "lines_repeated"] == [
        "OffsetCommit failed for group g, will retry"
    ] * REPEATS_SHOWN
    held = metric("centrality_dependency_log_lines_held_back_total", "kafka") or 0.0
    assert held - held_before == 2 * (100 - REPEATS_SHOWN) + 1
