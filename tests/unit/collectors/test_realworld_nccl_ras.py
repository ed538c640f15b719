"""NCCL's RAS reports (2.24+) and current init lines, on outputs from NVIDIA's RAS guide and
public issues (tests/fixtures/realworld/nccl/PROVENANCE.md). Expected values by hand."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from typer.testing import CliRunner

from centrality.cli import app
from collectors.events import Stamp
from collectors.nccl.events import ras_events
from collectors.nccl.parse import parse_nccl_output
from collectors.nccl.ras import RasProcess, read_ras
from schemas.events.logs import LogSignal

NCCL = Path(__file__).parents[2] / "fixtures" / "realworld" / "nccl"
RAS = NCCL / "ras"

# file → (errors, warnings, dead, unreachable)
CASES: dict[str, tuple[list[str], list[str], list[RasProcess], list[RasProcess]]] = {
    # A healthy report of 256 ranks while PyTorch's watchdog had timed out: nothing named.
    "ras_issue1730_healthy_2.26.2.txt": ([], [], [], []),
    # A busy job: two ranks one AllGather ahead. A warning, no process named as failed.
    "ras_issue1911_mismatch_2.26.2.txt": ([], ["MISMATCH"], [], []),
    # One process did not answer: the job-wide INCOMPLETE and the communicator's.
    "ras_issue1762_incomplete_2.27.3.txt": (
        ["INCOMPLETE", "INCOMPLETE"],
        [],
        [],
        [RasProcess(60004, "10.4.109.13", (0,))],
    ),
    "ras_docs_incomplete_timeout.txt": (
        ["INCOMPLETE", "INCOMPLETE"],
        ["TIMEOUT"],
        [],
        [RasProcess(3487984, "172.16.64.213", (5,))],
    ),
    # 60 s later RAS declares it dead: dead, no longer merely unreachable.
    "ras_docs_dead.txt": (
        ["DEAD", "INCOMPLETE"],
        [],
        [RasProcess(3487984, "172.16.64.213", (5,))],
        [],
    ),
    "ras_docs_2.29.1.json": (
        ["INCOMPLETE"],
        [],
        [],
        [RasProcess(1524345, "172.16.64.245", (1,))],
    ),
    "ras_docs_monitor_peer_dead.txt": ([], [], [RasProcess(1524345, "172.16.64.245", (1,))], []),
    "ras_docs_monitor_peer_dead.json": ([], [], [RasProcess(1524345, "172.16.64.245", (1,))], []),
}


def test_every_ras_file_is_a_case() -> None:
    assert {p.name for p in RAS.iterdir()} == set(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_real_ras_report(name: str) -> None:
    report = read_ras((RAS / name).read_text())
    assert report is not None
    assert (report.errors, report.warnings, report.dead, report.unreachable) == CASES[name]


def test_nccl_tests_outputs_hold_no_ras_report() -> None:
    for path in NCCL.glob("*.*"):
        if path.suffix != ".md":
            assert read_ras(path.read_text()) is None, path.name


def test_current_init_lines_count_the_communicator_once() -> None:
    lines = (NCCL / "nccl_issue1597_init_lines_2.2x.log").read_text().splitlines()
    out = parse_nccl_output(lines)
    # `Init timings … rank 1 nranks 2` is a timing line, not a second communicator.
    assert out.comm_ranks == {"0x63d2de869050": 2}
    assert (out.nranks, out.runs, out.warnings) == (2, [], [])


def test_the_cli_names_the_dead_process_and_exits_1() -> None:
    path = RAS / "ras_docs_dead.txt"
    result = CliRunner().invoke(app, ["nccl", str(path), "--node", "n1", "--dry-run", "--json"])
    assert result.exit_code == 1, result.output
    doc = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert doc["ras"]["dead"] == [
        {"pid": 3487984, "node": "172.16.64.213", "gpus": [5], "rank": None}
    ]
    assert doc["ras"]["nodes"] == ["172.16.64.213"] and doc["sent"] == 0
    assert doc["ras"]["signals_sent"] == 0  # a log signal is a job's: none without --job


def test_a_ras_warning_alone_does_not_fail_the_cli() -> None:
    path = RAS / "ras_issue1911_mismatch_2.26.2.txt"
    result = CliRunner().invoke(app, ["nccl", str(path), "--node", "n1", "--dry-run", "--json"])
    assert result.exit_code == 0, result.output


# file → what each signal of the job says: (pattern, peer, rank, start of its line). Issue 43:
# before these, the CLI printed RAS's findings and sent nothing.
SIGNALS: dict[str, list[tuple[str, str, int | None, str]]] = {
    "ras_docs_dead.txt": [
        (
            "nccl_ras_dead",
            "172.16.64.213",
            None,
            "NCCL RAS: Process 3487984 on node 172.16.64.213 managing GPU 5",
        ),
    ],
    "ras_issue1762_incomplete_2.27.3.txt": [
        ("nccl_ras_unreachable", "10.4.109.13", None, "NCCL RAS: Process 60004 on node"),
    ],
    "ras_docs_monitor_peer_dead.txt": [
        ("nccl_ras_dead", "172.16.64.245", None, "NCCL RAS: [2025-12-19 13:07:07] PEER_DEAD:"),
    ],
    "ras_docs_monitor_peer_dead.json": [
        ("nccl_ras_dead", "172.16.64.245", None, "NCCL RAS: PEER_DEAD: process 1524345 on"),
    ],
    "ras_docs_2.29.1.json": [
        ("nccl_ras_unreachable", "172.16.64.245", 1, "NCCL RAS: missing rank 1: process"),
    ],
    "ras_issue1911_mismatch_2.26.2.txt": [],
    "ras_issue1730_healthy_2.26.2.txt": [],
}


@pytest.mark.parametrize("name", sorted(SIGNALS))
def test_a_process_ras_names_is_the_jobs_signal_against_its_node(name: str) -> None:
    report = read_ras((RAS / name).read_text())
    assert report is not None
    events = ras_events(report, Stamp("nccl@n1", "c1"), "n1", "slurm/c1/7")
    got = [(e.payload.pattern, e.payload.peer, e.payload.rank) for e in events]
    assert got == [s[:3] for s in SIGNALS[name]]
    for event, (*_, start) in zip(events, SIGNALS[name], strict=True):
        assert event.subject == "slurm/c1/7" and event.payload.node == "n1"
        assert event.payload.signal is LogSignal.NCCL_ERROR
        assert event.payload.line.startswith(start), event.payload.line


def test_with_a_job_the_cli_sends_the_signal() -> None:
    path = RAS / "ras_docs_dead.txt"
    args = ["nccl", str(path), "--node", "n1", "--job", "slurm/c1/7", "--dry-run", "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 1, result.output
    doc = orjson.loads(result.stdout.strip().splitlines()[-1])
    assert doc["ras"]["signals_sent"] == 1
