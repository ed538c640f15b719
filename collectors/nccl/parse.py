"""Parsers for nccl-tests output (`all_reduce_perf` & co.) and NCCL debug logs (NCCL_DEBUG=INFO).

nccl-tests prints one row per message size: size, count, type, [redop], [root], then time (us),
algbw and busbw (GB/s) and a check column, out-of-place then (usually) in-place. Layouts seen
across versions, all read here:

- current: `size count type redop root | time algbw busbw #wrong | …`, `#wrong` an integer
  count or `N/A` when validation was off or does not apply;
- 2.0-2.10 era: no `root` column (`size count type redop | …`), the check column is `error`,
  the largest relative error (`1e-07`), which is *not* a failure by itself;
- NCCL 2.4 era and older: no `redop` either (`size count type | …`), header lines without `#`;
- `#wrong` printed with `%g` (`1.04858e+06`) by some builds.

A table ends with `Out of bounds values : N OK|FAILED` (the run's verdict) and
`Avg bus bandwidth`. A run is invalid when that count is non-zero or a `#wrong` cell is:
its rows measure a broken collective and must never be read as bandwidth.

Launchers put prefixes before every line: Open MPI `--tag-output` (`[1,0]<stdout>:`),
`--timestamp-output`, MPICH's and Intel MPI's `[0] `, Ray / SkyPilot (`(head, rank=0, pid=3808) `),
`srun -l` (`0: `). They are stripped before parsing (`collectors.logs.prefixes`).

Debug logs carry no timings but say how many ranks a communicator has:
`NCCL INFO comm 0x… rank 0 nranks 16 … - Init COMPLETE` (NCCL ≤ 2.18) or
`NCCL INFO ncclCommInitRank comm 0x… rank 0 nranks 16 … - Init COMPLETE` (2.19+, also
`ncclCommInitAll`, `ncclCommInitRankConfig`, `ncclCommSplit`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from collectors.logs.prefixes import read_prefix

_COLLECTIVE = re.compile(r"(?:Collective test starting:\s*|^|\s|/)(\w+?)_perf\b")
_RANK = re.compile(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)")
_HEADER = re.compile(r"^#?\s*size\s+count\s+type\b(.*)$")
_OUT_OF_BOUNDS = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG_BUSBW = re.compile(r"Avg bus bandwidth\s*:\s*([\d.eE+-]+)")
_RUN_START = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+\d+")
_VERSION = re.compile(r"NCCL version (\S+)")
_INIT = re.compile(
    r"NCCL INFO (?:\w+ )?comm (0x[0-9a-fA-F]+) rank (\d+) nranks (\d+) .*Init COMPLETE"
)
_WARN = re.compile(r"NCCL WARN (.*)")
_COLL_CALL = re.compile(
    r"NCCL INFO (\w+): opCount \w+ .* count (\d+) datatype (\d+) .*nranks=(\d+)"
)
_NUMBER = re.compile(r"^-?[\d.]+(?:[eE][+-]?\d+)?$")
_INT = re.compile(r"^-?\d+$")


@dataclass(frozen=True)
class NcclRow:
    collective: str
    size_bytes: int
    duration_us: float  # out-of-place
    algbw_gbps: float
    busbw_gbps: float
    wrong: float | None  # wrong elements (out-of-place + in-place); None: not checked
    error: float | None = None  # older builds: largest relative error, not a verdict
    inplace_busbw_gbps: float | None = None


@dataclass
class NcclRun:
    """One nccl-tests table: its rows, the ranks it lists and its correctness verdict."""

    collective: str
    rows: list[NcclRow] = field(default_factory=list)
    ranks: dict[int, str] = field(default_factory=dict)
    out_of_bounds: int | None = None
    avg_busbw_gbps: float | None = None

    @property
    def wrong_rows(self) -> int:
        return sum(1 for r in self.rows if r.wrong)

    @property
    def valid(self) -> bool:
        """Correct results: no out-of-bounds values, no row with wrong elements."""
        return not self.out_of_bounds and not self.wrong_rows

    @property
    def failure(self) -> str | None:
        if self.valid:
            return None
        parts = []
        if self.out_of_bounds:
            parts.append(f"{self.out_of_bounds} out-of-bounds values")
        if self.wrong_rows:
            parts.append(f"{self.wrong_rows} of {len(self.rows)} sizes with wrong elements")
        return f"{self.collective}: " + ", ".join(parts)


@dataclass
class NcclOutput:
    """What one output file says: tables, communicators, collective calls and warnings."""

    runs: list[NcclRun] = field(default_factory=list)
    comm_ranks: dict[str, int] = field(default_factory=dict)
    collective_calls: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    nccl_version: str | None = None

    @property
    def rows(self) -> list[NcclRow]:
        return [row for run in self.runs for row in run.rows]

    def ranks_of(self, run: NcclRun) -> int:
        """A table's ranks: its own rank list, else the largest communicator, else 1."""
        if run.ranks:
            return len(run.ranks)
        return self.nranks

    @property
    def nranks(self) -> int:
        largest = max(self.comm_ranks.values(), default=0)
        return max(largest, max((len(r.ranks) for r in self.runs), default=0), 1)


