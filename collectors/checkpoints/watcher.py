"""Watches checkpoint directories: a complete checkpoint becomes CheckpointSaved, once (what
was announced is kept on disk across restarts).

Complete means, in this order: a `<name>.COMPLETE` sentinel; for Megatron-LM, the iteration
its tracker file names; not while NeMo's `-unfinished` marker is there; for torch DCP, its
`.metadata` written; otherwise a checkpoint that stopped changing between two polls.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import re
from dataclasses import dataclass

import orjson
import structlog

from collectors.checkpoints import names
from collectors.checkpoints.settings import CheckpointSettings
from collectors.events import Stamp
from collectors.loop import poll_forever
from collectors.sink import EventSink
from schemas.events import CheckpointSaved
from schemas.events.checkpoints import CheckpointSavedPayload

log = structlog.get_logger(__name__)

SENTINEL = ".COMPLETE"


@dataclass(frozen=True)
class Snapshot:
    files: int
    size_bytes: int
    newest_mtime_ns: int


def snapshot(path: str) -> Snapshot:
    if os.path.isfile(path):
        st = os.stat(path)
        return Snapshot(1, st.st_size, st.st_mtime_ns)
    files = size = newest = 0
    for root, _, files_here in os.walk(path):
        for name in files_here:
            with contextlib.suppress(OSError):
                st = os.stat(os.path.join(root, name))
                files += 1
                size += st.st_size
                newest = max(newest, st.st_mtime_ns)
    return Snapshot(files, size, newest)


class CheckpointWatcher:
    def __init__(self, settings: CheckpointSettings, sink: EventSink) -> None:
        if not settings.job:
            raise ValueError("the checkpoint watcher needs a job (CENTRALITY_CHECKPOINT_JOB)")
        self.settings = settings
        self.job = settings.job
        self.sink = sink
        self.stamp = Stamp(source=settings.source, cluster=settings.cluster)
        self._pattern = re.compile(settings.step_pattern) if settings.step_pattern else None
        self._pending: dict[str, Snapshot] = {}
        self.announced: set[str] = set()
        if settings.state_file.exists():
            self.announced = set(orjson.loads(settings.state_file.read_bytes()))

    async def run(self, stop: asyncio.Event) -> None:
        await poll_forever(self.poll_once, self.settings.poll_s, stop, "checkpoints")

    async def poll_once(self) -> list[CheckpointSaved]:
        ready: list[tuple[str, int]] = []
        for root in self.settings.roots:
            for base in glob.glob(root):
                with contextlib.suppress(OSError):
                    ready.extend(self._ready_in(base))
        sent = []
        for path, step in sorted(ready, key=lambda r: r[1]):
            snap = snapshot(path)
            event = self.stamp.make(
                CheckpointSaved,
                self.job,
                CheckpointSavedPayload(step=step, uri=path, size_bytes=snap.size_bytes),
            )
            await self.sink.emit(event)
            self.announced.add(path)
            self._save()
            sent.append(event)
        return sent

    def _step_of(self, name: str) -> int | None:
        if self._pattern is None:
            return names.step_of(name)
        m = self._pattern.search(name)
        return int(m.group(1)) if m else None

    def _ready_in(self, base: str) -> list[tuple[str, int]]:
        ready = []
        tracked = names.megatron_tracked(base)
        for name in sorted(os.listdir(base)):
            path = os.path.join(base, name)
            if name.endswith(SENTINEL):
                target = path[: -len(SENTINEL)]
                step = self._step_of(os.path.basename(target))
                if step is not None and target not in self.announced:
                    ready.append((target, step))
                continue
            step = self._step_of(name)
            if step is None or path in self.announced or self.settings.require_sentinel:
                continue
            if os.path.exists(path + SENTINEL) or names.unfinished(path):
                continue  # the sentinel branch handles it, or NeMo is still writing it
            if tracked is not None and names.is_megatron(name):
                if name == tracked:  # Megatron writes its tracker once the save is done
                    ready.append((path, step))
                continue
            complete = names.dcp_state(path)
            if complete is not None:
                if complete:
                    ready.append((path, step))
                continue
            # Otherwise a checkpoint counts once it stopped changing between polls.
            snap = snapshot(path)
            if snap.files and self._pending.get(path) == snap:
                del self._pending[path]
                ready.append((path, step))
            else:
                self._pending[path] = snap
        return ready

    def _save(self) -> None:
        path = self.settings.state_file
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(orjson.dumps(sorted(self.announced)))
        os.replace(tmp, path)
