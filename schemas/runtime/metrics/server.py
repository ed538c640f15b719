"""`/metrics`, `/healthz` and `/readyz` of a long-running process, on a thread of its own.

A thread, not the event loop: a scrape must never wait behind a busy worker, and a stuck loop
must still be seen as stuck. So liveness is the loop's own heartbeat (`heartbeat`), which
`/healthz` reports stale once the loop has not run for `stall_s`. Readiness is whatever the
process registered with `READINESS` (partitions assigned, tables recovered, Kafka and
ClickHouse reachable): `/readyz` answers 200 only when every check passes, and says which fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
import urllib.request
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol
from wsgiref.simple_server import WSGIRequestHandler, make_server

import structlog
from prometheus_client import REGISTRY, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.runtime.kafka_probe import kafka_answers
from schemas.runtime.local_stack import LocalStackSettings
from schemas.runtime.outages import CLICKHOUSE_LOGGERS, KAFKA_LOGGERS, OUTAGES, Dependency
from schemas.runtime.settings import KafkaSettings

log = structlog.get_logger("metrics")

# Loopback by default, one port per kind of process, so the local stack's workers sit side by
# side on one host (Prometheus' exporter registry has the neighbouring 91xx range).
DEFAULT_PORTS: dict[str, int] = {
    "streams": 9181,
    "actions": 9182,
    "sink": 9183,
    "agent": 9184,
    "tail": 9185,
    "checkpoints": 9186,
    "watch-slurm": 9187,
    "watch-ray": 9188,
    "watch-k8s": 9189,
}


def _default_ports() -> dict[str, int]:
    """One stack's workers beside another's: each stack's ports moved by its offset."""
    offset = LocalStackSettings().port_offset
    return {worker: port + offset for worker, port in DEFAULT_PORTS.items()}


class MetricsSettings(BaseSettings):
    """`CENTRALITY_METRICS_*`: where each process serves its metrics and health."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_METRICS_", extra="ignore")

    addr: str | None = Field(
        default=None,
        description="host:port for this process, whatever it is (one per container); "
        "empty or port 0: serve nothing. Unset: `host` and the process's entry in `ports`.",
    )
    host: str = Field(default="127.0.0.1", description="Address bound when `addr` is unset.")
    ports: dict[str, int] = Field(
        default_factory=lambda: _default_ports(),
        description="Port per process (merged over the defaults, which a local stack's "
        "`CENTRALITY_STACK_PORT_OFFSET` moves); 0 serves nothing.",
    )
    stall_s: float = Field(
        default=30.0, gt=0, description="`/healthz` fails once the event loop is stuck this long."
    )

    @field_validator("ports")
    @classmethod
    def _over_defaults(cls, ports: dict[str, int]) -> dict[str, int]:
        return {**_default_ports(), **ports}

    def address(self, worker: str) -> tuple[str, int] | None:
        """Where `worker` serves, or None when it serves nothing."""
        if self.addr is None:
            port = self.ports.get(worker, 0)
            return (self.host, port) if port else None
        host, _, port_text = self.addr.rpartition(":")
        port = int(port_text) if port_text.strip() else 0
        return (host.strip("[]") or self.host, port) if port else None


class Readiness:
    """Named checks; each returns True when ready (raising counts as not ready)."""

    def __init__(self) -> None:
        self._checks: dict[str, Callable[[], bool]] = {}

    def add(self, name: str, check: Callable[[], bool]) -> None:
        """Register (or replace) a check: one per name, so a restarted component replaces its
        own."""
        self._checks[name] = check

    def remove(self, *names: str) -> None:
        for name in names:
            self._checks.pop(name, None)

    def results(self) -> dict[str, bool]:
        results = {}
        for name, check in list(self._checks.items()):
            try:
                results[name] = bool(check())
            except Exception:
                results[name] = False
        return results


READINESS = Readiness()


class _Heartbeat:
    def __init__(self) -> None:
        self.at: float | None = None  # None: no loop beats here (yet)

    def age_s(self) -> float:
        return 0.0 if self.at is None else time.monotonic() - self.at


HEARTBEAT = _Heartbeat()


async def heartbeat(interval_s: float = 1.0) -> None:
    """Beat for as long as the loop runs (cancel to end)."""
    while True:
        HEARTBEAT.at = time.monotonic()
        await asyncio.sleep(interval_s)


class _Sized(Protocol):
    directory: Path

    def size_bytes(self) -> int: ...


_SPOOLS: weakref.WeakSet[Any] = weakref.WeakSet()


def watch_spool(spool: _Sized) -> None:
    """Report this spool's depth (`centrality_spool_bytes`) for as long as it exists."""
    _SPOOLS.add(spool)