class _Parser:
    def __init__(self, collective: str | None) -> None:
        self.fixed = collective
        self.collective = collective or "unknown"
        self.out = NcclOutput()
        self.run: NcclRun | None = None
        self.check_is_error = False  # the check column is `error` (old builds), not `#wrong`
        self.pending_ranks: dict[int, str] = {}

    def current(self) -> NcclRun:
        if self.run is None:
            self.run = NcclRun(self.collective, ranks=self.pending_ranks)
            self.pending_ranks = {}
            self.out.runs.append(self.run)
        return self.run

    def close(self) -> None:
        self.run = None

    def line(self, raw: str) -> None:
        line = read_prefix(raw.rstrip("\r\n")).body
        if "NCCL INFO" in line or "NCCL WARN" in line:
            self.debug(line)
            return
        body = line.lstrip("# ").rstrip()
        if m := _VERSION.search(line):
            self.out.nccl_version = m.group(1)
        elif _RUN_START.match(line):
            self.close()
        elif m := _RANK.match(line.strip()):
            ranks = self.run.ranks if self.run is not None else self.pending_ranks
            ranks[int(m.group(1))] = m.group(2)
        elif m := _HEADER.match(line.strip()):
            self.check_is_error = re.search(r"\berror\b", m.group(1)) is not None
        elif m := _OUT_OF_BOUNDS.search(body):
            self.current().out_of_bounds = int(m.group(1))
        elif m := _AVG_BUSBW.search(body):
            self.current().avg_busbw_gbps = float(m.group(1))
            self.close()
        elif (row := self.row(line)) is not None:
            self.current().rows.append(row)
        elif self.fixed is None and (m := _COLLECTIVE.search(line)):
            self.collective = m.group(1)
            if self.run is not None and not self.run.rows:
                self.run.collective = self.collective

    def row(self, line: str) -> NcclRow | None:
        tokens = line.split()
        if len(tokens) < 7 or not (_INT.match(tokens[0]) and _INT.match(tokens[1])):
            return None
        rest = tokens[3:]
        if rest and not _NUMBER.match(rest[0]):
            rest = rest[1:]  # redop
        if len(rest) in (5, 9) and _INT.match(rest[0]):
            rest = rest[1:]  # root
        if len(rest) not in (4, 8) or not all(_NUMBER.match(t) for t in rest[0:3]):
            return None
        checks = [_check(t) for t in rest[3::4]]
        inplace = float(rest[6]) if len(rest) == 8 and _NUMBER.match(rest[6]) else None
        known = [c for c in checks if c is not None]
        total = sum(known) if known else None
        return NcclRow(
            collective=self.collective,
            size_bytes=int(tokens[0]),
            duration_us=float(rest[0]),
            algbw_gbps=float(rest[1]),
            busbw_gbps=float(rest[2]),
            wrong=None if self.check_is_error else total,
            error=max(known) if self.check_is_error and known else None,
            inplace_busbw_gbps=inplace,
        )

    def debug(self, line: str) -> None:
        if m := _INIT.search(line):
            self.out.comm_ranks[m.group(1)] = int(m.group(3))
        elif m := _WARN.search(line):
            self.out.warnings.append(m.group(1).strip())
        elif m := _COLL_CALL.search(line):
            name = m.group(1)
            self.out.collective_calls[name] = self.out.collective_calls.get(name, 0) + 1


def _check(token: str) -> float | None:
    return float(token) if _NUMBER.match(token) else None


def parse_nccl_output(lines: Iterable[str], collective: str | None = None) -> NcclOutput:
    parser = _Parser(collective)
    for raw in lines:
        parser.line(raw)
    return parser.out
