from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from collectors.checkpoints.callbacks import CentralityLightningCallback, CentralityTrainerCallback
from collectors.checkpoints.notify import CheckpointNotifier, current_job_id
from collectors.checkpoints.settings import CheckpointSettings
from collectors.checkpoints.watcher import CheckpointWatcher
from collectors.sink import RecordingSink
from schemas.events import CheckpointSaved


def test_notify_blocks_until_sent_from_plain_sync_code() -> None:
    sink = RecordingSink()
    notifier = CheckpointNotifier(CheckpointSettings(cluster="c1"), sink_factory=lambda: sink)
    try:
        event = notifier.notify("slurm/c1/42", 1200, "s3://ckpt/step-1200", epoch=3)
    finally:
        notifier.close()
    assert sink.of_type(CheckpointSaved) == [event]
    assert (event.subject, event.cluster, event.payload.step, event.payload.epoch) == (
        "slurm/c1/42",
        "c1",
        1200,
        3,
    )


def test_a_notifier_that_cannot_connect_raises_at_once() -> None:
    class Broken:
        async def __aenter__(self) -> None:
            raise ConnectionError("no broker")

        async def __aexit__(self, *exc: object) -> None:
            return None

    with pytest.raises(ConnectionError):
        CheckpointNotifier(sink_factory=Broken)  # type: ignore[arg-type]


def test_job_id_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("RAY_JOB_CONFIG_JSON_ENV_VAR", raising=False)
    assert current_job_id("c1") is None
    ray_config = '{"runtime_env": {}, "metadata": {"job_submission_id": "raysubmit_Ab12"}}'
    monkeypatch.setenv("RAY_JOB_CONFIG_JSON_ENV_VAR", ray_config)  # what Ray gives a driver
    assert current_job_id() == "ray/raysubmit_Ab12"
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_CLUSTER_NAME", "dgx")
    assert current_job_id() == "slurm/dgx/77"
    monkeypatch.setenv("SLURM_ARRAY_JOB_ID", "70")
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "3")
    assert current_job_id() == "slurm/dgx/70_3"


class Calls:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, job: str | None, step: int, uri: str, **kw: Any) -> None:
        self.calls.append((job, step, uri, kw))


def test_hugging_face_callback_announces_on_rank_zero_only() -> None:
    notify = Calls()
    cb = CentralityTrainerCallback(job="slurm/c1/1", notify=notify)
    args = SimpleNamespace(output_dir="/ckpt/run")
    control = object()
    state = SimpleNamespace(global_step=500, epoch=1.7, is_world_process_zero=True)
    assert cb.on_save(args, state, control) is control
    cb.on_save(
        args, SimpleNamespace(global_step=500, epoch=1.7, is_world_process_zero=False), control
    )
    assert notify.calls == [("slurm/c1/1", 500, "/ckpt/run/checkpoint-500", {"epoch": 1})]


def test_lightning_callback_announces_each_written_file_once(tmp_path: Path) -> None:
    notify = Calls()
    cb = CentralityLightningCallback(job="k8s/ml/llama", notify=notify)
    first = tmp_path / "epoch=0-step=100.ckpt"
    mc = SimpleNamespace(best_k_models={str(first): 0.5}, last_model_path="")
    trainer = SimpleNamespace(
        checkpoint_callbacks=[mc], global_step=100, current_epoch=0, is_global_zero=True
    )
    cb.on_train_batch_end(trainer)
    assert notify.calls == []  # not on disk yet
    first.write_bytes(b"weights")
    cb.on_train_batch_end(trainer)
    cb.on_validation_end(trainer)
    last = tmp_path / "last.ckpt"
    last.write_bytes(b"w")
    mc.last_model_path = str(last)
    trainer.global_step = 200
    cb.on_train_end(trainer)
    assert [(c[1], c[2]) for c in notify.calls] == [(100, str(first)), (200, str(last))]


def watcher_settings(tmp_path: Path, **kw: object) -> CheckpointSettings:
    base: dict[str, object] = {
        "roots": (str(tmp_path / "ckpt"),),
        "job": "slurm/c1/9",
        "cluster": "c1",
        "state_file": tmp_path / "seen.json",
    }
    return CheckpointSettings.model_validate({**base, **kw})


async def test_watcher_settled_directories_and_sentinels_once_across_restarts(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ckpt"
    root.mkdir()
    sink = RecordingSink()
    watcher = CheckpointWatcher(watcher_settings(tmp_path), sink)
    step = root / "checkpoint-100"
    step.mkdir()
    (step / "model.safetensors").write_bytes(b"x" * 1000)
    assert await watcher.poll_once() == []  # first sight: may still be being written
    (step / "optimizer.pt").write_bytes(b"y" * 500)
    assert await watcher.poll_once() == []  # changed since
    [saved] = await watcher.poll_once()
    assert (saved.subject, saved.payload.step, saved.payload.size_bytes) == (
        "slurm/c1/9",
        100,
        1500,
    )
    assert saved.payload.uri == str(step)
    (root / "global_step200").mkdir()
    (root / "global_step200" / "shard0").write_bytes(b"z")
    (root / "global_step200.COMPLETE").touch()
    (root / "step_300.pt").write_bytes(b"w")
    (root / "step_300.pt.COMPLETE").touch()
    (root / "notes.txt").write_text("unrelated")
    later = await watcher.poll_once()
    assert [e.payload.step for e in later] == [200, 300]
    assert await watcher.poll_once() == []
    restarted = CheckpointWatcher(watcher_settings(tmp_path), sink)
    assert await restarted.poll_once() == []
    assert len(sink.of_type(CheckpointSaved)) == 3


async def test_watcher_can_require_sentinels(tmp_path: Path) -> None:
    root = tmp_path / "ckpt"
    (root / "step-5").mkdir(parents=True)
    (root / "step-5" / "w").write_bytes(b"w")
    watcher = CheckpointWatcher(watcher_settings(tmp_path, require_sentinel=True), RecordingSink())
    assert await watcher.poll_once() == [] and await watcher.poll_once() == []
    (root / "step-5.COMPLETE").touch()
    assert [e.payload.step for e in await watcher.poll_once()] == [5]
