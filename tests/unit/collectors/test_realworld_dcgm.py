"""DCGM's `dcgmi diag` and `dcgmi health` outputs read as health-check findings, on outputs from
real public sources (tests/fixtures/realworld/dcgm/PROVENANCE.md). Expected values by hand."""

from __future__ import annotations

from pathlib import Path

import pytest

from collectors.health.dcgm import read_dcgm
from schemas.events.nodes import HealthStatus

CORPUS = Path(__file__).parents[2] / "fixtures" / "realworld" / "dcgm"
OK, WARN, CRIT = HealthStatus.OK, HealthStatus.WARN, HealthStatus.CRITICAL

Finding = tuple[str, HealthStatus, tuple[int, ...], str]  # test, status, GPUs, message start
# file → (overall status, DCGM version, findings)
CASES: dict[str, tuple[HealthStatus, str | None, list[Finding]]] = {
    # DCGM 3.1.0 JSON, every test passed, with a warning printed before the document and
    # `null` entries between tests.
    "diag_json_3.1.0_real_output.txt": (OK, "3.1.0", []),
    # Per-GPU JSON: sm_stress failed on GPUs 0, 2 and 3; SKIPs are no finding.
    "diag_json_per_gpu_dcgm_test_strings.json": (
        CRIT,
        "1.7",
        [
            ("sm_stress", CRIT, (0,), "Max stress level of 2128.7 did not exceed"),
            ("sm_stress", CRIT, (2,), "Max stress level of 1096.5 did not exceed"),
            ("sm_stress", CRIT, (3,), "Max stress level of 1099.7 did not exceed"),
        ],
    ),
    # 3.3.8 text: GPU Memory `Fail - All`, its eight `Warning` rows its text; `Info` and the
    # `Skip - All` rows are no finding.
    "diag_text_3.3.8_cuda_init_fail.txt": (
        CRIT,
        "3.3.8",
        [
            (
                "GPU Memory",
                CRIT,
                (),
                "GPU 0 Error using CUDA API cuInit Check DCGM and system logs for errors. Reset "
                "GPU. Restart DCGM. Rerun diagnostics. Unable to initialize CUDA library: 'system "
                "not yet initialized'",
            ),
        ],
    ),
    # A deployment `Error` row: GPU 3 needs its pending row remaps (a reset) or an RMA.
    "diag_text_ml_engineering_row_remap_pending.txt": (
        CRIT,
        None,
        [
            (
                "Error",
                CRIT,
                (3,),
                "GPU 3 has uncorrectable memory errors and row remappings are pending",
            )
        ],
    ),
    # DCGM 4.x (issue 43). JSON: the version in `metadata`, results per entity; a Fail DCGM
    # gives for persistence mode being off is DCGM's verdict, taken as such.
    "diag_json_4.2.3_gb10_level1.json": (
        CRIT,
        "4.2.3",
        [("software", CRIT, (0,), "Persistence Mode: Persistence mode for GPU 0 is disabled.")],
    ),
    "diag_json_4.5.2_gb10_level2.json": (
        CRIT,
        "4.5.2",
        [("software", CRIT, (0,), "Persistence Mode: Persistence mode for GPU 0 is disabled.")],
    ),
    "diag_json_4.5.2_gb10_level2_gated.json": (
        CRIT,
        "4.5.2",
        [("software", CRIT, (0,), "Persistence Mode: Persistence mode for GPU 0 is disabled.")],
    ),
    # 4.x text: a test row, its `Warning` rows (wrapped at 45 characters), then its GPUs' rows.
    # The test failed as a whole (its child process' output unreadable) though every GPU passed.
    "diag_text_4.2.3_pcie_fail_warnings.txt": (
        CRIT,
        "4.2.3",
        [
            (
                "pcie",
                CRIT,
                (),
                "There was an internal error during the test: 'A child process (152) exited with "
                "non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart "
                "DCGM. Rerun diagnostics. There was an internal error during the test: 'A child "
                "process (153)",
            )
        ],
    ),
    "diag_text_4.4.1_pcie_fail_8_gpus.txt": (
        CRIT,
        "4.4.1",
        [
            (
                "pcie",
                CRIT,
                (),
                "There was an internal error during the test: 'Output of child process (11167) "
                "couldn't be parsed: '* Line 1, Column 1 Syntax error: value, object or array "
                "expected. '' Check DCGM and system logs for errors. Reset GPU. Restart DCGM.",
            )
        ],
    ),
    "diag_text_4.4.2_level2_all_pass.txt": (OK, "4.4.2", []),
    # `dcgmi health -c`: GPU 0 warns, GPU 1 fails its memory system and warns on SM.
    "health_text_dcgm_health_tests.txt": (
        CRIT,
        None,
        [
            ("GPU", WARN, (0,), "The car is red? Are you sure because that doesn't seem like"),
            ("Memory system", CRIT, (1,), "Green can be emerald and beautiful, but there are sh"),
            ("SM system", WARN, (1,), "The guards wear Kholin blue because otherwise they'd be la"),
        ],
    ),
}


