"""Parsers for nccl-tests output (`all_reduce_perf` & co.) and NCCL debug logs (NCCL_DEBUG=INFO).

nccl-tests prints one row per message size: size, count, type, redop, root, then time (us),
algbw and busbw (GB/s) and #wrong, out-of-place then in-place. Debug logs carry no timings, but
say how many ranks a communicator has (`comm 0x… rank 0 nranks 16 … Init COMPLETE`); when a
nccl-tests run was made with NCCL_DEBUG=INFO both are interleaved in one file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_COLLECTIVE = re.compile(r"(?:Collective test starting:\s*|^|\s|/)(\w+?)_perf\b")
_RANK = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+\d+\s+Pid\s+\d+\s+on\s+(\S+)")
_ROW = re.compile(
    r"^\s*(\d+)\s+(\d+)\s+(\w+)\s+(\w+)\s+(-?\d+)\s+"
    r"([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\S+)"
)
_INIT = re.compile(r"NCCL INFO comm (0x[0-9a-f]+) rank (\d+) nranks (\d+) .*Init COMPLETE")
_WARN = re.compile(r"NCCL WARN (.*)")
_COLL_CALL = re.compile(
    r"NCCL INFO (\w+): opCount \w+ .* count (\d+) datatype (\d+) .*nranks=(\d+)"
)


@dataclass(frozen=True)
class NcclRow:
    collective: str
    size_bytes: int
    duration_us: float
    algbw_gbps: float
    busbw_gbps: float
    wrong: int | None


@dataclass
class NcclRun:
    """What one output file says: result rows, ranks and hosts, communicators, warnings."""

    rows: list[NcclRow] = field(default_factory=list)
    ranks: dict[int, str] = field(default_factory=dict)
    comm_ranks: dict[str, int] = field(default_factory=dict)
    collective_calls: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    avg_busbw_gbps: float | None = None

    @property
    def nranks(self) -> int:
        """Ranks of the measurement: nccl-tests' rank list, else the largest communicator."""
        if self.ranks:
            return len(self.ranks)
        return max(self.comm_ranks.values(), default=1)


def parse_nccl_output(lines: Iterable[str], collective: str | None = None) -> NcclRun:
    run = NcclRun()
    current = collective or "unknown"
    for raw in lines:
        line = raw.rstrip("\n")
        if "NCCL INFO" in line or "NCCL WARN" in line:
            _debug_line(line, run)
            continue
        if line.startswith("#"):
            if m := _RANK.match(line):
                run.ranks[int(m.group(1))] = m.group(2)
            elif "Avg bus bandwidth" in line:
                run.avg_busbw_gbps = float(line.rsplit(":", 1)[1].split()[0])
            elif collective is None and (m := _COLLECTIVE.search(line)):
                current = m.group(1)
            continue
        if m := _ROW.match(line):
            wrong = m.group(9)
            run.rows.append(
                NcclRow(
                    collective=current,
                    size_bytes=int(m.group(1)),
                    duration_us=float(m.group(6)),
                    algbw_gbps=float(m.group(7)),
                    busbw_gbps=float(m.group(8)),
                    wrong=int(wrong) if wrong.isdigit() else None,
                )
            )
        elif collective is None and (m := _COLLECTIVE.search(line)):
            current = m.group(1)
    return run


def _debug_line(line: str, run: NcclRun) -> None:
    if m := _INIT.search(line):
        run.comm_ranks[m.group(1)] = int(m.group(3))
    elif m := _WARN.search(line):
        run.warnings.append(m.group(1).strip())
    elif m := _COLL_CALL.search(line):
        name = m.group(1)
        run.collective_calls[name] = run.collective_calls.get(name, 0) + 1
