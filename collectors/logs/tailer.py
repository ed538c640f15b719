"""Follows files matching globs through rotation and truncation; emits lines and signals.

Memory stays bounded: each poll reads at most `read_chunk_bytes` per file and sends what it
read before reading more; offsets are saved only after the events are sent, so a crash repeats
lines rather than losing them.

Step times (`collectors.logs.steps`) are not sent as read: every `step_summary_s` each rank's
are sent as one `StepTimesObserved`, all ranks' at once so that they cover the same interval.
NCCL Inspector's records (`collectors.nccl.inspector`, a line per collective and rank) are not
log lines people read: they are summarised the same way, one `CollectivesTimed` per communicator,
collective and message size. What is pending is sent early when the job's file has been rotated
away and read to its end, and when the tailer is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import glob
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime

import structlog

from collectors.clock import MONOTONIC, Clock
from collectors.events import Stamp
from collectors.logs.offsets import OffsetStore, identity
from collectors.logs.patterns import Matcher
from collectors.logs.peers import peer_of
from collectors.logs.prefixes import read_prefix
from collectors.logs.settings import TailSettings
from collectors.logs.step_summaries import StepSummaries
from collectors.logs.steps import step_time
from collectors.loop import poll_forever
from collectors.nccl.inspector import CollectiveRecord, CollectiveSummaries, read_record
from collectors.sink import EventSink
from schemas.events import (
    CollectivesTimed,
    LogLinesObserved,
    LogSignalDetected,
    StepTimesObserved,
)
from schemas.events.logs import LogLine, LogLinesObservedPayload, LogSignalDetectedPayload
from schemas.limits import MIN_TIME, max_future_skew

log = structlog.get_logger(__name__)


MARKER_MAX_CHARS = 200


@dataclass
class Followed:
    key: str
    path: str
    fd: int
    offset: int
    job: str
    marker_name: str | None  # the job's file in `marker_dir`, None where it has none
    marker: str | None = None


class LogTailer:
    def __init__(self, settings: TailSettings, sink: EventSink, clock: Clock = MONOTONIC) -> None:
        self.settings = settings
        self.sink = sink
        self.clock = clock
        self.store = OffsetStore(settings.state_file)
        self.matcher = Matcher(settings.patterns, defaults=settings.default_patterns)
        self.stamp = Stamp(source=f"tailer@{settings.node}", cluster=settings.cluster)
        self._job_re = re.compile(settings.job_pattern)
        self.files: dict[str, Followed] = {}
        self.steps = StepSummaries(settings.node)
        self.collectives = CollectiveSummaries(settings.node)
        self._steps_due = clock.now() + settings.step_summary_s

    async def run(self, stop: asyncio.Event) -> None:
        try:
            await poll_forever(self.poll_once, self.settings.poll_s, stop, "tailer", self.clock)
            await self.send_step_summaries()
        finally:
            self.close()

    def close(self) -> None:
        for f in self.files.values():
            os.close(f.fd)
        self.files.clear()

    async def poll_once(self) -> int:
        """Read what is new in every followed file and send it; returns the lines sent."""
        matched = self._matched()
        for key, path in matched.items():
            if key in self.files:
                self.files[key].path = path  # renamed (rotated) under a name we still match
            else:
                self._open(key, path)
        sent = 0
        for f in list(self.files.values()):
            rotated_away = f.key not in matched
            n, more = await self._read(f, final=rotated_away)
            sent += n
            if not more and rotated_away:
                os.close(f.fd)  # rotated away and fully read
                del self.files[f.key]
                await self.send_step_summaries(f.job)
        self.store.forget_gone(set(self.files))
        self.store.save()
        if self.clock.now() >= self._steps_due:
            self._steps_due = self.clock.now() + self.settings.step_summary_s
            await self.send_step_summaries()
        return sent

    async def send_step_summaries(self, job: str | None = None) -> None:
        """Each rank's pending step times as one `StepTimesObserved`, and each communicator's
        collectives as one `CollectivesTimed` (of `job` alone if given); one not sent (the sink
        away) stays pending and grows until the next interval's."""
        for key, payload in self.steps.ready(job):
            await self.sink.emit(self.stamp.make(StepTimesObserved, key[0], payload))
            self.steps.forget(key)
        for ckey, cpayload in self.collectives.ready(job):
            await self.sink.emit(self.stamp.make(CollectivesTimed, ckey[0], cpayload))
            self.collectives.forget(ckey)

    def _matched(self) -> dict[str, str]:
        found: dict[str, str] = {}
        for pattern in self.settings.paths:
            for path in glob.glob(pattern):
                with contextlib.suppress(OSError):
                    found[identity(os.stat(path))] = path
        return found

    def _open(self, key: str, path: str) -> None:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            log.warning("tail_open_failed", path=path, error=str(exc))
            return
        size = os.fstat(fd).st_size
        offset = self.store.resume_offset(key, fd, size)
        m = self._job_re.search(path)
        job = self._job_of(path)
        self.files[key] = Followed(key, path, fd, offset, job, m["job"] if m else None)
        log.info("tail_following", path=path, offset=offset, job=job)

    def _job_of(self, path: str) -> str:
        m = self._job_re.search(path)
        if m is None:
            return f"file/{self.settings.node}{os.path.abspath(path)}"
        # Every named group is a field (`k8s/{ns}/{job}` from a kubelet's pod log path).
        return self.settings.job_template.format(cluster=self.settings.cluster, **m.groupdict())

    def _marker_of(self, f: Followed) -> str | None:
        """The job's own completion marker, looked up until found (its file may come late)."""
        if f.marker is None and f.marker_name and self.settings.marker_dir is not None:
            try:
                text = (self.settings.marker_dir / f.marker_name).read_text(errors="replace")
            except OSError:
                return None
            first = next((line.strip() for line in text.splitlines() if line.strip()), "")
            if first:
                f.marker = first[:MARKER_MAX_CHARS]
                log.info("tail_completion_marker", job=f.job, marker=f.marker)
        return f.marker

    async def _read(self, f: Followed, *, final: bool = False) -> tuple[int, bool]:
        """One chunk of a file; returns (lines sent, whether more may be waiting). `final`: the
        file was rotated away, so a last line without a newline will not get one."""
        size = os.fstat(f.fd).st_size
        if size < f.offset:
            log.info("tail_truncated", path=f.path, offset=f.offset, size=size)
            f.offset = 0
        if size == f.offset:
            return 0, False
        data = os.pread(f.fd, self.settings.read_chunk_bytes, f.offset)
        end = data.rfind(b"\n") + 1
        if end == 0:
            if len(data) < self.settings.max_line_bytes and not final:
                return 0, False  # a partial line: wait for its end
            end = len(data)
        raw_lines = data[:end].split(b"\n")
        if raw_lines[-1] == b"":
            raw_lines.pop()
        lines = [
            raw[: self.settings.max_line_bytes].decode(errors="replace").rstrip("\r")
            for raw in raw_lines
        ]
        await self._emit(f, lines)
        f.offset += end
        self.store.update(f.key, f.path, f.fd, f.offset, size)
        return len(lines), f.offset < size

    async def _emit(self, f: Followed, lines: list[str]) -> None:
        stream = "stderr" if f.path.endswith(".err") else "stdout"
        node = self.settings.node
        marker = self._marker_of(f)
        signals = []
        records = []
        step_times = []
        collectives: list[CollectiveRecord] = []
        now = datetime.now(UTC)
        local, horizon = now.astimezone().tzinfo, now + max_future_skew()
        for line in lines:
            if (collective := read_record(line)) is not None:
                collectives.append(collective)
                continue
            found = read_prefix(line, local)
            rank, body = found.rank, found.body
            at = found.at if found.at and MIN_TIME <= found.at <= horizon else None
            records.append(LogLine(at=at, line=line, node=node, rank=rank, stream=stream))
            if (found_step := step_time(body)) is not None:
                step_times.append((rank, found_step))
            pattern = self.matcher.match(body, completion_marker=marker)
            if pattern is not None:
                signals.append(
                    LogSignalDetectedPayload(
                        signal=pattern.signal,
                        line=line,
                        node=node,
                        rank=rank,
                        pattern=pattern.name,
                        peer=peer_of(body),
                    )
                )
        step = self.settings.max_lines_per_event
        for i in range(0, len(records), step):
            payload = LogLinesObservedPayload(path=f.path, lines=tuple(records[i : i + step]))
            await self.sink.emit(self.stamp.make(LogLinesObserved, f.job, payload))
        for signal in signals:
            await self.sink.emit(self.stamp.make(LogSignalDetected, f.job, signal))
        # Only once the lines are sent: lines sent again after a failure add no step twice.
        for rank, found_step in step_times:
            self.steps.add(f.job, rank, found_step)
        for collective in collectives:
            self.collectives.add(f.job, collective)
