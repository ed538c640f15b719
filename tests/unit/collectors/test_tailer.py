import asyncio
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from collectors.logs.settings import TailSettings
from collectors.logs.tailer import LogTailer
from collectors.sink import RecordingSink
from schemas.envelope import Event
from schemas.events import (
    CollectivesTimed,
    LogLinesObserved,
    LogSignalDetected,
    StepTimesObserved,
)
from schemas.events.logs import LogSignal
from tests.support.clock import ManualClock


def tail_settings(tmp_path: Path, **kw: object) -> TailSettings:
    base: dict[str, object] = {
        "paths": (str(tmp_path / "logs" / "*.out"),),
        "state_file": tmp_path / "state" / "offsets.json",
        "cluster": "c1",
        "node": "n1",
    }
    return TailSettings.model_validate({**base, **kw})


def lines_of(sink: RecordingSink) -> list[str]:
    return [line.line for e in sink.of_type(LogLinesObserved) for line in e.payload.lines]


def signals_of(sink: RecordingSink) -> list[tuple[str, LogSignal]]:
    return [(e.subject, e.payload.signal) for e in sink.of_type(LogSignalDetected)]


@pytest.fixture
def logs(tmp_path: Path) -> Path:
    (tmp_path / "logs").mkdir()
    return tmp_path / "logs"


def append(path: Path, *lines: str) -> None:
    with path.open("a") as f:
        f.write("".join(f"{line}\n" for line in lines))


async def test_lines_per_job_and_signals_at_the_edge(tmp_path: Path, logs: Path) -> None:
    append(
        logs / "slurm-123.out",
        "step 10 loss 2.1",
        "[rank3]:Traceback (most recent call last):",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
        "gpu7:1:2 [0] NCCL WARN NET/IB : Got completion from peer 10.0.0.12<43213> with status=12",
        "[E ProcessGroupNCCL.cpp:475] Watchdog caught collective operation timeout: WorkNCCL",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
        "Training Complete",
    )
    append(logs / "slurm-124.out", "hello")
    (logs / "ignored.log").write_text("Training Complete\n")
    sink = RecordingSink()
    assert await LogTailer(tail_settings(tmp_path), sink).poll_once() == 8
    by_job = {e.subject: e for e in sink.of_type(LogLinesObserved)}
    assert set(by_job) == {"slurm/c1/123", "slurm/c1/124"}
    assert len(by_job["slurm/c1/123"].payload.lines) == 7
    assert by_job["slurm/c1/123"].payload.lines[1].rank == 3
    assert signals_of(sink) == [
        ("slurm/c1/123", LogSignal.TRACEBACK),
        ("slurm/c1/123", LogSignal.OOM),
        ("slurm/c1/123", LogSignal.NCCL_ERROR),
        ("slurm/c1/123", LogSignal.NCCL_TIMEOUT),
        ("slurm/c1/123", LogSignal.CUDA_ERROR),
        ("slurm/c1/123", LogSignal.TRAINING_COMPLETE),
    ]
    peers = [e.payload.peer for e in sink.of_type(LogSignalDetected)]
    assert peers == [None, None, "10.0.0.12", None, None, None]  # the other end, named


async def test_resumes_at_the_saved_offset_after_a_restart(tmp_path: Path, logs: Path) -> None:
    log = logs / "slurm-7.out"
    append(log, "a", "b")
    first = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path), first)
    await tailer.poll_once()
    tailer.close()
    append(log, "c", "partial")
    with log.open("a") as f:
        f.write("no newline yet")
    second = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path), second)
    await tailer.poll_once()
    assert lines_of(first) == ["a", "b"]
    assert lines_of(second) == ["c", "partial"]
    with log.open("a") as f:
        f.write(" - now\n")
    await tailer.poll_once()
    assert lines_of(second) == ["c", "partial", "no newline yet - now"]


async def test_truncation_and_rewrite_start_over(tmp_path: Path, logs: Path) -> None:
    log = logs / "slurm-8.out"
    append(log, "one", "two", "three")
    sink = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path), sink)
    await tailer.poll_once()
    log.write_text("new\n")  # truncated in place (same inode)
    await tailer.poll_once()
    assert lines_of(sink) == ["one", "two", "three", "new"]
    tailer.close()
    # Rewritten in place with different, longer content while the tailer was down.
    log.write_text("another file entirely\nwith more lines than before\n")
    restarted = RecordingSink()
    await LogTailer(tail_settings(tmp_path), restarted).poll_once()
    assert lines_of(restarted) == ["another file entirely", "with more lines than before"]


