"""Local table stores are trusted only after a clean stop.

A worker writes its RocksDB store at once and the changelog record a few milliseconds later.
Killed in between, it leaves a local store ahead of the changelog: the redelivered message then
changes nothing locally, so the changelog (the truth for every other worker and for recovery
elsewhere) never gets that state. A marker file says a worker is running; if it is still there
when a worker starts, the last one died, and the local stores are dropped so that they are
restored from the changelog instead.
"""

from __future__ import annotations

import atexit
import os
import shutil
from pathlib import Path

import structlog

log = structlog.get_logger("streams")


_marker: Path | None = None


def distrust() -> None:
    """The local stores may now hold what the changelog lacks (a changelog record was dropped):
    leave the marker at exit, so the next start restores them from the changelog."""
    if _marker is not None:
        atexit.unregister(_marker.unlink)
        log.warning("local_stores_distrusted", marker=str(_marker))


def guard(tabledir: Path) -> bool:
    """Drop `tabledir` if the previous worker did not stop cleanly; True if it did so."""
    global _marker
    marker = _marker = tabledir.parent / "worker-running"
    dropped = marker.exists() and tabledir.exists()
    if dropped:
        log.warning("unclean_stop_restoring_from_changelog", tables=str(tabledir))
        shutil.rmtree(tabledir)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text(str(os.getpid()))
    atexit.register(marker.unlink, missing_ok=True)  # not run on SIGKILL: that is the point
    return dropped
