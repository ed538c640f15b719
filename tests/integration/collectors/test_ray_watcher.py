"""The Ray watcher against a real local Ray head (Jobs API, logs, node death)."""

import asyncio
import sys
import time
from pathlib import Path

import pytest
from ray.job_submission import JobStatus, JobSubmissionClient

from collectors.sink import RecordingSink
from collectors.watchers.ray.settings import RayWatchSettings
from collectors.watchers.ray.watcher import RayWatcher
from schemas.envelope import Event
from schemas.events import JobExited, LogSignalDetected
from schemas.events.jobs import JobState
from schemas.events.logs import LogSignal
from tests.support.ray import RayHead

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]


def settings(head: RayHead, tmp_path: Path) -> RayWatchSettings:
    return RayWatchSettings(
        address=head.address, cluster="raytest", poll_s=0.5, state_file=tmp_path / "ledger.json"
    )


async def finished(client: JobSubmissionClient, sid: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while client.get_job_status(sid) not in {JobStatus.SUCCEEDED, JobStatus.FAILED}:
        assert time.monotonic() < deadline, f"{sid} did not finish"
        await asyncio.sleep(0.3)


def of(events: list[Event], sid: str) -> list[Event]:
    return [e for e in events if e.subject == f"ray/{sid}"]


async def test_jobs_their_driver_node_exit_and_log_signals(
    ray_head: RayHead, tmp_path: Path
) -> None:
    client = JobSubmissionClient(ray_head.address)
    ok = client.submit_job(entrypoint="python -c \"print('step 9'); print('Training Complete')\"")
    bad = client.submit_job(
        entrypoint="python -c \"import sys; print('RuntimeError: CUDA error: an illegal memory "
        "access was encountered'); sys.exit(3)\""
    )
    await finished(client, ok)
    await finished(client, bad)
    sink = RecordingSink()
    await RayWatcher(settings(ray_head, tmp_path), sink).poll_once()

    good = of(sink.events, ok)
    assert [e.type for e in good] == [
        "JobSubmitted",
        "JobStateChanged",
        "LogSignalDetected",
        "JobExited",
    ]
    signal, end = good[2], good[3]
    assert isinstance(signal, LogSignalDetected) and isinstance(end, JobExited)
    assert signal.payload.signal == LogSignal.TRAINING_COMPLETE
    assert (end.payload.state, end.payload.exit_code, end.payload.nodes) == (
        JobState.SUCCEEDED,
        0,
        ("127.0.0.1",),
    )

    failed = of(sink.events, bad)
    signals = [e.payload.signal for e in failed if isinstance(e, LogSignalDetected)]
    assert signals == [LogSignal.CUDA_ERROR]
    [end] = [e for e in failed if isinstance(e, JobExited)]
    assert (end.payload.state, end.payload.exit_code) == (JobState.FAILED, 3)

    again = RecordingSink()
    await RayWatcher(settings(ray_head, tmp_path), again).poll_once()
    assert of(again.events, ok) == [] and of(again.events, bad) == []


async def test_training_code_in_a_ray_job_names_the_job_as_the_watcher_does(
    ray_head: RayHead,
) -> None:
    client = JobSubmissionClient(ray_head.address)
    code = (
        "from collectors.checkpoints import current_job_id; print('JOB=' + str(current_job_id()))"
    )
    sid = client.submit_job(
        entrypoint=f'{sys.executable} -c "{code}"',
        runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}},
    )
    await finished(client, sid)
    assert f"JOB=ray/{sid}" in client.get_job_logs(sid)
