"""node-problem-detector's plugin contract on NPD's own test data and its shipped plugins'
behaviour (see tests/fixtures/realworld/health/PROVENANCE.md). Expected values written by hand.
"""

import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest

from collectors.health.executable import executable_checks
from collectors.health.runner import run_check
from schemas.events.nodes import HealthStatus
from tests.unit.collectors.test_health import ctx

NPD = Path(__file__).parents[2] / "fixtures" / "realworld" / "health" / "npd_test_data"
LONG = "012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"


@dataclass(frozen=True)
class Case:
    name: str
    status: HealthStatus
    message: str  # exact, or the start of it when `prefix`
    prefix: bool = False


NPD_TEST_DATA = [
    Case("ok", HealthStatus.OK, "OK"),
    Case("non-ok", HealthStatus.CRITICAL, "NonOK"),
    Case("unknown", HealthStatus.UNKNOWN, "UNKNOWN"),
    Case("non-executable", HealthStatus.UNKNOWN, f"{NPD}/non-executable.sh is not executable"),
    Case("longer-than-80-stdout-with-ok-exit-status", HealthStatus.OK, LONG),
    Case("non-defined-exit-status", HealthStatus.UNKNOWN, "NON-DEFINED-EXIT-STATUS"),
    Case("sleep-3-second-with-ok-exit-status", HealthStatus.UNKNOWN, "timed out after 1s"),
]


@pytest.fixture(scope="module")
def npd_checks() -> dict[str, object]:
    return {c.name: c for c in executable_checks(NPD, interval_s=60, timeout_s=1.0)}


@pytest.mark.parametrize("case", NPD_TEST_DATA, ids=[c.name for c in NPD_TEST_DATA])
async def test_npd_test_data(case: Case, npd_checks: dict[str, object]) -> None:
    result = await run_check(npd_checks[case.name], ctx())  # type: ignore[arg-type]
    assert result.status == case.status
    if case.name == "non-executable":
        assert result.message.startswith(case.message)
    else:
        assert result.message == case.message


@dataclass(frozen=True)
class Branch:
    plugin: str
    stdout: tuple[str, ...]
    exit_code: int
    status: HealthStatus
    message: str


PLUGIN_BEHAVIOUR = [
    Branch("check_ntp", ("ntp.service is running",), 0, HealthStatus.OK, "ntp.service is running"),
    Branch(
        "check_ntp",
        ("ntp.service is not running",),
        1,
        HealthStatus.CRITICAL,
        "ntp.service is not running",
    ),
    Branch(
        "check_ntp",
        ("Could not find 'systemctl' - require systemd",),
        2,
        HealthStatus.UNKNOWN,
        "Could not find 'systemctl' - require systemd",
    ),
    Branch(
        "dns_problem",
        ("DNS lookup to kubernetes.default is working",),
        0,
        HealthStatus.OK,
        "DNS lookup to kubernetes.default is working",
    ),
    Branch(
        "dns_problem",
        ("DNS lookup to kubernetes.default is not working",),
        1,
        HealthStatus.CRITICAL,
        "DNS lookup to kubernetes.default is not working",
    ),
    Branch(
        "dns_problem",
        ("Could not find 'getent' - require getent",),
        2,
        HealthStatus.UNKNOWN,
        "Could not find 'getent' - require getent",
    ),
    Branch(
        "network_problem",
        ("Conntrack table usage over 90%: 235930 out of 262144",),
        1,
        HealthStatus.CRITICAL,
        "Conntrack table usage over 90%: 235930 out of 262144",
    ),
    Branch(
        "network_problem",
        ("Conntrack table usage: 1200 out of 262144",),
        0,
        HealthStatus.OK,
        "Conntrack table usage: 1200 out of 262144",
    ),
    Branch("network_problem", (), 2, HealthStatus.UNKNOWN, ""),  # no conntrack files
    Branch(
        "iptables_mode",
        ("Found rules from both versions, iptables-legacy: 12 iptables-nft: 40", "1"),
        0,
        HealthStatus.OK,
        "Found rules from both versions, iptables-legacy: 12 iptables-nft: 40",
    ),
]


@pytest.mark.parametrize(
    "branch", PLUGIN_BEHAVIOUR, ids=[f"{b.plugin}-exit{b.exit_code}" for b in PLUGIN_BEHAVIOUR]
)
async def test_npd_plugin_branches(branch: Branch, tmp_path: Path) -> None:
    lines = "".join(f"echo {shlex.quote(line)}\n" for line in branch.stdout)
    path = tmp_path / f"{branch.plugin}.sh"
    path.write_text(f"#!/bin/sh\n{lines}exit {branch.exit_code}\n")
    path.chmod(0o755)
    [check] = executable_checks(tmp_path, interval_s=60, timeout_s=5)
    result = await run_check(check, ctx())
    assert (check.name, result.status, result.message) == (
        branch.plugin,
        branch.status,
        branch.message,
    )


async def test_a_plugin_can_be_configured_to_warn_instead() -> None:
    checks = executable_checks(
        NPD, interval_s=60, timeout_s=1.0, severity={"non-ok": HealthStatus.WARN}
    )
    [non_ok] = [c for c in checks if c.name == "non-ok"]
    assert (await run_check(non_ok, ctx())).status == HealthStatus.WARN
