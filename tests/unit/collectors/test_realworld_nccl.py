"""nccl-tests outputs and NCCL debug logs captured from public sources (see PROVENANCE.md).

Every expected value below was read off the fixture by a person, not computed by the parser.
"""

from dataclasses import dataclass
from pathlib import Path

import pytest

from collectors.events import Stamp
from collectors.nccl.events import nccl_events, rejected
from collectors.nccl.output import InitTiming
from collectors.nccl.parse import parse_nccl_output

CORPUS = Path(__file__).parents[2] / "fixtures" / "realworld" / "nccl"


@dataclass(frozen=True)
class Case:
    file: str
    collective: str | None  # as the CLI's --collective would give it
    rows: int
    ranks: int  # what NcclSampled.ranks says
    valid: tuple[bool, ...]  # per table
    last: tuple[int, float, float, float] | None  # size, time us, algbw, busbw of the last row
    avg_busbw: tuple[float | None, ...] = ()
    out_of_bounds: tuple[int | None, ...] = ()
    wrong_last: float | None = 0
    comms: int = 0
    version: str | None = None
    rejected: tuple[str, ...] = ()
    hosts: frozenset[str] = frozenset()


CASES = [
    Case(
        "eks_efa_tag_output_t4_nccl2.12.txt",
        "all_reduce",
        31,
        2,
        (True,),
        (1073741824, 344981.0, 3.11, 3.11),
        (1.15327,),
        (0,),
        comms=2,
        version="2.12.7+cuda11.4",
        hosts=frozenset({"test-nccl-efa-worker-0", "test-nccl-efa-worker-1"}),
    ),
    Case(
        "skypilot_ray_tag_output_h200.txt",
        None,
        24,
        16,
        (True,),
        (8589934592, 24724.0, 347.44, 325.72),
        (122.073,),
        (0,),
        hosts=frozenset({"nc-d87e1263-head", "nc-d87e1263-worker1"}),
    ),
    Case(
        "nccl_tests_issue287_alltoall_na_inplace.txt",
        None,
        1,
        1,
        (True,),
        (33554432, 19.56, 1715.44, 0.0),
        (0.0,),
        (0,),
        hosts=frozenset({"GENOA-01"}),
    ),
    Case(
        "nccl_tests_issue37_no_redop_error_column_failed.txt",
        None,
        1,
        1,
        (False,),
        (4294967296, 29122.0, 129.05, 129.05),
        (128.942,),
        (2,),
        wrong_last=None,
        rejected=("all_gather: 2 out-of-bounds values",),
    ),
    Case(
        "npkit_issue19_no_root_error_column.txt",
        None,
        3,
        4,
        (True,),
        (32, 32.79, 0.0, 0.0),
        (None,),
        (None,),
        wrong_last=None,
        hosts=frozenset({"gpu9"}),
    ),
    Case(
        "nccl_issue644_no_redop_rows.txt",
        "all_reduce",
        13,
        1,
        (True,),
        (268435456, 32071.0, 8.37, 7.32),
        (None,),
        (None,),
    ),
    Case(
        "nccl_tests_issue252_ring_large.txt",
        None,
        5,
        1,
        (True,),
        (8589934592, 158070.0, 54.34, 95.10),
        (95.3009,),
        (0,),
    ),
    Case(
        "aws_k8s_tester_pr503_tag_output_p5.txt",
        None,
        3,
        1,
        (True,),
        (32, 22.25, 0.0, 0.0),
        (None,),
        (None,),
    ),
    Case(
        "nccl_issue1706_comminitall_2gpu.log",
        None,
        1,
        2,
        (True,),
        (134217728, 5190.8, 25.86, 25.86),
        (8.62002,),
        (0,),
        comms=2,  # rank 0's handle is named only by its `Destroy COMPLETE` line
    ),
    Case("nccl_issue1412_comminitrank_16.log", None, 0, 16, (), None, comms=5),
    Case("nccl_tests_issue29_init_complete_32.log", None, 0, 32, (), None, comms=11),
    Case(
        "inc_switch_4gpu_wrong_counts_failed.txt",
        None,
        27,
        4,
        (False,),
        (536870912, 72335.0, 7.42, 11.13),
        (4.38015,),
        (216,),
        wrong_last=2 * 5.36871e08,
        rejected=("unknown: 216 out-of-bounds values, 27 of 27 sizes with wrong elements",),
        hosts=frozenset({"worker1", "worker2", "worker3", "worker4"}),
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.file for c in CASES])
def test_realworld_nccl(case: Case) -> None:
    text = (CORPUS / case.file).read_text()
    out = parse_nccl_output(text.splitlines(), case.collective)
    assert len(out.rows) == case.rows
    assert tuple(r.valid for r in out.runs) == case.valid
    assert len(out.comm_ranks) == case.comms
    if case.last is not None:
        last = out.rows[-1]
        assert (last.size_bytes, last.duration_us, last.algbw_gbps, last.busbw_gbps) == case.last
        assert last.wrong == case.wrong_last
    if case.avg_busbw:
        assert tuple(r.avg_busbw_gbps for r in out.runs) == case.avg_busbw
        assert tuple(r.out_of_bounds for r in out.runs) == case.out_of_bounds
    if case.version:
        assert out.nccl_version == case.version
    if case.hosts:
        assert {h for r in out.runs for h in r.ranks.values()} == case.hosts
    assert tuple(rejected(out)) == case.rejected
    events = nccl_events(out, Stamp("nccl@n1", "c1"), "n1", None)
    published = sum(len(r.rows) for r in out.runs if r.valid)
    assert len(events) == published
    assert all(e.payload.ranks == case.ranks for e in events)
    assert (out.ranks_of(out.runs[0]) if out.runs else out.nranks) == case.ranks