async def test_rotation_loses_nothing_and_repeats_nothing(tmp_path: Path, logs: Path) -> None:
    log = logs / "slurm-9.out"
    append(log, "before")
    sink = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path), sink)
    await tailer.poll_once()
    append(log, "written just before rotation")
    with log.open("a") as f:
        f.write("last words without a newline")
    os.rename(log, logs / "slurm-9.out.1")  # no longer matches the glob
    append(log, "after rotation")
    await tailer.poll_once()
    await tailer.poll_once()
    assert sorted(lines_of(sink)) == sorted(
        ["before", "written just before rotation", "last words without a newline", "after rotation"]
    )
    assert len(tailer.files) == 1


async def test_custom_patterns_win_and_defaults_can_be_off(tmp_path: Path, logs: Path) -> None:
    append(logs / "slurm-5.out", "loss is nan at step 77", "Training Complete")
    settings = tail_settings(
        tmp_path,
        patterns=[{"regex": r"loss is nan", "name": "nan_loss"}],
        default_patterns=False,
    )
    sink = RecordingSink()
    await LogTailer(settings, sink).poll_once()
    [signal] = sink.of_type(LogSignalDetected)
    assert (signal.payload.signal, signal.payload.pattern) == (LogSignal.CUSTOM, "nan_loss")


async def test_memory_is_bounded_long_lines_cut_big_files_read_in_chunks(
    tmp_path: Path, logs: Path
) -> None:
    log = logs / "slurm-6.out"
    append(log, "x" * 5000, *[f"line {i}" for i in range(3000)])
    settings = tail_settings(
        tmp_path, max_line_bytes=1000, read_chunk_bytes=8192, max_lines_per_event=500
    )
    sink = RecordingSink()
    tailer = LogTailer(settings, sink)
    polls = 0
    while polls < 100:
        polls += 1
        if await tailer.poll_once() == 0:
            break
    got = lines_of(sink)
    assert got[0] == "x" * 1000 and got[-1] == "line 2999" and len(got) == 3001
    assert polls > 3  # several chunks, each sent before the next is read
    assert max(len(e.payload.lines) for e in sink.of_type(LogLinesObserved)) <= 500


async def test_nothing_is_lost_when_sending_fails(tmp_path: Path, logs: Path) -> None:
    class Down(RecordingSink):
        down = True

        async def emit_batch(self, events: list[Event]) -> None:  # type: ignore[override]
            if self.down:
                raise ConnectionError("kafka away")
            await super().emit_batch(events)

    append(logs / "slurm-3.out", "precious")
    sink = Down()
    tailer = LogTailer(tail_settings(tmp_path), sink)
    with pytest.raises(ConnectionError):
        await tailer.poll_once()
    sink.down = False
    await tailer.poll_once()
    assert lines_of(sink) == ["precious"]


def test_job_template_and_fallback_subject(tmp_path: Path) -> None:
    settings = tail_settings(
        tmp_path, job_pattern=r"/jobs/(?P<job>[\w-]+)/", job_template="k8s/default/{job}"
    )
    tailer = LogTailer(settings, RecordingSink())
    assert tailer._job_of("/var/jobs/llama-7b/rank0.log") == "k8s/default/llama-7b"
    assert tailer._job_of("/tmp/other.log") == "file/n1/tmp/other.log"


async def test_a_job_declared_completion_marker_replaces_the_builtin_lines(
    tmp_path: Path, logs: Path
) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    (markers / "123").write_text("\nALL EPOCHS DONE\n")  # as a Slurm prolog writes it
    per_epoch = "Training complete."  # this trainer prints it after every epoch
    append(logs / "slurm-123.out", per_epoch, "[rank0]: 2024-01-01 INFO ALL EPOCHS DONE")
    append(logs / "slurm-124.out", per_epoch)
    append(logs / "slurm-125.out", per_epoch)
    sink = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path, marker_dir=markers), sink)
    await tailer.poll_once()
    found = sorted(
        (e.subject, e.payload.pattern, e.payload.rank) for e in sink.of_type(LogSignalDetected)
    )
    assert found == [
        ("slurm/c1/123", "job_marker", 0),
        ("slurm/c1/124", "training_complete", None),
        ("slurm/c1/125", "training_complete", None),
    ]
    # A marker written after the log was first read applies from then on.
    (markers / "125").write_text("FIN")
    append(logs / "slurm-125.out", per_epoch, "FIN")
    await tailer.poll_once()
    later = [(e.subject, e.payload.pattern) for e in sink.of_type(LogSignalDetected)][3:]
    assert later == [("slurm/c1/125", "job_marker")]


