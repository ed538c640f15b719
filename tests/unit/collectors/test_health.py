import asyncio
from pathlib import Path

from collectors.gpu.backend import Xid
from collectors.health.registry import (
    CheckContext,
    CheckFn,
    CheckResult,
    DiskUsage,
    HealthCheck,
    health_check,
)
from collectors.health.runner import HealthRunner, run_check
from schemas.events.nodes import HealthStatus
from tests.support.clock import ManualClock

TIB = 2**40


def no_host_disks(path: str) -> tuple[int, int, int]:
    raise AssertionError(f"a check read the host's disk {path}; give it `disk_usage`")


def ctx(**kw: object) -> CheckContext:
    base: dict[str, object] = {
        "expected_gpus": None,
        "visible_gpus": lambda: 0,
        "fatal_xids": frozenset({79}),
        "xid_window_s": 60.0,
        "disk_paths": ("/",),
        "disk_warn_pct": 90.0,
        "disk_critical_pct": 95.0,
        "disk_usage": no_host_disks,
    }
    return CheckContext(**{**base, **kw})  # type: ignore[arg-type]


def script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


async def test_decorated_function_check_and_a_crashing_one() -> None:
    @health_check("test_answer", interval_s=5, timeout_s=1)
    def answer(c: CheckContext) -> CheckResult:
        return CheckResult(HealthStatus.WARN, f"{c.visible_gpus()} gpus")

    @health_check("test_broken", interval_s=5, timeout_s=1)
    async def broken(c: CheckContext) -> CheckResult:
        raise RuntimeError("boom")

    ok = await run_check(HealthCheck("test_answer", answer, 5, 1), ctx(visible_gpus=lambda: 3))
    assert ok == CheckResult(HealthStatus.WARN, "3 gpus")
    bad = await run_check(HealthCheck("test_broken", broken, 5, 1), ctx())
    assert bad.status == HealthStatus.UNKNOWN and "boom" in bad.message


async def test_no_more_checks_run_at_once_than_the_concurrency_limit() -> None:
    running = 0
    peak = 0
    two_in, gate = asyncio.Event(), asyncio.Event()

    async def held(_: CheckContext) -> CheckResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 2:
            two_in.set()
        await gate.wait()  # held until the test has seen two running together
        running -= 1
        return CheckResult(HealthStatus.OK)

    reports: list[str] = []

    async def report(check: HealthCheck, result: CheckResult, duration_ms: float) -> None:
        reports.append(check.name)

    checks = [HealthCheck(f"c{i}", held, 60, 60) for i in range(6)]
    runner = HealthRunner(checks, ctx(), report, concurrency=2)
    all_done = asyncio.create_task(runner.run_all_once())
    await two_in.wait()
    gate.set()
    await all_done
    assert peak == 2 and sorted(reports) == [f"c{i}" for i in range(6)]


async def test_results_are_reported_on_change_and_again_after_resend_s() -> None:
    clock = ManualClock()
    statuses = iter([HealthStatus.OK, HealthStatus.OK, HealthStatus.WARN] + [HealthStatus.WARN] * 3)
    reports: list[tuple[float, HealthStatus]] = []

    def flipping(_: CheckContext) -> CheckResult:
        return CheckResult(next(statuses))

    async def report(check: HealthCheck, result: CheckResult, duration_ms: float) -> None:
        reports.append((clock.now(), result.status))

    check = HealthCheck("flip", flipping, 60, 60)
    runner = HealthRunner([check], ctx(), report, resend_s=300, clock=clock)
    for _ in range(3):
        await runner.run_all_once()
    assert reports == [(0, HealthStatus.OK), (0, HealthStatus.WARN)]
    await clock.advance(299.5)
    await runner.run_all_once()
    assert len(reports) == 2  # unchanged and not yet due
    await clock.advance(0.5)
    await runner.run_all_once()
    assert reports[2:] == [(300, HealthStatus.WARN)]


