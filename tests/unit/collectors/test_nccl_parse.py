from pathlib import Path

from collectors.events import Stamp
from collectors.logs.prefixes import read_prefix
from collectors.nccl.events import nccl_events, rejected
from collectors.nccl.parse import parse_nccl_output

FIXTURES = Path(__file__).parent / "fixtures"


def test_nccl_tests_table_with_debug_lines_interleaved() -> None:
    out = parse_nccl_output((FIXTURES / "all_reduce_perf_2x8.txt").read_text().splitlines())
    [run] = out.runs
    assert [r.size_bytes for r in run.rows][:2] == [8, 1024]
    assert len(run.rows) == 8
    last = run.rows[-1]
    assert last.collective == "all_reduce"
    assert (last.duration_us, last.algbw_gbps, last.busbw_gbps, last.wrong) == (
        90817.0,
        94.58,
        177.35,
        0,
    )
    assert last.inplace_busbw_gbps == 177.57
    assert out.ranks_of(run) == 16
    assert set(run.ranks.values()) == {"gpu-node-01", "gpu-node-02"}
    assert (run.avg_busbw_gbps, run.out_of_bounds, run.valid) == (77.0331, 0, True)
    assert out.comm_ranks == {"0x5581c2a4e0c0": 16}
    assert out.nccl_version == "2.21.5+cuda12.4"


def test_collective_given_explicitly_wins() -> None:
    out = parse_nccl_output(
        ["     1024     256     float     none  -1   10.0  0.10  0.09  0   10.0  0.10  0.09  0"],
        collective="all_gather",
    )
    assert out.rows[0].collective == "all_gather"
    assert out.nranks == 1


def test_debug_log_gives_ranks_calls_and_warnings_but_no_rows() -> None:
    out = parse_nccl_output((FIXTURES / "nccl_debug_train.log").read_text().splitlines())
    assert out.rows == []
    assert out.nranks == 32
    assert out.collective_calls == {"AllReduce": 2, "AllGather": 1}
    assert len(out.warnings) == 1 and "Got completion from peer" in out.warnings[0]


def test_rows_become_nccl_sampled_events_of_the_node() -> None:
    out = parse_nccl_output((FIXTURES / "all_reduce_perf_2x8.txt").read_text().splitlines())
    events = nccl_events(out, Stamp("nccl@n1", "c1"), "gpu-node-01", "slurm/c1/7")
    assert len(events) == 8
    assert {e.subject for e in events} == {"gpu-node-01"}
    p = events[-1].payload
    assert (p.ranks, p.busbw_gbps, p.job_id, p.source_kind) == (
        16,
        177.35,
        "slurm/c1/7",
        "nccl-tests",
    )


def test_a_failed_run_beside_a_good_one_only_the_good_one_is_published() -> None:
    good = (FIXTURES / "all_reduce_perf_2x8.txt").read_text().splitlines()
    bad = [
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20",
        "           8             2     float     sum      -1    22.57    0.00    0.00      8"
        "    21.87    0.00    0.00      8",
        "# Out of bounds values : 16 FAILED",
        "# Avg bus bandwidth    : 0",
    ]
    out = parse_nccl_output([*good, *bad])
    assert [r.valid for r in out.runs] == [True, False]
    events = nccl_events(out, Stamp("nccl@n1", "c1"), "n1", None)
    assert len(events) == 8 and {e.payload.ranks for e in events} == {16}
    assert rejected(out) == [
        "all_reduce: 16 out-of-bounds values, 1 of 1 sizes with wrong elements"
    ]


def test_launcher_prefixes_are_stripped() -> None:
    assert read_prefix("[1,3]<stderr>:# Rank 3").body == "# Rank 3"
    assert read_prefix("(head, rank=0, pid=3808) [1,0]<stdout>:#").body == "#"
    assert read_prefix("Thu Aug 27 01:33:12 2020[1,0]<stdout>:   8  2").body == "  8  2"
    assert read_prefix("0: #  Rank  0 Group  0").body == "#  Rank  0 Group  0"
    assert read_prefix("   8589934592  2147483648 float").body == "   8589934592  2147483648 float"