def test_every_fixture_is_a_case_and_documented() -> None:
    provenance = (CORPUS / "PROVENANCE.md").read_text()
    files = {p.name for p in CORPUS.iterdir() if p.name != "PROVENANCE.md"}
    assert files == set(CASES)
    assert all(f"`{name}`" in provenance for name in files)


@pytest.mark.parametrize("name", sorted(CASES))
def test_findings_of_a_real_output(name: str) -> None:
    status, version, expected = CASES[name]
    report = read_dcgm((CORPUS / name).read_text())
    assert (report.status, report.version) == (status, version)
    got = [(f.test, f.status, f.gpus) for f in report.findings]
    assert got == [e[:3] for e in expected]
    for finding, case in zip(report.findings, expected, strict=True):
        assert finding.message.startswith(case[3]), finding.message


# file → each test's result (its own as a whole, else the worst of its GPUs'), and the GPUs the
# details list per test and result: passes and skips are kept, not only what failed.
PER_TEST: dict[str, tuple[dict[str, str], list[list[object]]]] = {
    "diag_json_4.5.2_gb10_level2.json": (
        {"software": "Fail", "memory": "Pass", "pcie": "Pass"},
        [["software", "Fail", [0]], ["memory", "Pass", [0]], ["pcie", "Pass", [0]]],
    ),
    "diag_json_4.5.2_gb10_level2_gated.json": (
        {"software": "Fail", "memory": "Skip", "pcie": "Skip"},
        [["software", "Fail", [0]], ["memory", "Skip", [0]], ["pcie", "Skip", [0]]],
    ),
    "diag_text_4.4.1_pcie_fail_8_gpus.txt": (
        {"software": "Pass", "memory": "Pass", "pcie": "Fail"},
        [
            ["software", "Pass", list(range(8))],
            ["memory", "Pass", list(range(8))],
            ["pcie", "Fail", []],
            ["pcie", "Pass", list(range(8))],
        ],
    ),
    "diag_text_4.4.2_level2_all_pass.txt": (
        {"software": "Pass", "memory": "Pass", "pcie": "Pass"},
        [["software", "Pass", [0]], ["memory", "Pass", [0]], ["pcie", "Pass", [0]]],
    ),
    # DCGM 1.7's per-GPU JSON: sm_stress failed on three GPUs and passed on GPU 1.
    "diag_json_per_gpu_dcgm_test_strings.json": (
        {},
        [["sm_stress", "Fail", [0, 2, 3]], ["sm_stress", "Pass", [1]]],
    ),
    # 3.x text: a result per test for all GPUs.
    "diag_text_3.3.8_cuda_init_fail.txt": (
        {"PCIe": "Skip", "GPU Memory": "Fail", "Memory Bandwidth": "Skip", "EUD Test": "Skip"},
        [["GPU Memory", "Fail", []]],
    ),
}


@pytest.mark.parametrize("name", sorted(PER_TEST))
def test_each_tests_result_per_gpu_passes_included(name: str) -> None:
    per_test, rows = PER_TEST[name]
    report = read_dcgm((CORPUS / name).read_text())
    assert per_test.items() <= report.per_test().items()
    results = report.details()["results"]
    assert all(row in results for row in rows), results


def test_a_run_without_failures_says_what_ran() -> None:
    report = read_dcgm((CORPUS / "diag_json_4.5.2_gb10_level2_gated.json").read_text())
    assert report.summary() == "dcgm: software CRITICAL on GPUs [0]"
    passed = read_dcgm((CORPUS / "diag_text_4.4.2_level2_all_pass.txt").read_text())
    assert passed.summary() == "dcgm: no failures (tests: 3 pass)"


def test_the_summary_names_each_failed_test_once_with_its_gpus() -> None:
    report = read_dcgm((CORPUS / "diag_json_per_gpu_dcgm_test_strings.json").read_text())
    assert report.summary() == "dcgm: sm_stress CRITICAL on GPUs [0, 2, 3]"


def test_a_diagnostic_that_could_not_run_is_unknown() -> None:
    # DCGM 4.x's document when the diagnostic stops before its tests (dcgm_diag_schema.json).
    report = read_dcgm('{"DCGM Diagnostic": {"runtime_error": "Unable to run diagnostic"}}')
    assert (report.status, report.findings) == (HealthStatus.UNKNOWN, ())
