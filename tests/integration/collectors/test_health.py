"""An executable health check, run as a process: its exit code and first line make the result.

(Split from tests/unit/collectors/test_health.py: the unit layer starts no process.)"""

from __future__ import annotations

from pathlib import Path

from collectors.health.executable import executable_checks
from collectors.health.registry import (
    CheckResult,
)
from collectors.health.runner import run_check
from schemas.events.nodes import HealthStatus
from tests.unit.collectors.test_health import ctx, script


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
    assert results["slow"].status == HealthStatus.UNKNOWN
    assert "timed out" in results["slow"].message
