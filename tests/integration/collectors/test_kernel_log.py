"""The journal source runs a journalctl stand-in as a process, reads it and stops it.

(Split from tests/unit/collectors/test_kernel_log.py: the unit layer starts no process.)"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from collectors.agent.kernel_log import Journal
from tests.unit.collectors.test_kernel_log import XIDS


async def test_journal_source_reads_journalctl_and_stops_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "journalctl"  # prints the real lines, then follows forever like -f
    fake.write_text(f"#!/bin/sh\ncat {XIDS / 'gpud_pr1174_kmsg.log'}\nexec sleep 60\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    stop = asyncio.Event()
    got: list[str] = []

    async def collect() -> None:
        async for line in Journal().lines(stop):
            got.append(line)

    task = asyncio.create_task(collect())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while len(got) < 4 and loop.time() < deadline:
        await asyncio.wait([task], timeout=0.02)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert [line.split(",")[0] for line in got] == [
        "NVRM: Xid (PCI:0019:01:00): 149",
        "NVRM: Xid (PCI:0000:00:00): 149",
        "NVRM: Xid (PCI:0018:01:00): 145",
        "NVRM: Xid (PCI:0000:9b:00): 94",
    ]
