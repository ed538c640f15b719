"""The node agent: an asyncio program of five loops sharing one sink.

XIDs arrive two ways, NVML's event API and the kernel log (which also tells of GPUs falling off
the bus without an XID); `XidDeduper` makes one XID seen both ways one event.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import Awaitable, Callable

import structlog

from collectors.agent.kernel_log import KernelLogSource, kernel_log_source
from collectors.agent.settings import AgentSettings
from collectors.agent.xid_dedup import XidDeduper
from collectors.clock import MONOTONIC, Clock
from collectors.events import Stamp
from collectors.gpu.backend import BackendUnavailable, GpuBackend, Xid
from collectors.gpu.kernel_xids import KernelGpuFault, KernelXidParser
from collectors.gpu.pci import GpuIndex, sysfs_bus_ids
from collectors.health.executable import executable_checks
from collectors.health.registry import (
    CheckContext,
    CheckResult,
    DiskUsage,
    HealthCheck,
    load_checks,
)
from collectors.health.runner import HealthRunner
from collectors.sink import EventSink
from schemas.events import (
    GpuSampled,
    GpuXidObserved,
    NodeFactsObserved,
    NodeHealthChecked,
    NodeHeartbeat,
)
from schemas.events.gpus import GpuXidObservedPayload
from schemas.events.nodes import HealthStatus, NodeHealthCheckedPayload, NodeHeartbeatPayload

log = structlog.get_logger(__name__)

AGENT_VERSION = "0.1.0"


async def _every(
    interval_s: float,
    stop: asyncio.Event,
    tick: Callable[[], Awaitable[None]],
    clock: Clock,
    *,
    first_in_s: float = 0.0,
) -> None:
    """Call `tick` on a fixed cadence (not drifting by its own duration) until `stop`, the
    first time `first_in_s` from now."""
    next_at = clock.now() + first_in_s
    if first_in_s:
        await clock.sleep(first_in_s, stop)
    while not stop.is_set():
        try:
            await tick()
        except Exception as exc:  # a failed send must not stop sampling; the next one may pass
            log.warning("agent_tick_failed", tick=getattr(tick, "__name__", "?"), error=str(exc))
        next_at += interval_s
        await clock.sleep(next_at - clock.now(), stop)


class NodeAgent:
    def __init__(
        self,
        settings: AgentSettings,
        backend: GpuBackend,
        sink: EventSink,
        kernel_log: KernelLogSource | None = None,
        *,
        clock: Clock = MONOTONIC,
        disk_usage: DiskUsage = shutil.disk_usage,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self.backend = backend
        self.sink = sink
        self.kernel_log = kernel_log or kernel_log_source(
            settings.kernel_log, settings.kernel_log_poll_s, settings.kernel_log_from_start
        )
        self.dedup = XidDeduper(settings.xid_dedup_s)
        self.gpu_index = GpuIndex({}, [])
        self.stamp = Stamp(source=f"agent@{settings.node}", cluster=settings.cluster)
        self.gpus = 0
        self.started = clock.now()
        self.ctx = CheckContext(
            expected_gpus=settings.expected_gpus,
            visible_gpus=self._visible_gpus,
            fatal_xids=frozenset(settings.fatal_xids),
            xid_window_s=settings.xid_window_s,
            disk_paths=settings.disk_paths,
            disk_warn_pct=settings.disk_warn_pct,
            disk_critical_pct=settings.disk_critical_pct,
            now=clock.now,
            disk_usage=disk_usage,
        )
        self.checks: list[HealthCheck] = [
            *load_checks(settings.checks),
            *(
                executable_checks(
                    settings.checks_dir,
                    settings.exec_interval_s,
                    settings.exec_timeout_s,
                    {k: HealthStatus(v) for k, v in settings.exec_severity_by_check.items()},
                    HealthStatus(settings.exec_severity),
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
            clock=clock,
        )

    def open_backend(self) -> None:
        try:
            self.gpus = self.backend.open()
        except BackendUnavailable as exc:
            self.gpus = 0
            log.warning("gpu_backend_unavailable", backend=self.backend.name, error=str(exc))
        else:
            log.info("gpu_backend_open", backend=self.backend.name, gpus=self.gpus)
        known = self.backend.pci_bus_ids() if self.gpus else {}
        self.gpu_index = GpuIndex(known, sysfs_bus_ids(self.settings.pci_driver_dir))

    async def run(self, stop: asyncio.Event) -> None:
        self.open_backend()
        sampled = False
        if self.gpus:
            # Health checks read the samples: take the first before they start.
            with contextlib.suppress(Exception):
                await self.sample()
                sampled = True
        try:
            async with asyncio.TaskGroup() as tg:
                tg.create_task(
                    _every(self.settings.heartbeat_interval_s, stop, self.heartbeat, self.clock)
                )
                tg.create_task(self.health.run(stop))
                if self.gpus:
                    tg.create_task(
                        _every(self.settings.facts_interval_s, stop, self.send_facts, self.clock)
                    )
                if self.kernel_log is not None:
                    tg.create_task(self._kernel_log_loop(self.kernel_log, stop))
                if self.gpus:
                    interval_s = self.settings.interval_s
                    tg.create_task(
                        _every(
                            interval_s,
                            stop,
                            self.sample,
                            self.clock,
                            first_in_s=interval_s if sampled else 0.0,
                        )
                    )
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

    async def send_facts(self) -> None:
        """What the node's GPUs are, for node groups, people and hardware-aware verdicts."""
        facts = self.backend.facts()
        await self.sink.emit(self.stamp.make(NodeFactsObserved, self.settings.node, facts))

    async def heartbeat(self) -> None:
        await self.sink.emit(
            self.stamp.make(
                NodeHeartbeat,
                self.settings.node,
                NodeHeartbeatPayload(
                    agent_version=AGENT_VERSION,
                    gpus=self.gpus,
                    uptime_s=round(self.clock.now() - self.started, 3),
                    interval_s=self.settings.heartbeat_interval_s,
                ),
            )
        )

    async def poll_xids(self, timeout_s: float) -> int:
        xids = await asyncio.to_thread(self.backend.wait_xids, timeout_s)
        sent = 0
        for xid in xids:
            sent += await self.observe_xid(xid, "nvml")
        return sent

    async def observe_xid(self, xid: Xid, channel: str, pci_bus_id: str | None = None) -> bool:
        """Record and send an XID unless another channel already reported it."""
        now = self.clock.now()
        if not self.dedup.first_sighting(xid.gpu, xid.xid, channel, now):
            return False
        self.ctx.xids.append((now, xid))
        await self.sink.emit(
            self.stamp.make(
                GpuXidObserved,
                self.settings.node,
                GpuXidObservedPayload(
                    gpu=xid.gpu,
                    uuid=xid.uuid,
                    xid=xid.xid,
                    message=xid.message,
                    pci_bus_id=pci_bus_id,
                    channel=channel,
                ),
            )
        )
        return True

    async def read_kernel_log(self, source: KernelLogSource, stop: asyncio.Event) -> int:
        """XIDs and fallen-off-the-bus GPUs from the kernel log, until `stop` or its end. A GPU
        lost or needing a reset that the record names no GPU for is kept for the
        `kernel_gpu_faults` check (a fact about the node)."""
        parser = KernelXidParser()
        sent = 0
        async for line in source.lines(stop):
            found = parser.feed(line)
            if found is None:
                continue
            if isinstance(found, KernelGpuFault):
                self.ctx.gpu_faults.append((self.clock.now(), found))
                log.warning("kernel_gpu_fault", message=found.message, asks=found.resolution)
                continue
            xid = Xid(gpu=self.gpu_index.of(found.bus_id), xid=found.xid, message=found.message)
            channel = "kernel-inferred" if found.inferred else "kernel"
            sent += await self.observe_xid(xid, channel, found.bus_id)
        return sent

    async def _kernel_log_loop(self, source: KernelLogSource, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.read_kernel_log(source, stop)
            except OSError as exc:  # no access to /dev/kmsg, no journalctl: say so, keep going
                log.warning("kernel_log_unreadable", source=source.name, error=str(exc))
            except Exception as exc:
                log.warning("kernel_log_failed", source=source.name, error=str(exc))
            await self.clock.sleep(30.0, stop)

    async def _xid_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.poll_xids(1.0)
            except Exception as exc:
                log.warning("xid_poll_failed", error=str(exc))
                await self.clock.sleep(1.0, stop)

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