class _ScrapeTime(Collector):
    """What is read when scraped: spool depth, readiness, the heartbeat's age."""

    def collect(self) -> Iterable[Metric]:
        spools = GaugeMetricFamily(
            "centrality_spool_bytes",
            "Bytes waiting in an Emitter's local spool for Kafka.",
            labels=["spool"],
        )
        for spool in list(_SPOOLS):
            with contextlib.suppress(OSError):  # a segment acknowledged while we looked
                spools.add_metric([str(spool.directory)], spool.size_bytes())
        yield spools
        ready = GaugeMetricFamily(
            "centrality_ready", "1 when a readiness check passes, else 0.", labels=["check"]
        )
        for name, ok in READINESS.results().items():
            ready.add_metric([name], 1.0 if ok else 0.0)
        yield ready
        yield GaugeMetricFamily(
            "centrality_heartbeat_age_seconds",
            "Seconds since the process's event loop last ran its heartbeat.",
            value=HEARTBEAT.age_s(),
        )


REGISTRY.register(_ScrapeTime())


def tcp_reachable(addresses: str, timeout_s: float = 1.0) -> Callable[[], bool]:
    """A check: some `host:port` of a comma-separated list accepts a connection."""

    def check() -> bool:
        for address in addresses.split(","):
            host, _, port = address.strip().rpartition(":")
            with contextlib.suppress(OSError, ValueError):
                socket.create_connection((host.strip("[]"), int(port)), timeout_s).close()
                return True
        return False

    return check


def http_ok(url: str, timeout_s: float = 1.0) -> Callable[[], bool]:
    """A check: GET `url` answers 200 (ClickHouse's `/ping`, say)."""

    def check() -> bool:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            return bool(answer.status == 200)

    return check


def watch_kafka(settings: KafkaSettings) -> Dependency:
    """Kafka watched for outages (`schemas.runtime.outages`) and the `kafka` readiness check, from
    the same probe: some bootstrap server answers a Kafka request (`schemas.runtime.kafka_probe`).
    """
    probe = kafka_answers(settings)
    kafka = OUTAGES.watch("kafka", settings.bootstrap, probe, KAFKA_LOGGERS)
    READINESS.add("kafka", kafka.reachable)
    return kafka


def watch_clickhouse(url: str) -> Dependency:
    """ClickHouse watched alike, and the `clickhouse` check: its `/ping` answers."""
    ping = f"{url.rstrip('/')}/ping"
    clickhouse = OUTAGES.watch("clickhouse", url, http_ok(ping), CLICKHOUSE_LOGGERS)
    READINESS.add("clickhouse", clickhouse.reachable)
    return clickhouse


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


def _app(worker: str, stall_s: float) -> Callable[..., Iterator[bytes]]:
    metrics = make_wsgi_app(REGISTRY)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterator[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            return iter(metrics(environ, start_response))
        if path == "/healthz":
            age_s = HEARTBEAT.age_s()
            ok = age_s < stall_s
            body = f"{worker} {'alive' if ok else 'stuck'}: heartbeat {age_s:.1f}s ago\n"
        elif path == "/readyz":
            results = READINESS.results()
            ok = all(results.values())
            lines = [f"{name} {'ok' if passed else 'FAILING'}" for name, passed in results.items()]
            body = "\n".join([f"{worker} {'ready' if ok else 'not ready'}", *lines]) + "\n"
        else:
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return iter([b"/metrics, /healthz, /readyz\n"])
        start_response(
            "200 OK" if ok else "503 Service Unavailable", [("Content-Type", "text/plain")]
        )
        return iter([body.encode()])

    return app


class MetricsServer:
    def __init__(self, worker: str, host: str, port: int, stall_s: float) -> None:
        self.worker = worker
        self._server = make_server(
            host, port, _app(worker, stall_s), ThreadingWSGIServer, handler_class=_Quiet
        )
        self.port = self._server.server_port
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"metrics-{worker}", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        # The serving thread looks for a shutdown between waits of half a second (socketserver's
        # poll), and a worker's stop waited for that look: a third of a streams worker's stop.
        # Its listening socket shut first ends the wait at once (the accept that follows fails,
        # which serve_forever passes over). Polling more often cost every idle agent CPU.
        with contextlib.suppress(OSError):  # a platform that refuses it waits for the poll
            self._server.socket.shutdown(socket.SHUT_RDWR)
        self._server.shutdown()
        self._server.server_close()


def start(worker: str, settings: MetricsSettings | None = None) -> MetricsServer | None:
    """Serve `worker`'s metrics where the settings say; None when they say nowhere. An address
    taken is logged, not fatal: the worker's job matters more than its metrics."""
    settings = settings or MetricsSettings()
    address = settings.address(worker)
    if address is None:
        return None
    try:
        server = MetricsServer(worker, *address, settings.stall_s)
    except OSError as exc:
        log.error(
            "metrics_unavailable",
            worker=worker,
            address=f"{address[0]}:{address[1]}",
            error=str(exc),
        )
        return None
    log.info("metrics_serving", worker=worker, address=f"{address[0]}:{server.port}")
    return server


@contextlib.asynccontextmanager
async def serving(worker: str, settings: MetricsSettings | None = None) -> AsyncIterator[None]:
    """Metrics and health served, the loop's heartbeat beating and what the process depends on
    probed (`schemas.runtime.outages`), for the block's duration."""
    server = start(worker, settings)
    beat = asyncio.create_task(heartbeat())
    try:
        async with OUTAGES.probing():
            yield
    finally:
        beat.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await beat
        if server is not None:  # its shutdown waits for the serving thread's next poll
            await asyncio.to_thread(server.close)
