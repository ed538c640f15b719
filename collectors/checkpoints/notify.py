"""`notify_checkpoint(job, step, uri)`: a blocking call for training code.

Training loops are rarely asyncio programs, so a notifier owns a daemon thread running an event
loop with one long-lived Emitter; each call hands it the event and waits for the broker's ack.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import threading
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import orjson

from collectors.checkpoints.settings import CheckpointSettings
from collectors.events import Stamp
from collectors.sink import EventSink
from schemas.events import CheckpointSaved
from schemas.events.checkpoints import CheckpointSavedPayload

SinkFactory = Callable[[], AbstractAsyncContextManager[EventSink]]


def current_job_id(cluster: str | None = None) -> str | None:
    """The scheduler-qualified id of the job this process runs in, from its environment."""
    env = os.environ
    if "SLURM_JOB_ID" in env:
        job = env.get("SLURM_ARRAY_JOB_ID", env["SLURM_JOB_ID"])
        if "SLURM_ARRAY_TASK_ID" in env:
            job = f"{job}_{env['SLURM_ARRAY_TASK_ID']}"
        return f"slurm/{env.get('SLURM_CLUSTER_NAME', cluster or 'default')}/{job}"
    if "RAY_JOB_CONFIG_JSON_ENV_VAR" in env:
        # A Ray Jobs driver: the watcher names jobs by submission id, found in the job config.
        metadata = orjson.loads(env["RAY_JOB_CONFIG_JSON_ENV_VAR"]).get("metadata") or {}
        if metadata.get("job_submission_id"):
            return f"ray/{metadata['job_submission_id']}"
    if "CENTRALITY_K8S_JOB" in env and "CENTRALITY_K8S_NAMESPACE" in env:
        return f"k8s/{env['CENTRALITY_K8S_NAMESPACE']}/{env['CENTRALITY_K8S_JOB']}"
    return None


def _emitter() -> AbstractAsyncContextManager[EventSink]:
    from schemas.runtime.emitter import Emitter

    return Emitter()


class CheckpointNotifier:
    def __init__(
        self, settings: CheckpointSettings | None = None, sink_factory: SinkFactory = _emitter
    ) -> None:
        self.settings = settings or CheckpointSettings()
        self.stamp = Stamp(source=self.settings.source, cluster=self.settings.cluster)
        self._factory = sink_factory
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._closing: asyncio.Event | None = None
        self._sink: EventSink | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._serve, name="centrality-checkpoints", daemon=True
        )
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error

    def notify(
        self,
        job: str | None,
        step: int,
        uri: str,
        *,
        epoch: int | None = None,
        size_bytes: int | None = None,
        duration_s: float | None = None,
    ) -> CheckpointSaved:
        job = job or current_job_id(self.settings.cluster)
        if job is None:
            raise ValueError("no job id given and none found in the environment")
        event = self.stamp.make(
            CheckpointSaved,
            job,
            CheckpointSavedPayload(
                step=step, uri=uri, epoch=epoch, size_bytes=size_bytes, duration_s=duration_s
            ),
        )
        assert self._sink is not None
        future = asyncio.run_coroutine_threadsafe(self._sink.emit(event), self._loop)
        future.result(self.settings.timeout_s)
        return event

    def close(self) -> None:
        if self._closing is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._closing.set)
            self._thread.join(self.settings.timeout_s)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())

    async def _main(self) -> None:
        self._closing = asyncio.Event()
        try:
            async with self._factory() as sink:
                self._sink = sink
                self._ready.set()
                await self._closing.wait()
        except BaseException as exc:
            self._error = exc
            self._ready.set()


_default: CheckpointNotifier | None = None
_default_lock = threading.Lock()


def notify_checkpoint(job: str | None, step: int, uri: str, **extra: Any) -> CheckpointSaved:
    """Announce a checkpoint; blocks until Kafka has it (`CENTRALITY_CHECKPOINT_TIMEOUT_S`)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = CheckpointNotifier()
            atexit.register(_default.close)
    return _default.notify(job, step, uri, **extra)
