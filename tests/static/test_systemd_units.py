"""The systemd units: `systemd-analyze verify` accepts them, each runs a real `centrality` command
as the dedicated user, reads its settings from /etc/centrality/*.env, and sets only settings
docs/settings.md documents. The collectors restart on failure; the three workers whatever ended
them, with no start limit, so no burst of failures (Kafka away while they start) leaves one
stopped."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli_argv import parse_cli

ROOT = Path(__file__).resolve().parents[2]
UNITS = ROOT / "infra" / "systemd"
BINARY = "/opt/centrality/bin/centrality"
# unit file → (an instance name to verify it as, the command it runs)
EXPECTED = {
    "centrality-agent.service": ("centrality-agent.service", ["agent"]),
    "centrality-tail.service": ("centrality-tail.service", ["tail"]),
    "centrality-checkpoints@.service": ("centrality-checkpoints@run7.service", ["checkpoints"]),
    "centrality-watch-slurm.service": ("centrality-watch-slurm.service", ["watch", "slurm"]),
    "centrality-streams.service": ("centrality-streams.service", ["streams"]),
    "centrality-actions.service": ("centrality-actions.service", ["actions"]),
    "centrality-sink.service": ("centrality-sink.service", ["sink"]),
}
WORKERS = {"centrality-streams.service", "centrality-actions.service", "centrality-sink.service"}


def directives(path: Path) -> dict[str, list[tuple[str, str]]]:
    """section → [(key, value)] in order; systemd allows a key more than once."""
    sections: dict[str, list[tuple[str, str]]] = {}
    current = ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            current = line.strip("[]")
            sections.setdefault(current, [])
            continue
        key, _, value = line.partition("=")
        sections[current].append((key.strip(), value.strip()))
    return sections


def values(path: Path, section: str, key: str) -> list[str]:
    return [v for k, v in directives(path)[section] if k == key]


def verify(unit_dir: Path, instance: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """`systemd-analyze verify` in a root holding the system's own units, ours, and the
    binary the units start (it checks ExecStart is executable)."""
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze is needed (apt-get install systemd; .ci/run does)"
    root = tmp_path / "root"
    if not root.exists():
        shutil.copytree("/usr/lib/systemd/system", root / "usr/lib/systemd/system", symlinks=True)
        binary = root / BINARY.lstrip("/")
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)
    target = root / "etc/systemd/system"
    shutil.copytree(unit_dir, target, dirs_exist_ok=True)
    return subprocess.run(
        [analyze, "verify", f"--root={root}", instance],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_units_and_their_user_are_shipped() -> None:
    shipped = {p.name for p in UNITS.glob("*.service")}
    assert shipped == set(EXPECTED)
    sysusers = (UNITS / "centrality.sysusers.conf").read_text()
    assert re.search(r"^u centrality - .* /var/lib/centrality /usr/sbin/nologin$", sysusers, re.M)


@pytest.mark.parametrize("unit", sorted(EXPECTED))
def test_systemd_accepts_the_unit(unit: str, tmp_path: Path) -> None:
    instance, _ = EXPECTED[unit]
    result = verify(UNITS, instance, tmp_path)
    assert result.returncode == 0, result.stderr
    # Unknown keys and bad values are only warnings to systemd: any output is a finding here.
    assert result.stderr == "" and result.stdout == "", result.stderr + result.stdout


def test_verify_catches_a_mistyped_directive(tmp_path: Path) -> None:
    broken = tmp_path / "units"
    shutil.copytree(UNITS, broken)
    unit = broken / "centrality-agent.service"
    unit.write_text(unit.read_text().replace("Restart=on-failure", "Restrat=on-failure"))
    result = verify(broken, "centrality-agent.service", tmp_path)
    assert "Unknown key" in result.stderr and "Restrat" in result.stderr


@pytest.mark.parametrize("unit", sorted(EXPECTED))
def test_the_unit_runs_a_real_command_as_the_dedicated_user(unit: str) -> None:
    path = UNITS / unit
    [exec_start] = values(path, "Service", "ExecStart")
    binary, *argv = exec_start.split()
    assert binary == BINARY
    assert argv == EXPECTED[unit][1]
    parse_cli(argv)
    assert values(path, "Service", "User") == ["centrality"]
    assert values(path, "Service", "Group") == ["centrality"]
    assert values(path, "Service", "NoNewPrivileges") == ["yes"]
    assert values(path, "Install", "WantedBy") == ["multi-user.target"]


@pytest.mark.parametrize("unit", sorted(EXPECTED))
def test_settings_come_from_etc_centrality_and_are_documented(unit: str) -> None:
    path = UNITS / unit
    files = values(path, "Service", "EnvironmentFile")
    assert files[0] == "/etc/centrality/centrality.env"
    for name in files:
        assert re.fullmatch(r"-?/etc/centrality/[\w%-]+\.env", name), name
    readme = (ROOT / "docs" / "settings.md").read_text()  # generated from the classes
    for assignment in values(path, "Service", "Environment"):
        name, _, value = assignment.partition("=")
        assert name.startswith("CENTRALITY_"), name
        assert f"`{name}`" in readme, f"{name} is not in docs/settings.md"
        # Every file a unit writes lies in its own state directory.
        assert value.startswith("%S/centrality/"), assignment
    if unit == "centrality-sink.service":  # it writes nothing
        assert values(path, "Service", "StateDirectory") == []
        return
    [state] = values(path, "Service", "StateDirectory")
    for assignment in values(path, "Service", "Environment"):
        assert assignment.partition("=")[2].startswith(f"%S/{state}/"), assignment


@pytest.mark.parametrize("unit", sorted(EXPECTED))
def test_workers_restart_whatever_ended_them_and_collectors_on_failure(unit: str) -> None:
    path = UNITS / unit
    [restart_s] = values(path, "Service", "RestartSec")
    assert 1 <= int(restart_s.removesuffix("s")) <= 30, restart_s
    if unit in WORKERS:
        assert values(path, "Service", "Restart") == ["always"]
        # No start limit: systemd would otherwise give a worker up after a burst of restarts.
        assert values(path, "Unit", "StartLimitIntervalSec") == ["0"]
    else:
        assert values(path, "Service", "Restart") == ["on-failure"]
