"""The node agent: an asyncio program of four loops sharing one sink."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

import structlog

from collectors.agent.settings import AgentSettings
from collectors.events import Stamp
from collectors.gpu.backend import BackendUnavailable, GpuBackend
from collectors.health.executable import executable_checks
from collectors.health.registry import CheckContext, CheckResult, HealthCheck, load_checks
from collectors.health.runner import HealthRunner
from collectors.sink import EventSink
from schemas.events import (
    GpuSampled,
    GpuXidObserved,
    NodeHealthChecked,
    NodeHeartbeat,
)
from schemas.events.gpus import GpuXidObservedPayload
from schemas.events.nodes import NodeHealthCheckedPayload, NodeHeartbeatPayload

log = structlog.get_logger(__name__)

AGENT_VERSION = "0.1.0"


async def _every(
    interval_s: float, stop: asyncio.Event, tick: Callable[[], Awaitable[None]]
) -> None:
    """Call `tick` on a fixed cadence (not drifting by its own duration) until `stop`."""
    next_at = time.monotonic()
    while not stop.is_set():
        try:
            await tick()
        except Exception as exc:  # a failed send must not stop sampling; the next one may pass
            log.warning("agent_tick_failed", tick=getattr(tick, "__name__", "?"), error=str(exc))
        next_at += interval_s
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), max(0.0, next_at - time.monotonic()))


class NodeAgent:
    def __init__(self, settings: AgentSettings, backend: GpuBackend, sink: EventSink) -> None:
        self.settings = settings
        self.backend = backend
        self.sink = sink
        self.stamp = Stamp(source=f"agent@{settings.node}", cluster=settings.cluster)
        self.gpus = 0
        self.started = time.monotonic()
        self.ctx = CheckContext(
            expected_gpus=settings.expected_gpus,
            visible_gpus=self._visible_gpus,
            fatal_xids=frozenset(settings.fatal_xids),
            xid_window_s=settings.xid_window_s,
            disk_paths=settings.disk_paths,
            disk_warn_pct=settings.disk_warn_pct,
            disk_critical_pct=settings.disk_critical_pct,
        )
        self.checks: list[HealthCheck] = [
            *load_checks(settings.checks),
            *(
                executable_checks(
                    settings.checks_dir, settings.exec_interval_s, settings.exec_timeout_s
                )
                if settings.checks_dir
                else []
            ),
        ]
        self.health = HealthRunner(
            self.checks,
            self.ctx,
            self._report_health,
            concurrency=settings.check_concurrency,
            resend_s=settings.check_resend_s,
        )

    def open_backend(self) -> None:
        try:
            self.gpus = self.backend.open()
        except BackendUnavailable as exc:
            self.gpus = 0
            log.warning("gpu_backend_unavailable", backend=self.backend.name, error=str(exc))
        else:
            log.info("gpu_backend_open", backend=self.backend.name, gpus=self.gpus)

    async def run(self, stop: asyncio.Event) -> None:
        self.open_backend()
        if self.gpus:
            # Health checks read the samples: take the first before they start.
            with contextlib.suppress(Exception):
                await self.sample()
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(_every(self.settings.heartbeat_interval_s, stop, self.heartbeat))
                tg.create_task(self.health.run(stop))
                if self.gpus:
                    tg.create_task(_every(self.settings.interval_s, stop, self.sample))
                    tg.create_task(self._xid_loop(stop))
        finally:
            self.backend.close()

    async def sample(self) -> None:
        """One interval: every GPU, one message for the node."""
        events = []
        for gpu in range(self.gpus):
            try:
                payload = self.backend.sample(gpu)
            except Exception as exc:  # one GPU off the bus must not hide the others
                log.warning("gpu_sample_failed", gpu=gpu, error=str(exc))
                continue
            self.ctx.samples[gpu] = payload
            events.append(self.stamp.make(GpuSampled, self.settings.node, payload))
        if events:
            await self.sink.emit_batch(events)

    async def heartbeat(self) -> None:
        await self.sink.emit(
            self.stamp.make(
                NodeHeartbeat,
                self.settings.node,
                NodeHeartbeatPayload(
                    agent_version=AGENT_VERSION,
                    gpus=self.gpus,
                    uptime_s=round(time.monotonic() - self.started, 3),
                    interval_s=self.settings.heartbeat_interval_s,
                ),
            )
        )

    async def poll_xids(self, timeout_s: float) -> int:
        xids = await asyncio.to_thread(self.backend.wait_xids, timeout_s)
        now = time.monotonic()
        for xid in xids:
            self.ctx.xids.append((now, xid))
            await self.sink.emit(
                self.stamp.make(
                    GpuXidObserved,
                    self.settings.node,
                    GpuXidObservedPayload(
                        gpu=xid.gpu, uuid=xid.uuid, xid=xid.xid, message=xid.message
                    ),
                )
            )
        return len(xids)

    async def _xid_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.poll_xids(1.0)
            except Exception as exc:
                log.warning("xid_poll_failed", error=str(exc))
                await asyncio.sleep(1.0)

    def _visible_gpus(self) -> int:
        return self.backend.visible_gpus() if self.gpus else 0

    async def _report_health(
        self, check: HealthCheck, result: CheckResult, duration_ms: float
    ) -> None:
        await self.sink.emit(
            self.stamp.make(
                NodeHealthChecked,
                self.settings.node,
                NodeHealthCheckedPayload(
                    check=check.name,
                    status=result.status,
                    message=result.message,
                    details=result.details,
                    duration_ms=round(duration_ms, 3),
                ),
            )
        )
