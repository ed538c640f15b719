"""The Ray adapter against a real local Ray head (one per session)."""

from __future__ import annotations

import time

import pytest
from ray.job_submission import JobSubmissionClient

from actions.adapters.ray import RayAdapter
from actions.adapters.settings import RaySettings
from actions.errors import PermanentError, TemporaryError
from tests.support.ray import RayHead

pytestmark = pytest.mark.integration

TRAIN = (
    "python -c \"import os, sys; r = os.environ.get('CENTRALITY_RESUME_FROM'); "
    "print('resume=' + str(r) + ' team=' + os.environ['TEAM']); sys.exit(0 if r else 3)\""
)


@pytest.fixture
def ray(ray_head: RayHead) -> RayAdapter:
    return RayAdapter(RaySettings(address=ray_head.address, poll_interval_s=0.2))


def _finish(client: JobSubmissionClient, submission: str) -> str:
    deadline = time.monotonic() + 60
    while not (status := client.get_job_status(submission)).is_terminal():
        assert time.monotonic() < deadline, f"{submission} still {status}"
        time.sleep(0.2)
    return str(status.value)


def test_requeue_resubmits_the_job_with_the_checkpoint(
    ray: RayAdapter,
    ray_head: RayHead,
) -> None:
    client = JobSubmissionClient(ray_head.address)
    first = client.submit_job(entrypoint=TRAIN, runtime_env={"env_vars": {"TEAM": "nlp"}})
    assert _finish(client, first) == "FAILED"

    detail = ray.requeue(f"ray/{first}", checkpoint_uri="s3://ckpt/step-42")

    second = detail["job_id"].removeprefix("ray/")
    assert second == f"{first}-r1"
    assert _finish(client, second) == "SUCCEEDED"
    assert "resume=s3://ckpt/step-42 team=nlp" in ray.job_logs(detail["job_id"])
    assert client.get_job_info(second).metadata["centrality_requeued_from"] == first


def test_requeue_stops_a_running_job_first(ray: RayAdapter, ray_head: RayHead) -> None:
    client = JobSubmissionClient(ray_head.address)
    running = client.submit_job(entrypoint="sleep 300")
    detail = ray.requeue(f"ray/{running}", checkpoint_uri=None)
    assert client.get_job_status(running).value == "STOPPED"
    client.stop_job(detail["job_id"].removeprefix("ray/"))


def test_run_on_nodes_pins_the_command_to_the_node(ray: RayAdapter) -> None:
    result = ray.run_on_nodes(
        ["127.0.0.1"],
        ["sh", "-c", "echo suites=$SUITES; exit 5"],
        env={"SUITES": "gpu"},
        timeout_s=60,
    )
    assert result.exit_code == 5
    assert "suites=gpu" in result.stdout


@pytest.mark.parametrize("job_id", ["ray/raysubmit_missing", "k8s/ns/x", "ray/"])
def test_unknown_or_foreign_jobs_are_permanent(ray: RayAdapter, job_id: str) -> None:
    with pytest.raises(PermanentError):
        ray.requeue(job_id, checkpoint_uri=None)


def test_an_unreachable_head_is_temporary() -> None:
    with pytest.raises(TemporaryError):
        RayAdapter(RaySettings(address="http://127.0.0.1:9")).job_logs("ray/x")
