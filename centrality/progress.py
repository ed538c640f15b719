"""Progress of long work on the terminal: phases with a spinner, and a bar where the total is known.

Shown only to a person: not when stderr is not a terminal, and not with `--json`, where the
output must stay machine-readable. Drawn on stderr and cleared when done.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
)


def wanted(json: bool = False) -> bool:
    return not json and sys.stderr.isatty()


class Tracker:
    """One task at a time; `phase` starts the next one. Without a display, every call is free."""

    def __init__(self, progress: Progress | None) -> None:
        self._progress = progress
        self._task: TaskID | None = None

    def phase(self, description: str, total: float | None = None) -> None:
        if self._progress is None:
            return
        if self._task is not None:
            self._progress.remove_task(self._task)
        self._task = self._progress.add_task(description, total=total)

    def log(self, message: str) -> None:
        """A line that stays, above the bar while one is drawn."""
        console = self._progress.console if self._progress else Console(stderr=True)
        console.log(message, _stack_offset=2)  # attributed to the caller, not to this helper

    def advance(self, amount: float = 1) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.advance(self._task, amount)

    def update(self, completed: float) -> None:
        if self._progress is not None and self._task is not None:
            self._progress.update(self._task, completed=completed)


@contextlib.contextmanager
def tracking(enabled: bool) -> Iterator[Tracker]:
    if not enabled:
        yield Tracker(None)
        return
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}"),
        BarColumn(),
        TaskProgressColumn(),  # a percentage where the total is known, nothing otherwise
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
        refresh_per_second=4,  # benchmarks run beside it: draw little
    )
    with progress:
        yield Tracker(progress)