# nccl-tests built with MPI (issue 43): file → (the ranks NcclSampled carries, hosts listed,
# processes that each ran alone). Rank 0 lists every rank and its host; an output that stops
# (or whose quote was cut) before the table still says how many ranks it listed.
MPI: dict[str, tuple[int, set[str], list[str]]] = {
    "nccl_tests_issue294_mpi_16_ranks_2_hosts.txt": (12, {"h100-2", "h100-4"}, []),
    "soperator_pr428_srun_pmix_16_ranks.txt": (12, {"worker-1", "worker-0"}, []),
    "nccl_tests_issue293_mpi_2_hosts_debug.txt": (2, {"test1", "test2"}, []),
    "nccl_tests_issue82_mpi_broadcast_root_no_redop.txt": (2, {"v100-gpu-1", "v100-gpu-5"}, []),
    "dgx_spark_pr103_mpi_2_hosts_nccl_tests_2.20.txt": (2, {"spark-d708", "spark-dbf4"}, []),
    # Built without MPI, started by mpirun on two hosts: two jobs of one rank each.
    "nccl_tests_issue107_no_mpi_build_under_mpirun.txt": (
        1,
        {"ip-172-31-22-230"},
        ["ip-172-31-20-228", "ip-172-31-22-230"],
    ),
    # MPICH's `[0] ` in front of NCCL's tuning predictions (never read as measurements).
    "nccl_issue1453_hydra_rank_prefix_tuning.txt": (1, set(), []),
}


@pytest.mark.parametrize("name", sorted(MPI))
def test_nccl_tests_built_with_mpi(name: str) -> None:
    ranks, hosts, alone = MPI[name]
    out = parse_nccl_output((CORPUS / name).read_text().splitlines())
    assert out.nranks == ranks
    assert {h for r in out.runs for h in r.ranks.values()} | set(out.listed_ranks.values()) == hosts
    assert out.alone == alone
    events = nccl_events(out, Stamp("nccl@n1", "c1"), "n1", None)
    assert all(e.payload.ranks == ranks for e in events)


def test_the_tests_version_and_the_nccl_it_ran_on() -> None:
    text = (CORPUS / "dgx_spark_pr103_mpi_2_hosts_nccl_tests_2.20.txt").read_text()
    out = parse_nccl_output(text.splitlines())
    # `nccl-library=23102` is NCCL_VERSION_CODE: 2.31.2
    assert (out.tests_version, out.nccl_version) == ("2.20.0", "2.31.2")
    assert [(r.collective, len(r.rows), r.valid) for r in out.runs] == [("all_reduce", 4, True)]


# NCCL's debug lines (issue 43): file → (communicator handles, their size, the nodes a
# communicator spans where NCCL prints it, the slowest rank's init).
INIT: dict[str, tuple[int, int, set[int], InitTiming | None]] = {
    "nccl_tests_issue213_nranks_nnodes_lines.log": (4, 8, {1}, None),
    "nccl_issue1605_nranks_nnodes_bootstrap_timings.log": (1, 4, {2}, None),
    "nccl_tests_issue319_init_start_16_ranks.log": (4, 16, set(), None),
    "nccl_issue1609_bootstrap_split_init_start.log": (4, 4, set(), None),
    "byteps_issue61_nccl_2.3.7_comm_lines.log": (4, 4, set(), None),
    "nccl_issue1470_collective_call_nranks.log": (1, 8, set(), None),
    "nccl_issue1597_init_lines_2.2x.log": (1, 2, set(), InitTiming(0, 2, 1.48)),
    "nccl_issue1412_comminitrank_16.log": (5, 16, set(), InitTiming(2, 16, 1.08)),
}


@pytest.mark.parametrize("name", sorted(INIT))
def test_communicator_sizes_wherever_nccl_prints_them(name: str) -> None:
    comms, size, nodes, slowest = INIT[name]
    out = parse_nccl_output((CORPUS / name).read_text().splitlines())
    assert (len(out.comm_ranks), set(out.comm_ranks.values())) == (comms, {size})
    assert set(out.comm_nodes.values()) == nodes
    assert out.slowest_init == slowest
    assert (out.runs, out.nranks) == ([], size)


def test_every_nccl_file_is_a_case_and_documented() -> None:
    provenance = (CORPUS / "PROVENANCE.md").read_text()
    files = {p.name for p in CORPUS.iterdir() if p.is_file() and p.suffix != ".md"}
    assert files == {c.file for c in CASES} | set(MPI) | set(INIT)
    assert all(f"`{name}`" in provenance for name in files)