async def test_a_lines_own_time_is_kept_and_one_out_of_range_is_not(
    tmp_path: Path, logs: Path
) -> None:
    # Kubernetes' container log file (nanoseconds, a zone), then a time the contract refuses.
    append(
        logs / "slurm-9.out",
        "2024-03-05T07:01:51.123456789Z stdout F [rank3]: Traceback (most recent call last):",
        "1999-12-31T23:59:59Z before the contract's earliest time",
        "no time at all",
    )
    sink = RecordingSink()
    await LogTailer(tail_settings(tmp_path), sink).poll_once()
    lines = [line for e in sink.of_type(LogLinesObserved) for line in e.payload.lines]
    assert [(line.at and line.at.isoformat(), line.rank) for line in lines] == [
        ("2024-03-05T07:01:51.123456+00:00", 3),
        (None, None),
        (None, None),
    ]
    assert [e.payload.rank for e in sink.of_type(LogSignalDetected)] == [3]


def maxtext(rank: int, step: int, seconds: float) -> str:
    return f"[rank{rank}]:completed step: {step}, seconds: {seconds:.3f}, loss: 2.000"


Summary = tuple[str, int | None, int, float, float, int | None, str]


def step_summaries(sink: RecordingSink) -> list[Summary]:
    """Job, rank, steps, median, max (to the nanosecond), last step, trainer of each sent."""
    summaries: list[Summary] = []
    for event in sink.of_type(StepTimesObserved):
        p = event.payload
        times = round(p.median_s, 9), round(p.max_s, 9)
        summaries.append((event.subject, p.rank, p.steps, *times, p.last_step, p.trainer))
    return summaries


async def test_step_times_are_sent_once_an_interval_one_summary_per_rank(
    tmp_path: Path, logs: Path
) -> None:
    clock = ManualClock()
    sink = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path, step_summary_s=60), sink, clock)
    log = logs / "slurm-7.out"
    append(log, maxtext(0, 1, 1.0), maxtext(1, 1, 1.1), maxtext(0, 2, 3.0), maxtext(0, 3, 2.0))
    append(log, maxtext(1, 2, 1.3), "[rank1]:loss 2.0, no time here")
    await tailer.poll_once()
    assert step_summaries(sink) == []  # the interval has not ended
    clock.t = 60.0
    append(log, maxtext(1, 3, 1.2))
    await tailer.poll_once()
    assert step_summaries(sink) == [
        ("slurm/c1/7", 0, 3, 2.0, 3.0, 3, "maxtext"),
        ("slurm/c1/7", 1, 3, 1.2, 1.3, 3, "maxtext"),
    ]
    [event] = sink.of_type(StepTimesObserved)[:1]
    assert event.payload.node == "n1"
    # The next interval starts empty: a rank with no new step time sends nothing.
    append(log, maxtext(0, 4, 2.5))
    clock.t = 120.0
    await tailer.poll_once()
    assert step_summaries(sink)[2:] == [("slurm/c1/7", 0, 1, 2.5, 2.5, 4, "maxtext")]


async def test_two_readers_of_the_same_steps_count_them_once(tmp_path: Path, logs: Path) -> None:
    # Megatron-DeepSpeed prints DeepSpeed's pipeline line and Megatron's for every step.
    clock = ManualClock()
    sink = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path, step_summary_s=60), sink, clock)
    append(
        logs / "slurm-8.out",
        "steps: 1 loss: 10.6554 iter time (s): 4.218 samples/sec: 7.586",
        " iteration        1/    2500 | elapsed time per iteration (ms): 4220.8 | lm loss: 10.6 |",
        "steps: 2 loss: 10.6521 iter time (s): 1.337 samples/sec: 23.934",
        " iteration        2/    2500 | elapsed time per iteration (ms): 1346.3 | lm loss: 10.6 |",
    )
    await tailer.poll_once()
    clock.t = 60.0
    await tailer.poll_once()
    assert step_summaries(sink) == [("slurm/c1/8", None, 2, 2.78355, 4.2208, 2, "megatron")]


