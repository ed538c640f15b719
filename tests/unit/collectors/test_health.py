import asyncio
import time
from pathlib import Path

from collectors.health.executable import executable_checks
from collectors.health.registry import CheckContext, CheckResult, HealthCheck, health_check
from collectors.health.runner import HealthRunner, run_check
from schemas.events.nodes import HealthStatus


def ctx(**kw: object) -> CheckContext:
    base: dict[str, object] = {
        "expected_gpus": None,
        "visible_gpus": lambda: 0,
        "fatal_xids": frozenset({79}),
        "xid_window_s": 60.0,
        "disk_paths": ("/",),
        "disk_warn_pct": 90.0,
        "disk_critical_pct": 95.0,
    }
    return CheckContext(**{**base, **kw})  # type: ignore[arg-type]


def script(directory: Path, name: str, body: str) -> Path:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return path


async def test_executable_exit_codes_map_to_statuses_with_first_line(tmp_path: Path) -> None:
    script(tmp_path, "ok.sh", "echo all good; echo second line")
    script(tmp_path, "fan.sh", "echo fan slow; exit 1")
    script(tmp_path, "ib.sh", "echo ib0 down; exit 1")
    script(tmp_path, "unknown.sh", "echo no ibstat here; exit 2")
    script(tmp_path, "odd.sh", "echo what; exit 7")
    script(tmp_path, "slow.sh", "sleep 5; echo late")
    (tmp_path / "notes.txt").write_text("not executable")
    (tmp_path / ".hidden").write_text("skipped")
    severity = {"fan": HealthStatus.WARN}
    checks = {
        c.name: c
        for c in executable_checks(tmp_path, interval_s=60, timeout_s=0.5, severity=severity)
    }
    assert set(checks) == {"ok", "fan", "ib", "unknown", "odd", "slow", "notes"}
    results = {name: await run_check(c, ctx()) for name, c in checks.items()}
    assert results["ok"] == CheckResult(HealthStatus.OK, "all good")
    assert results["fan"] == CheckResult(HealthStatus.WARN, "fan slow")
    assert results["ib"] == CheckResult(HealthStatus.CRITICAL, "ib0 down")
    assert results["unknown"] == CheckResult(
        HealthStatus.UNKNOWN, "no ibstat here", {"exit_code": 2}
    )
    assert results["notes"].status == HealthStatus.UNKNOWN
    assert "not executable" in results["notes"].message
    assert results["odd"].status == HealthStatus.UNKNOWN
    assert results["odd"].details == {"exit_code": 7}
    started = time.monotonic()
    assert results["slow"].status == HealthStatus.UNKNOWN
    assert "timed out" in results["slow"].message
    assert time.monotonic() - started < 1


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


async def test_concurrency_limit_and_reporting_on_change_and_periodically() -> None:
    running = 0
    peak = 0
    statuses = iter([HealthStatus.OK, HealthStatus.OK, HealthStatus.WARN, HealthStatus.WARN])

    async def slow(_: CheckContext) -> CheckResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0.05)
        running -= 1
        return CheckResult(HealthStatus.OK)

    reports: list[tuple[str, HealthStatus]] = []

    async def report(check: HealthCheck, result: CheckResult, duration_ms: float) -> None:
        reports.append((check.name, result.status))

    checks = [HealthCheck(f"c{i}", slow, 60, 1) for i in range(6)]
    runner = HealthRunner(checks, ctx(), report, concurrency=2)
    await runner.run_all_once()
    assert peak == 2 and len(reports) == 6

    def flipping(_: CheckContext) -> CheckResult:
        return CheckResult(next(statuses))

    reports.clear()
    runner = HealthRunner([HealthCheck("flip", flipping, 60, 1)], ctx(), report, resend_s=0.2)
    for _ in range(3):
        await runner.run_all_once()
    assert reports == [("flip", HealthStatus.OK), ("flip", HealthStatus.WARN)]
    await asyncio.sleep(0.25)
    await runner.run_all_once()
    assert reports[-1] == ("flip", HealthStatus.WARN) and len(reports) == 3


async def test_disk_space_thresholds() -> None:
    from collectors.health.builtin.disk_space import disk_space

    assert disk_space(ctx(disk_warn_pct=0.0, disk_critical_pct=101.0)).status == HealthStatus.WARN
    assert disk_space(ctx(disk_warn_pct=0.0, disk_critical_pct=0.0)).status == HealthStatus.CRITICAL
    assert disk_space(ctx(disk_warn_pct=101.0, disk_critical_pct=101.0)).status == HealthStatus.OK
