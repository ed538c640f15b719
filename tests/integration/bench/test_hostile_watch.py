"""The hostile bench's RSS watch counts a whole process group: a real one, started here.

(Split from tests/unit/bench/test_hostile_watch.py: the unit layer starts no process.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time

from centrality.bench.hostile_watch import PeakRss


def test_peak_rss_counts_the_whole_process_group() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "x = bytearray(200 << 20); import time; time.sleep(30)"],
        start_new_session=True,
    )
    try:
        rss = PeakRss()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rss.sample({"child": child.pid, "me": os.getpid()})
            peak = rss.peak_mb()["child"]
            if peak and peak > 200:
                break
            time.sleep(0.1)
        peaks = rss.peak_mb()
        assert peaks["child"] is not None and peaks["child"] > 200
        assert peaks["me"] is not None and peaks["me"] > 10
    finally:
        child.kill()
        child.wait()