async def test_pending_step_times_are_sent_at_a_files_end_and_at_stop(
    tmp_path: Path, logs: Path
) -> None:
    clock = ManualClock()
    sink = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path), sink, clock)
    append(logs / "slurm-9.out", maxtext(0, 10, 1.5))
    append(logs / "slurm-10.out", maxtext(2, 20, 0.5))
    await tailer.poll_once()
    os.rename(logs / "slurm-9.out", logs / "slurm-9.out.1")  # rotated away, read to its end
    await tailer.poll_once()
    assert step_summaries(sink) == [("slurm/c1/9", 0, 1, 1.5, 1.5, 10, "maxtext")]
    stop = asyncio.Event()
    stop.set()
    await tailer.run(stop)  # stopped: what is pending goes before the tailer closes
    assert step_summaries(sink)[1:] == [("slurm/c1/10", 2, 1, 0.5, 0.5, 20, "maxtext")]
    assert tailer.files == {}


async def test_a_summary_not_sent_stays_pending(tmp_path: Path, logs: Path) -> None:
    class Down(RecordingSink):
        down = False

        async def emit_batch(self, events: Sequence[Event]) -> None:
            if self.down and any(isinstance(e, StepTimesObserved) for e in events):
                raise ConnectionError("kafka away")
            await super().emit_batch(events)

    clock = ManualClock()
    sink = Down()
    tailer = LogTailer(tail_settings(tmp_path, step_summary_s=60), sink, clock)
    log = logs / "slurm-11.out"
    append(log, maxtext(0, 1, 1.0))
    await tailer.poll_once()
    sink.down, clock.t = True, 60.0
    with pytest.raises(ConnectionError):
        await tailer.poll_once()
    sink.down, clock.t = False, 120.0
    append(log, maxtext(0, 2, 3.0))
    await tailer.poll_once()
    assert step_summaries(sink) == [("slurm/c1/11", 0, 2, 2.0, 3.0, 2, "maxtext")]


async def test_inspector_records_are_summarised_not_sent_as_lines(
    tmp_path: Path, logs: Path
) -> None:
    fixture = Path(__file__).parents[2] / "fixtures" / "realworld" / "nccl" / "inspector"
    record = (fixture / "inspector_exporter_readme_reducescatter_4_nodes.jsonl").read_text()
    clock = ManualClock()
    sink = RecordingSink()
    tailer = LogTailer(tail_settings(tmp_path, step_summary_s=60), sink, clock)
    append(logs / "slurm-12.out", record.strip(), "an ordinary line", record.strip())
    await tailer.poll_once()
    assert lines_of(sink) == ["an ordinary line"]
    assert sink.of_type(CollectivesTimed) == []  # the interval has not ended
    clock.t = 60.0
    await tailer.poll_once()
    [event] = sink.of_type(CollectivesTimed)
    p = event.payload
    assert (event.subject, p.node, p.communicator, p.collective) == (
        "slurm/c1/12",
        "n1",
        "0x9e7a479f95a66c",
        "ReduceScatter",
    )
    assert (p.count, p.ranks, p.exec_us, p.timing) == (2, 1, 110.0, "kernel_gpu")


async def test_inspectors_dump_directory_is_followed_as_the_docs_say(tmp_path: Path) -> None:
    # docs/events.md: Inspector's default directory names the Slurm job.
    fixture = Path(__file__).parents[2] / "fixtures" / "realworld" / "nccl" / "inspector"
    record = (fixture / "inspector_readme_verbose_reducescatter_v4.0.jsonl").read_text()
    dump = tmp_path / "nccl" / "nccl-inspector-4242"
    dump.mkdir(parents=True)
    (dump / "gpu-7-pid438776.log").write_text(record)
    settings = tail_settings(
        tmp_path,
        paths=(str(tmp_path / "nccl" / "nccl-inspector-*" / "*"),),
        job_pattern=r"(?:slurm-|nccl-inspector-)(?P<job>\d+)",
    )
    sink = RecordingSink()
    tailer = LogTailer(settings, sink, ManualClock())
    await tailer.poll_once()
    await tailer.send_step_summaries()
    [event] = sink.of_type(CollectivesTimed)
    assert (event.subject, event.payload.collective, event.payload.exec_us) == (
        "slurm/c1/4242",
        "ReduceScatter",
        41057.0,
    )
    assert sink.of_type(LogLinesObserved) == []
