"""NCCL Inspector's records, on the samples its authors published
(tests/fixtures/realworld/nccl/PROVENANCE.md), and their summary per host. Values by hand."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from collectors.nccl.inspector import (
    KEYS_KEPT,
    TIMES_KEPT,
    CollectiveRecord,
    CollectiveSummaries,
    read_record,
)

INSPECTOR = Path(__file__).parents[2] / "fixtures" / "realworld" / "nccl" / "inspector"

CASES = {
    "inspector_readme_allreduce_v4.0.jsonl": CollectiveRecord(
        "0x7f8c496ae9f661", 2, 8, 1, "AllReduce", 17179869184, 61974.0, 485.119099, "other"
    ),
    "inspector_readme_verbose_reducescatter_v4.0.jsonl": CollectiveRecord(
        "0xe62dedaa97644a", 4, 8, 1, "ReduceScatter", 2147483648, 41057.0, 366.134533, "kernel_gpu"
    ),
    "inspector_exporter_readme_reducescatter_4_nodes.jsonl": CollectiveRecord(
        "0x9e7a479f95a66c", 31, 32, 4, "ReduceScatter", 65536, 110.0, 18.469236, "kernel_gpu"
    ),
}


def test_every_sample_is_a_case() -> None:
    assert sorted(p.name for p in INSPECTOR.iterdir()) == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_published_record_reads(name: str) -> None:
    [line] = (INSPECTOR / name).read_text().splitlines()
    assert read_record(line) == CASES[name]


def _sample() -> dict[str, object]:
    name = "inspector_exporter_readme_reducescatter_4_nodes.jsonl"
    doc: dict[str, object] = orjson.loads((INSPECTOR / name).read_bytes())
    return doc


def _line(**perf: object) -> str:
    doc = _sample()
    doc["coll_perf"] = {**doc["coll_perf"], **perf}  # type: ignore[dict-item]
    return orjson.dumps(doc).decode()


@pytest.mark.parametrize(
    "line",
    [
        "NCCL INFO comm 0x5 rank 0 nranks 8 - Init COMPLETE",  # a log line
        '{"header": {"id": "0x1"}',  # cut short
        '{"header": {"id": "0x1", "rank": 0, "n_ranks": 2, "nnodes": 2}, "p2p_perf": {}}',
        _line(coll_exec_time_us=-1),
        _line(coll_exec_time_us="fast"),
        _line(coll_msg_size_bytes=True),
        _line(coll_exec_time_us=1e12),  # past an hour: a hang, not a time
    ],
)
def test_anything_else_is_no_record(line: str) -> None:
    assert read_record(line) is None


def test_an_unknown_timing_source_or_bandwidth_is_kept_as_unknown() -> None:
    record = read_record(_line(coll_timing_source="gpu_globaltimer", coll_busbw_gbs="n/a"))
    assert record is not None
    assert (record.timing, record.busbw_gbs) == ("other", None)


def _record(rank: int, exec_us: float, **kw: object) -> CollectiveRecord:
    base = CASES["inspector_exporter_readme_reducescatter_4_nodes.jsonl"]
    fields = {**base.__dict__, "rank": rank, "exec_us": exec_us, **kw}
    return CollectiveRecord(**fields)  # type: ignore[arg-type]


def test_a_host_is_summarised_by_its_latest_rank() -> None:
    # Two ranks of this host: rank 8's median 300 µs, rank 9's 100 µs (it started last, so it
    # waited least): the host is as late as rank 9.
    s = CollectiveSummaries("gpu-7")
    for rank, times in ((8, (300, 310, 290)), (9, (100, 90, 500))):
        for t in times:
            s.add("slurm/c/1", _record(rank, t))
    s.add("slurm/c/1", _record(8, 50, size_bytes=1024))  # another message size: another key
    s.add("slurm/c/2", _record(8, 70))  # another job
    [(key, p), (_, small)] = s.ready("slurm/c/1")
    assert key == ("slurm/c/1", "0x9e7a479f95a66c", "ReduceScatter", 65536)
    assert (p.node, p.ranks, p.count, p.exec_us) == ("gpu-7", 2, 6, 100.0)
    assert (p.comm_ranks, p.comm_nodes, p.timing, p.busbw_gbs) == (32, 4, "kernel_gpu", 18.469236)
    assert (small.size_bytes, small.exec_us, small.count) == (1024, 50.0, 1)
    s.forget(key)
    assert [k for k, _ in s.ready()] == [
        ("slurm/c/1", "0x9e7a479f95a66c", "ReduceScatter", 1024),
        ("slurm/c/2", "0x9e7a479f95a66c", "ReduceScatter", 65536),
    ]


def test_what_a_summary_holds_is_bounded() -> None:
    s = CollectiveSummaries("gpu-7")
    for i in range(TIMES_KEPT + 10):
        s.add("j", _record(0, 1000.0 if i < 10 else 5.0))
    [(_, p)] = s.ready()
    assert (p.count, p.exec_us) == (TIMES_KEPT + 10, 5.0)  # the oldest times dropped
    for size in range(KEYS_KEPT + 5):
        s.add("j", _record(0, 1.0, size_bytes=size))
    assert len(s.ready()) == KEYS_KEPT
