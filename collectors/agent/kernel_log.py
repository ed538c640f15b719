"""Where the node agent reads the kernel log: /dev/kmsg, the journal, or a followed file.

`CENTRALITY_AGENT_KERNEL_LOG` picks one: `kmsg` (default; needs read access to /dev/kmsg,
i.e. root or CAP_SYSLOG in a privileged DaemonSet), `journal` (`journalctl -k -f`), a file
path (`/var/log/kern.log`, followed through rotation and truncation), or `none`.
Only records written after the agent starts are read unless `KERNEL_LOG_FROM_START` is set:
a restarted agent must not report the XIDs of before again as new faults.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Protocol

import structlog

from collectors.clock import MONOTONIC, Clock

log = structlog.get_logger(__name__)

_READ_BYTES = 64 * 1024


class KernelLogSource(Protocol):
    name: str

    def lines(self, stop: asyncio.Event) -> AsyncIterator[str]:
        """Kernel log lines as they are written, until `stop`."""
        ...


class _Polled:
    """A kernel log read by polling: where, how often, and whether old lines count."""

    def __init__(
        self, path: Path, poll_s: float, from_start: bool = False, clock: Clock = MONOTONIC
    ) -> None:
        self.name = str(path)
        self.path = path
        self.poll_s = poll_s
        self.from_start = from_start
        self.clock = clock


class FollowedFile(_Polled):
    """A file read like `tail -F`: new lines only, reopened when rotated or truncated."""

    async def lines(self, stop: asyncio.Event) -> AsyncIterator[str]:
        inode: int | None = None
        offset = 0
        partial = b""
        first = True
        while not stop.is_set():
            try:
                st = self.path.stat()
            except FileNotFoundError:
                first = False  # a file that appears later is read from its start
                await self.clock.sleep(self.poll_s, stop)
                continue
            if st.st_ino != inode or st.st_size < offset:
                offset = st.st_size if first and not self.from_start else 0
                inode, partial = st.st_ino, b""
            first = False
            if st.st_size > offset:
                with self.path.open("rb") as f:
                    f.seek(offset)
                    data = f.read(_READ_BYTES)
                offset += len(data)
                *complete, partial = (partial + data).split(b"\n")
                for raw in complete:
                    yield raw.decode(errors="replace")
                if st.st_size > offset:
                    continue
            await self.clock.sleep(self.poll_s, stop)


class Kmsg(_Polled):
    """/dev/kmsg: one record per read, `prio,seq,usec,flags;text`, then `KEY=value` lines."""

    async def lines(self, stop: asyncio.Event) -> AsyncIterator[str]:
        fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            if not self.from_start:
                os.lseek(fd, 0, os.SEEK_END)
            while not stop.is_set():
                for record in _drain(fd):
                    yield record
                await self.clock.sleep(self.poll_s, stop)
        finally:
            os.close(fd)


def _drain(fd: int) -> list[str]:
    records: list[str] = []
    while True:
        try:
            data = os.read(fd, 8192)
        except BlockingIOError:
            return records
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # records were overwritten before we read them
                continue
            raise
        if not data:
            return records
        header, _, text = data.decode(errors="replace").partition(";")
        records.append(text.split("\n", 1)[0] if text else header)


class Journal:
    """`journalctl -k -f`: the kernel's records as journald keeps them."""

    name = "journal"

    def __init__(self, from_start: bool = False) -> None:
        self.from_start = from_start

    async def lines(self, stop: asyncio.Event) -> AsyncIterator[str]:
        args = ["journalctl", "-k", "-f", "-o", "short-iso", "--no-pager"]
        args += ["-b"] if self.from_start else ["-n", "0"]
        proc = await asyncio.create_subprocess_exec(
            *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL
        )
        assert proc.stdout is not None
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while True:
                reading = asyncio.ensure_future(proc.stdout.readline())
                await asyncio.wait({reading, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not reading.done():
                    reading.cancel()
                    return
                raw = reading.result()
                if not raw:
                    return
                yield raw.decode(errors="replace").rstrip("\n")
        finally:
            stopped.cancel()
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
            await proc.wait()


def kernel_log_source(spec: str, poll_s: float, from_start: bool) -> KernelLogSource | None:
    if spec == "none":
        return None
    if spec == "journal":
        return Journal(from_start)
    if spec == "kmsg":
        return Kmsg(Path("/dev/kmsg"), poll_s, from_start)
    return FollowedFile(Path(spec), poll_s, from_start)
