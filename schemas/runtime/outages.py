"""Outages of what a worker depends on (Kafka, ClickHouse): watched, said in few lines, shown.

The streams, action and sink workers ride out a whole-cluster Kafka outage and a ClickHouse
outage: they wait, keep what they hold and resume on their own. What an outage must not do is
flood the log (aiokafka logs every reconnect of every connection: thousands of lines a minute
per worker) or wear out retry budgets that are meant for one partition's trouble. So a worker
watches what it depends on (`Outages.watch`; `schemas.runtime.metrics.server.serving` probes every
`probe_interval_s`, a Kafka ApiVersions request or a `/ping`, in a thread, and at once when a
client library of a dependency that looks up starts to warn, or one that looks away reports
news: an outage and its end are seen within milliseconds, not after the hundreds of lines a
second a client logs while it reconnects):

- the first failed probe logs one `dependency_down` line; while it lasts, one
  `dependency_still_down` line every `summary_interval_s` says for how long and how many lines
  were held back; the first passing probe logs `dependency_up` with the outage's length;
- meanwhile the warnings and errors of the dependency's client libraries (aiokafka and Faust
  for Kafka, clickhouse-connect and urllib3 for ClickHouse) and our own retry lines about it are
  counted, not printed (`holds_back`, `explains`); critical records always pass;
- its readiness check fails, and `centrality_dependency_up`, `centrality_dependency_outages`
  and `centrality_dependency_down_seconds` say so;
- `downtime_s` is how long it has been away in all: budgets that must not run down while the
  whole cluster is away (`streams.faust.failures`, the streams producer's batch lifetime) add it.

Up is not always quiet: with one broker of three away a client logs every reconnect to it, and
after an outage it logs every partition's commit retry while the group coordinator loads. So
beyond what an outage holds back, a client library's lines of one template (the message before
its arguments) are shown `REPEATS_SHOWN` times per `summary_interval_s`; the rest are counted,
and one `lines_repeated` line per template says how many when the interval ends (`repeats`;
only while `probe_forever` runs, since its probes end the intervals).

A probe that says "up" while a client still fails (a broker listening but not ready yet) only
lets the libraries speak again for that moment: their lines are then printed, not lost.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

import structlog
from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from schemas.runtime.metrics.catalog import (
    DEPENDENCY_DOWN_SECONDS,
    DEPENDENCY_LINES_HELD_BACK,
    DEPENDENCY_OUTAGES,
    DEPENDENCY_UP,
    labelled,
)

log = structlog.get_logger("outages")

_WOKEN_PROBE_GAP_S = 0.25
# Lines of one template shown per summary interval beyond what an outage holds back; templates
# tracked at once (a library that formats its own messages makes each line a template).
REPEATS_SHOWN = 3
_TEMPLATES_MAX = 256
# The loggers whose warnings and errors an outage of each dependency explains.
KAFKA_LOGGERS = ("aiokafka", "faust")
CLICKHOUSE_LOGGERS = ("clickhouse_connect", "urllib3")


class OutageSettings(BaseSettings):
    """`CENTRALITY_OUTAGE_*`: how a worker watches Kafka and ClickHouse, and says they are away."""

    model_config = SettingsConfigDict(env_prefix="CENTRALITY_OUTAGE_", extra="ignore")

    probe_interval_s: float = Field(
        default=1.0, gt=0, description="How often each dependency is probed."
    )
    summary_interval_s: float = Field(
        default=60.0,
        gt=0,
        description="While a dependency is away, one `dependency_still_down` line this often.",
    )


@dataclass
class Dependency:
    """One service a process needs, as its probes see it."""

    name: str
    address: str
    probe: Callable[[], bool]
    """True when reachable; it runs in a thread and may block for its own timeout."""
    loggers: tuple[str, ...]
    down_since: float | None = None
    held_back: int = 0
    """Lines held back since a line last said how many."""
    _ended_outages_s: float = 0.0
    _said_at: float = 0.0
    _prefixes: tuple[str, ...] = field(init=False)
    _repeats: dict[tuple[str, str], int] = field(default_factory=dict)
    _repeats_since: float | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._prefixes = tuple(f"{name}." for name in self.loggers)

    @property
    def down(self) -> bool:
        return self.down_since is not None

    def reachable(self) -> bool:
        """As of the last probe: the readiness check."""
        return self.down_since is None

    def downtime_s(self, now: float | None = None) -> float:
        """Seconds it has been away since it was first watched, the current outage included."""
        if self.down_since is None:
            return self._ended_outages_s
        now = time.monotonic() if now is None else now
        return self._ended_outages_s + now - self.down_since

    def covers(self, logger: str) -> bool:
        return logger in self.loggers or logger.startswith(self._prefixes)

    def observe(self, reachable: bool, now: float, summary_interval_s: float) -> None:
        """One probe's answer: a line when the state changed, a summary now and then."""
        self._say_repeats(now, summary_interval_s)
        if reachable:
            if self.down_since is not None:
                log.info(
                    "dependency_up",
                    dependency=self.name,
                    address=self.address,
                    down_s=round(now - self.down_since, 1),
                    lines_held_back=self.held_back,
                )
                self._ended_outages_s += now - self.down_since
                self.down_since, self.held_back = None, 0
        elif self.down_since is None:
            self.down_since, self._said_at, self.held_back = now, now, 0
            DEPENDENCY_OUTAGES.labels(self.name).inc()
            log.warning("dependency_down", dependency=self.name, address=self.address)
        elif now - self._said_at >= summary_interval_s:
            self._said_at = now
            log.warning(
                "dependency_still_down",
                dependency=self.name,
                address=self.address,
                down_s=round(now - self.down_since, 1),
                lines_held_back=self.held_back,
            )
            self.held_back = 0
        DEPENDENCY_UP.labels(self.name).set(0.0 if self.down else 1.0)
        DEPENDENCY_DOWN_SECONDS.labels(self.name).set(
            0.0 if self.down_since is None else now - self.down_since
        )

    def hold_back(self) -> None:
        self.held_back += 1
        labelled(DEPENDENCY_LINES_HELD_BACK, self.name).inc()  # thousands a second, in a flood

    def repeats(self, record: logging.LogRecord) -> bool:
        """True for a client line whose template was shown `REPEATS_SHOWN` times already this
        interval: counted for the interval's `lines_repeated` line instead."""
        key = (record.name, str(record.msg))
        with self._lock:  # Faust's consumer logs from a thread of its own
            seen = self._repeats.get(key)
            if seen is None and len(self._repeats) >= _TEMPLATES_MAX:
                return False
            self._repeats[key] = seen = (seen or 0) + 1
        if seen <= REPEATS_SHOWN:
            return False
        labelled(DEPENDENCY_LINES_HELD_BACK, self.name).inc()
        return True

    def _say_repeats(self, now: float, summary_interval_s: float) -> None:
        if self._repeats_since is None:
            self._repeats_since = now
        if now - self._repeats_since < summary_interval_s:
            return
        with self._lock:
            counted, self._repeats = self._repeats, {}
        for (logger, template), seen in counted.items():
            if seen > REPEATS_SHOWN:
                log.info(
                    "lines_repeated",
                    dependency=self.name,
                    from_logger=logger,
                    template=template[:256],
                    repeated=seen - REPEATS_SHOWN,
                    interval_s=round(now - self._repeats_since, 1),
                )
        self._repeats_since = now


