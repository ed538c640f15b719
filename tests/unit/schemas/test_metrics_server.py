"""The metrics server every long-running process runs: where it listens, what /metrics,
/healthz and /readyz answer, and that a taken port does not stop the process."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from schemas.deadletter import DeadLetter
from schemas.runtime.deadletter import count_dead_letter
from schemas.runtime.emitter.spool import Spool, SpooledRecord
from schemas.runtime.metrics.server import (
    DEFAULT_PORTS,
    READINESS,
    MetricsSettings,
    serving,
    start,
    tcp_reachable,
    watch_spool,
)
from tests.ports import free_port
from tests.support.metrics import scrape, status


@pytest.fixture(autouse=True)
def readiness_of_this_test_only() -> Iterator[None]:
    """Workers run in-process by other tests register readiness checks on the process-wide
    `READINESS` (pointing at brokers long gone): this test judges only its own."""
    saved = dict(READINESS._checks)
    READINESS._checks.clear()
    yield
    READINESS._checks.clear()
    READINESS._checks.update(saved)


def test_each_process_has_its_own_loopback_port_by_default() -> None:
    settings = MetricsSettings()
    assert settings.address("streams") == ("127.0.0.1", 9181)
    assert settings.address("watch-k8s") == ("127.0.0.1", 9189)
    assert len(set(DEFAULT_PORTS.values())) == len(DEFAULT_PORTS)


def test_ports_merge_over_the_defaults_and_zero_serves_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CENTRALITY_METRICS_PORTS", '{"streams": 0, "sink": 9999}')
    settings = MetricsSettings()
    assert settings.address("streams") is None
    assert settings.address("sink") == ("127.0.0.1", 9999)
    assert settings.address("actions") == ("127.0.0.1", 9182)


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        ("0.0.0.0:9464", ("0.0.0.0", 9464)),
        (":9464", ("127.0.0.1", 9464)),
        ("[::1]:9464", ("::1", 9464)),
        ("127.0.0.1:0", None),
        ("", None),
    ],
)
def test_one_address_for_whatever_process_reads_it(
    addr: str, expected: tuple[str, int] | None
) -> None:
    assert MetricsSettings(addr=addr).address("streams") == expected
    assert MetricsSettings(addr=addr).address("agent") == expected


async def test_endpoints_answer_while_the_loop_runs() -> None:
    port = free_port()
    ready = {"partitions_assigned": False}
    READINESS.add("partitions_assigned", lambda: ready["partitions_assigned"])
    READINESS.add("broken", lambda: 1 / 0 == 0)  # raising is failing, never a 500
    try:
        async with serving("actions", MetricsSettings(addr=f"127.0.0.1:{port}")):
            code, body = await asyncio.to_thread(status, port, "/readyz")
            assert code == 503
            assert "partitions_assigned FAILING" in body and "broken FAILING" in body
            READINESS.remove("broken")
            ready["partitions_assigned"] = True
            code, body = await asyncio.to_thread(status, port, "/readyz")
            assert (code, body.splitlines()[0]) == (200, "actions ready")
            assert (await asyncio.to_thread(status, port, "/healthz"))[0] == 200
            assert (await asyncio.to_thread(status, port, "/nothing"))[0] == 404

            letter = DeadLetter(
                reason="malformed", consumer="unit", topic="t", partition=0, offset=1, raw=b"x"
            )
            before = (await asyncio.to_thread(scrape, port)).value(
                "centrality_dead_letters_total", consumer="unit", reason="malformed"
            )
            count_dead_letter(letter)
            after = await asyncio.to_thread(scrape, port)
            assert (
                after.value("centrality_dead_letters_total", consumer="unit", reason="malformed")
                == before + 1
            )
            assert after.value("centrality_ready", check="partitions_assigned") == 1
        assert (await asyncio.to_thread(status, port, "/healthz"))[0] == 0  # closed with the block
    finally:
        READINESS.remove("partitions_assigned", "broken")


async def test_healthz_fails_while_the_event_loop_is_stuck() -> None:
    port = free_port()
    async with serving("sink", MetricsSettings(addr=f"127.0.0.1:{port}", stall_s=1.0)):
        await asyncio.sleep(0.1)
        with ThreadPoolExecutor(1) as pool:
            # Asked from another thread while this loop is blocked, as a kubelet would.
            answer = pool.submit(lambda: (time.sleep(1.5), status(port, "/healthz"))[1])
            while not answer.done():  # the stuck loop under test
                time.sleep(0.05)  # noqa: ASYNC251
            code, body = answer.result()
        assert code == 503 and "stuck" in body
        # The loop runs again: so does its heartbeat, whose sleep is long over.
        await asyncio.sleep(0.1)
        assert (await asyncio.to_thread(status, port, "/healthz"))[0] == 200


def test_a_taken_port_is_logged_not_fatal() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert start("streams", MetricsSettings(addr=f"127.0.0.1:{port}")) is None


def test_spool_depth_is_reported(tmp_path: Path) -> None:
    port = free_port()
    server = start("agent", MetricsSettings(addr=f"127.0.0.1:{port}"))
    assert server is not None
    try:
        spool = Spool(tmp_path / "spool", 1 << 20)
        watch_spool(spool)
        assert scrape(port).value("centrality_spool_bytes", spool=str(spool.directory)) == 0
        spool.append([SpooledRecord("t", b"k", b"v" * 100, [])])
        depth = scrape(port).value("centrality_spool_bytes", spool=str(spool.directory))
        assert depth >= 100
        spool.close()
    finally:
        server.close()


def test_tcp_reachable_tries_each_address() -> None:
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        port = listening.getsockname()[1]
        closed = free_port()
        assert tcp_reachable(f"127.0.0.1:{closed},127.0.0.1:{port}")()
        assert not tcp_reachable(f"127.0.0.1:{closed}")()


def test_a_server_closes_at_once() -> None:
    """A worker's stop waits for its metrics server's close, which waited for the serving
    thread's next look for a shutdown, every half second: a third of a streams worker's stop."""
    server = start("sink", MetricsSettings(addr=f"127.0.0.1:{free_port()}"))
    assert server is not None
    time.sleep(0.02)  # the thread has just begun waiting for its next look
    started = time.monotonic()
    server.close()
    assert time.monotonic() - started < 0.25
