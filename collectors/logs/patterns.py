"""Signals found in log lines at the edge, so rules never grep raw lines."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from collectors.logs.settings import PatternSpec
from schemas.events.logs import LogSignal

# Order matters: the first match wins, so the specific (timeout) precedes the general (error).
DEFAULT_PATTERNS: tuple[PatternSpec, ...] = (
    PatternSpec(
        signal=LogSignal.TRAINING_COMPLETE,
        regex=r"(?i)\btraining (?:complete|completed|finished)\b",
        name="training_complete",
    ),
    PatternSpec(
        signal=LogSignal.NCCL_TIMEOUT,
        regex=r"Watchdog caught collective operation timeout|NCCL.*\bTime(?:d ?)?out\b"
        r"|ProcessGroupNCCL.*[Tt]imeout",
        name="nccl_timeout",
    ),
    PatternSpec(
        signal=LogSignal.NCCL_ERROR,
        regex=r"NCCL WARN|NCCL error|nccl(?:InternalError|UnhandledCudaError|SystemError"
        r"|RemoteError|InvalidUsage)",
        name="nccl_error",
    ),
    PatternSpec(
        signal=LogSignal.OOM,
        regex=r"CUDA out of memory|OutOfMemoryError|oom-kill|Out Of Memory|oom_kill",
        name="oom",
    ),
    PatternSpec(
        signal=LogSignal.CUDA_ERROR,
        regex=r"CUDA error|cudaError\w+|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+"
        r"|illegal memory access|device-side assert",
        name="cuda_error",
    ),
    PatternSpec(
        signal=LogSignal.TRACEBACK,
        regex=r"^(?:\[rank\d+\]:\s*|\d+:\s*)?Traceback \(most recent call last\):",
        name="traceback",
    ),
)

_RANK = re.compile(r"^\[rank(\d+)\]:|^(\d+): ")


@dataclass(frozen=True)
class Pattern:
    signal: LogSignal
    regex: re.Pattern[str]
    name: str


class Matcher:
    """Custom patterns first (the user knows their job), then the built-ins."""

    def __init__(self, custom: Iterable[PatternSpec], *, defaults: bool = True) -> None:
        specs = [*custom, *(DEFAULT_PATTERNS if defaults else ())]
        self.patterns = [
            Pattern(s.signal, re.compile(s.regex), s.name or s.signal.value.lower()) for s in specs
        ]

    def match(self, line: str) -> Pattern | None:
        for pattern in self.patterns:
            if pattern.regex.search(line):
                return pattern
        return None


def rank_of(line: str) -> int | None:
    """torchrun's `[rankN]:` or srun --label's `N: ` prefix."""
    m = _RANK.match(line)
    if m is None:
        return None
    return int(m.group(1) or m.group(2))