async def test_a_result_that_failed_to_send_is_sent_at_the_next_run() -> None:
    clock = ManualClock()
    sent: list[float] = []
    broker_up = False

    async def report(check: HealthCheck, result: CheckResult, duration_ms: float) -> None:
        if not broker_up:
            raise ConnectionError("broker away")
        sent.append(clock.now())

    ok = HealthCheck("ok", lambda _: CheckResult(HealthStatus.OK), 60, 60)
    runner = HealthRunner([ok], ctx(), report, clock=clock)
    await runner.run_all_once()
    broker_up = True
    await clock.advance(60)
    await runner.run_all_once()  # unchanged, but never delivered
    await runner.run_all_once()  # delivered now: not again
    assert sent == [60]


async def test_duration_is_measured_on_the_runners_clock() -> None:
    clock = ManualClock()
    durations: list[float] = []

    def takes_a_quarter_second(_: CheckContext) -> CheckResult:
        clock.t += 0.25
        return CheckResult(HealthStatus.OK)

    async def report(check: HealthCheck, result: CheckResult, duration_ms: float) -> None:
        durations.append(duration_ms)

    slow = HealthCheck("slow", takes_a_quarter_second, 60, 60)
    await HealthRunner([slow], ctx(), report, clock=clock).run_all_once()
    assert durations == [250.0]


async def test_each_check_runs_on_its_own_interval_until_stopped() -> None:
    clock = ManualClock()
    ran: dict[str, list[float]] = {"fast": [], "slow": []}

    def recorder(name: str) -> CheckFn:
        def run(_: CheckContext) -> CheckResult:
            ran[name].append(clock.now())
            return CheckResult(HealthStatus.OK)

        return run

    async def report(check: HealthCheck, result: CheckResult, duration_ms: float) -> None:
        return None

    checks = [
        HealthCheck("fast", recorder("fast"), 30, 60),
        HealthCheck("slow", recorder("slow"), 60, 60),
    ]
    stop = asyncio.Event()
    task = asyncio.create_task(HealthRunner(checks, ctx(), report, clock=clock).run(stop))
    try:
        await clock.settle(2)
        await clock.advance(120)
    finally:
        stop.set()
        await clock.finish(task)
    assert ran == {"fast": [0, 30, 60, 90, 120], "slow": [0, 60, 120]}


def disks(used_pct: dict[str, float]) -> DiskUsage:
    """Disks of the given fullness, 1 TiB each; an unmounted one reads 0 bytes."""

    def usage(path: str) -> tuple[int, int, int]:
        if path not in used_pct:
            return 0, 0, 0
        used = int(TIB * used_pct[path] / 100)
        return TIB, used, TIB - used

    return usage


def test_disk_space_is_the_fullest_path_against_the_thresholds() -> None:
    from collectors.health.builtin.disk_space import disk_space

    paths = ("/", "/scratch", "/gone")

    def check(scratch_pct: float) -> CheckResult:
        return disk_space(
            ctx(disk_paths=paths, disk_usage=disks({"/": 40, "/scratch": scratch_pct}))
        )

    assert check(89.9) == CheckResult(
        HealthStatus.OK,
        "/scratch 89.9% used",
        {"used_pct": {"/": 40.0, "/scratch": 89.9, "/gone": 0.0}},
    )
    assert check(90.0).status == HealthStatus.WARN
    assert check(94.9) == CheckResult(
        HealthStatus.WARN,
        "/scratch 94.9% used",
        {"used_pct": {"/": 40.0, "/scratch": 94.9, "/gone": 0.0}},
    )
    assert check(95.0).status == HealthStatus.CRITICAL
    assert check(100.0).message == "/scratch 100.0% used"


def test_fatal_xids_count_within_their_window_on_the_agents_clock() -> None:
    from collectors.health.builtin.fatal_xids import fatal_xids

    clock = ManualClock()
    context = ctx(now=clock.now, xid_window_s=60.0)
    context.xids.append((10.0, Xid(gpu=1, xid=79)))
    context.xids.append((40.0, Xid(gpu=2, xid=13)))
    clock.t = 70.0
    assert fatal_xids(context) == CheckResult(
        HealthStatus.CRITICAL, "fatal XIDs: gpu1:xid79", {"fatal": ["gpu1:xid79"], "recent": 2}
    )
    clock.t = 70.5
    assert fatal_xids(context) == CheckResult(
        HealthStatus.WARN, "1 non-fatal XIDs", {"fatal": [], "recent": 1}
    )
    clock.t = 100.5
    assert fatal_xids(context).status == HealthStatus.OK
