"""The ladder's node tools: a GPU reset only where no process uses the GPU, and the GPUs'
serials for a ticket; on nvidia-smi's real answers (an H200's) and a stand-in on PATH."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from actions.remediation import gpu_inventory, gpu_reset
from actions.remediation.nvidia_smi import parse_csv
from actions.remediation.reports import reports_of
from tests.support import fake_nvidia_smi

REAL = Path(__file__).resolve().parents[2] / "fixtures" / "realworld" / "nvidia-smi"


def test_the_real_answers_parse() -> None:
    [gpu] = parse_csv((REAL / "h200_query_gpu.csv").read_text(), gpu_inventory.FIELDS)
    assert gpu == {
        "index": "0",
        "uuid": "GPU-a2e7a77a-f85d-100a-f4f5-4b1634f17d09",
        "serial": "1653724025363",
        "pci.bus_id": "00000000:00:06.0",
        "name": "NVIDIA H200",
    }
    [app] = parse_csv(
        (REAL / "h200_compute_apps_busy.csv").read_text(), ["gpu_uuid", "pid", "name"]
    )
    assert app["pid"] == "519" and app["name"] == "python3"
    assert parse_csv((REAL / "h200_compute_apps_pid_i0_busy.csv").read_text(), ["pid"]) == [
        {"pid": "519"}
    ]
    assert parse_csv((REAL / "h200_compute_apps_idle.csv").read_text(), ["pid"]) == []


def run(tool: str, *args: str, path: str, node: str = "gpu-7") -> tuple[int, dict]:
    env = {**os.environ, "PATH": path, "CENTRALITY_NODE": node}
    done = subprocess.run(
        [sys.executable, "-m", tool, "--json", *args], env=env, capture_output=True, text=True,
        timeout=60, check=False,
    )  # fmt: skip
    [report] = reports_of(done.stdout, json.loads(done.stdout)["kind"]).values()
    return done.returncode, report


@pytest.fixture
def smi(tmp_path: Path) -> str:
    """PATH with the stand-in first."""
    return f"{fake_nvidia_smi.install(tmp_path, gpus=4)}:{os.environ['PATH']}"


def test_a_gpu_in_use_is_never_reset(smi: str, tmp_path: Path) -> None:
    state = tmp_path
    (state / "busy-2").write_text("519\n")
    code, report = run(gpu_reset.__name__, "--gpus", "1,2,9", path=smi)
    assert code == 1 and report["node"] == "gpu-7"
    by_gpu = {g["gpu"]: g for g in report["gpus"]}
    assert by_gpu[1] == {"gpu": 1, "reset": True, "pids": [], "error": None}
    assert by_gpu[2] == {"gpu": 2, "reset": False, "pids": [519], "error": "in use"}
    assert not by_gpu[9]["reset"] and "No devices were found" in by_gpu[9]["error"]
    resets = [c for c in (state / "calls").read_text().splitlines() if " -r " in c + " "]
    assert resets == ["gpu-7 -r -i 1"]  # GPU 2 was asked about, never reset


def test_every_gpu_is_reset_when_none_is_named(smi: str) -> None:
    code, report = run(gpu_reset.__name__, "--gpus", "", path=smi)
    assert code == 0 and [g["gpu"] for g in report["gpus"] if g["reset"]] == [0, 1, 2, 3]


def test_the_inventory_names_each_board(smi: str) -> None:
    code, report = run(gpu_inventory.__name__, path=smi)
    assert code == 0 and report["error"] is None
    assert [g["serial"] for g in report["gpus"]] == [
        "1653724025363", "1653724025364", "1653724025365", "1653724025366"
    ]  # fmt: skip
    assert report["gpus"][0]["name"] == "NVIDIA H200"


def test_without_nvidia_smi_the_tools_say_so(tmp_path: Path) -> None:
    code, report = run(gpu_inventory.__name__, path=str(tmp_path))  # nothing on PATH there
    assert code == 1 and report["gpus"] == [] and "not installed" in report["error"]
