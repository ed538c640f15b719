from pathlib import Path

from collectors.events import Stamp
from collectors.nccl.events import nccl_events
from collectors.nccl.parse import parse_nccl_output

FIXTURES = Path(__file__).parent / "fixtures"


def test_nccl_tests_table_with_debug_lines_interleaved() -> None:
    run = parse_nccl_output((FIXTURES / "all_reduce_perf_2x8.txt").read_text().splitlines())
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
    assert run.nranks == 16
    assert set(run.ranks.values()) == {"gpu-node-01", "gpu-node-02"}
    assert run.avg_busbw_gbps == 77.0331
    assert run.comm_ranks == {"0x5581c2a4e0c0": 16}


def test_collective_given_explicitly_wins() -> None:
    run = parse_nccl_output(
        ["     1024     256     float     none  -1   10.0  0.10  0.09  0   10.0  0.10  0.09  0"],
        collective="all_gather",
    )
    assert run.rows[0].collective == "all_gather"
    assert run.nranks == 1


def test_debug_log_gives_ranks_calls_and_warnings_but_no_rows() -> None:
    run = parse_nccl_output((FIXTURES / "nccl_debug_train.log").read_text().splitlines())
    assert run.rows == []
    assert run.nranks == 32
    assert run.collective_calls == {"AllReduce": 2, "AllGather": 1}
    assert len(run.warnings) == 1 and "Got completion from peer" in run.warnings[0]


def test_rows_become_nccl_sampled_events_of_the_node() -> None:
    run = parse_nccl_output((FIXTURES / "all_reduce_perf_2x8.txt").read_text().splitlines())
    events = nccl_events(run, Stamp("nccl@n1", "c1"), "gpu-node-01", "slurm/c1/7")
    assert len(events) == 8
    assert {e.subject for e in events} == {"gpu-node-01"}
    p = events[-1].payload
    assert (p.ranks, p.busbw_gbps, p.job_id, p.source_kind) == (
        16,
        177.35,
        "slurm/c1/7",
        "nccl-tests",
    )