class Outages:
    """The dependencies of this process, by name."""

    def __init__(self) -> None:
        self._watched: dict[str, Dependency] = {}
        self._wake: tuple[asyncio.AbstractEventLoop, asyncio.Event] | None = None
        self._suspected = False

    def watch(
        self, name: str, address: str, probe: Callable[[], bool], loggers: tuple[str, ...] = ()
    ) -> Dependency:
        """Watch `name` (the one already watched under that name, if its address is the same)."""
        known = self._watched.get(name)
        if known is not None and known.address == address:
            return known
        dependency = Dependency(name, address, probe, loggers)
        self._watched[name] = dependency
        DEPENDENCY_UP.labels(name).set(1.0)
        return dependency

    def forget(self) -> None:
        """Watch nothing (tests that run several workers in one process)."""
        self._watched.clear()

    def get(self, name: str) -> Dependency | None:
        return self._watched.get(name)

    def downtime_s(self, name: str) -> float:
        """`Dependency.downtime_s` of `name`; 0 when it is not watched."""
        dependency = self._watched.get(name)
        return 0.0 if dependency is None else dependency.downtime_s()

    def explains(self, name: str) -> bool:
        """True while `name` is away: a line about a failure it explains is then counted for
        the next summary instead of logged (our own retry lines)."""
        dependency = self._watched.get(name)
        if dependency is None or not dependency.down:
            return False
        dependency.hold_back()
        return True

    def holds_back(self, record: logging.LogRecord) -> bool:
        """True for a library's warning or error that an outage under way explains. A record
        that disagrees with what the last probe said (a warning while its dependency looked up,
        news such as a coordinator found while it looked away) has it probed at once."""
        for dependency in self._watched.values():
            if not dependency.covers(record.name):
                continue
            warns = record.levelno >= logging.WARNING
            if warns != dependency.down:
                self._suspect()
            if record.levelno >= logging.CRITICAL:
                continue
            if dependency.down and warns:
                dependency.hold_back()
                return True
            # Only while probing: the probes end each interval and say what was counted.
            if self._wake is not None and dependency.repeats(record):
                return True
        return False

    def _suspect(self) -> None:
        """Probe now (from any thread: Faust's consumer logs from a thread of its own)."""
        if self._suspected or self._wake is None:
            return
        self._suspected = True
        loop, wake = self._wake
        with contextlib.suppress(RuntimeError):  # the loop is closing
            loop.call_soon_threadsafe(wake.set)

    async def probe_forever(self, settings: OutageSettings | None = None) -> None:
        """Probe every watched dependency every `probe_interval_s` (cancel to end). Those
        watched later are probed from then on."""
        settings = settings or OutageSettings()
        wake = asyncio.Event()
        self._wake = (asyncio.get_running_loop(), wake)
        woken_at = -_WOKEN_PROBE_GAP_S
        try:
            while True:
                wake.clear()
                self._suspected = False
                for dependency in list(self._watched.values()):
                    try:
                        reachable = await asyncio.to_thread(dependency.probe)
                    except Exception:
                        reachable = False
                    dependency.observe(reachable, time.monotonic(), settings.summary_interval_s)
                try:
                    await asyncio.wait_for(wake.wait(), settings.probe_interval_s)
                except TimeoutError:
                    continue
                # Woken at most this often: a client that warns for long while its dependency
                # is up (one broker of three away) costs a few connects a second, no more.
                await asyncio.sleep(max(0.0, woken_at + _WOKEN_PROBE_GAP_S - time.monotonic()))
                woken_at = time.monotonic()
        finally:
            self._wake = None

    @contextlib.asynccontextmanager
    async def probing(self, settings: OutageSettings | None = None) -> AsyncIterator[None]:
        task = asyncio.create_task(self.probe_forever(settings))
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


OUTAGES = Outages()


def unless_held_back(record: logging.LogRecord) -> bool:
    """A `logging` filter: False for a record `OUTAGES` holds back."""
    return not OUTAGES.holds_back(record)
