"""The dcgm_health plugin runs a stand-in `dcgmi` (a process answering real captures).

(Split from tests/unit/collectors/test_realworld_dcgm.py: the unit layer starts no process.)"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from collectors.health.registry import load_checks
from collectors.health.runner import run_check
from schemas.events.nodes import HealthStatus
from tests.unit.collectors.test_health import ctx
from tests.unit.collectors.test_realworld_dcgm import CORPUS, CRIT


def stand_in_dcgmi(bin_dir: Path, output: Path, code: int) -> None:
    """An executable named dcgmi that prints a real captured output and exits with `code`."""
    script = bin_dir / "dcgmi"
    script.write_text(f"#!/bin/sh\ncat {shlex.quote(str(output))}\nexit {code}\n")
    script.chmod(0o755)


@pytest.fixture
def dcgm_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> object:
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    [check] = load_checks(["collectors.health.builtin.dcgm_health"])
    return check


async def test_the_plugin_reports_dcgm_health_failures(tmp_path: Path, dcgm_check: object) -> None:
    stand_in_dcgmi(tmp_path, CORPUS / "health_text_dcgm_health_tests.txt", 0)
    result = await run_check(dcgm_check, ctx())  # type: ignore[arg-type]
    assert result.status == CRIT
    assert result.message.startswith("dcgm: GPU WARN on GPUs [0]; Memory system CRITICAL")
    assert [f["gpus"] for f in result.details["findings"]] == [[0], [1], [1]]


async def test_the_plugin_without_dcgm_is_unknown(tmp_path: Path, dcgm_check: object) -> None:
    stand_in_dcgmi(tmp_path, tmp_path / "missing", 255)
    result = await run_check(dcgm_check, ctx())  # type: ignore[arg-type]
    assert result.status == HealthStatus.UNKNOWN and result.message.startswith("dcgmi exited 255")


async def test_the_diag_plugin_reports_each_tests_result_per_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    [check] = load_checks(["collectors.health.builtin.dcgm_diag"])
    stand_in_dcgmi(tmp_path, CORPUS / "diag_json_4.5.2_gb10_level2.json", 0)
    result = await run_check(check, ctx())
    assert result.status == CRIT and result.message == "dcgm: software CRITICAL on GPUs [0]"
    assert result.details["version"] == "4.5.2"
    assert result.details["results"] == [
        ["software", "Fail", [0]],
        ["memory", "Pass", [0]],
        ["pcie", "Pass", [0]],
    ]
