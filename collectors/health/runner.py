"""Runs checks on their intervals with a timeout and a concurrency limit; reports on change."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable

import structlog

from collectors.clock import MONOTONIC, Clock
from collectors.health.registry import CheckContext, CheckResult, HealthCheck
from schemas.events.nodes import HealthStatus

log = structlog.get_logger(__name__)

Report = Callable[[HealthCheck, CheckResult, float], Awaitable[None]]


async def run_check(check: HealthCheck, ctx: CheckContext) -> CheckResult:
    """One run; a timeout or a crash of the check is UNKNOWN, never an agent failure."""
    try:
        if inspect.iscoroutinefunction(check.run):
            result = await asyncio.wait_for(check.run(ctx), check.timeout_s)
        else:
            result = await asyncio.wait_for(asyncio.to_thread(check.run, ctx), check.timeout_s)
    except TimeoutError:
        return CheckResult(HealthStatus.UNKNOWN, f"timed out after {check.timeout_s:g}s")
    except Exception as exc:  # a broken plugin must not take the agent down
        return CheckResult(HealthStatus.UNKNOWN, f"check failed: {type(exc).__name__}: {exc}")
    assert isinstance(result, CheckResult), f"{check.name} returned {result!r}"
    return result


class HealthRunner:
    def __init__(
        self,
        checks: list[HealthCheck],
        ctx: CheckContext,
        report: Report,
        *,
        concurrency: int = 4,
        resend_s: float = 300.0,
        clock: Clock = MONOTONIC,
    ) -> None:
        self.checks = checks
        self.ctx = ctx
        self.report = report
        self.resend_s = resend_s
        self.clock = clock
        self._slots = asyncio.Semaphore(concurrency)
        self._last: dict[str, tuple[HealthStatus, float]] = {}

    async def run(self, stop: asyncio.Event) -> None:
        async with asyncio.TaskGroup() as tg:
            for check in self.checks:
                tg.create_task(self._loop(check, stop))

    async def run_all_once(self) -> None:
        await asyncio.gather(*(self._tick(check) for check in self.checks))

    async def _loop(self, check: HealthCheck, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self._tick(check)
            await self.clock.sleep(check.interval_s, stop)

    async def _tick(self, check: HealthCheck) -> None:
        async with self._slots:
            started = self.clock.now()
            result = await run_check(check, self.ctx)
            duration_ms = (self.clock.now() - started) * 1000
        now = self.clock.now()
        last = self._last.get(check.name)
        if last is None or last[0] != result.status or now - last[1] >= self.resend_s:
            try:
                await self.report(check, result, duration_ms)
            except Exception as exc:
                log.warning("health_report_failed", check=check.name, error=str(exc))
                return
            self._last[check.name] = (result.status, now)
