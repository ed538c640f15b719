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

Built with MPI (`make MPI=1`) and started by mpirun or `srun --mpi=pmix`, nccl-tests is one job
of many processes: rank 0 lists every rank with its host (`#  Rank  8 Group  0 Pid 739786 on
h100-4 device  0 […]`) and prints the one table. Built without MPI and started the same way,
each process runs alone as a job of one: each lists itself as `Rank  0` on its own host and
prints its own table, interleaved with the others'; `NcclOutput.alone` names those hosts, and
each table measures one rank (no bandwidth between them). nccl-tests 2.14+ names itself and the
NCCL it runs on: `# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102
nccl-library=23102` (NCCL 2.31.2).

NCCL's debug lines interleaved with a table are read by `collectors.nccl.debug`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from collectors.logs.prefixes import read_prefix
from collectors.nccl.debug import read_debug
from collectors.nccl.output import NcclOutput, NcclRow, NcclRun

_COLLECTIVE = re.compile(r"(?:Collective test starting:\s*|^|\s|/)(\w+?)_perf\b")
_RANK = re.compile(r"^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)\s+on\s+(\S+)")
_HEADER = re.compile(r"^#?\s*size\s+count\s+type\b(.*)$")
_OUT_OF_BOUNDS = re.compile(r"Out of bounds values\s*:\s*(\d+)\s*(OK|FAILED)?")
_AVG_BUSBW = re.compile(r"Avg bus bandwidth\s*:\s*([\d.eE+-]+)")
_RUN_START = re.compile(r"^#?\s*nThread\s+\d+\s+nGpus\s+\d+")
_VERSION = re.compile(r"NCCL version (\S+)")
_TESTS_VERSION = re.compile(r"nccl-tests version (\S+)(?: .*nccl-library=(\d+))?")
_NUMBER = re.compile(r"^-?[\d.]+(?:[eE][+-]?\d+)?$")
_INT = re.compile(r"^-?\d+$")


class _Parser:
    def __init__(self, collective: str | None) -> None:
        self.fixed = collective
        self.collective = collective or "unknown"
        self.out = NcclOutput()
        self.run: NcclRun | None = None
        self.check_is_error = False  # the check column is `error` (old builds), not `#wrong`
        self.pending_ranks: dict[int, str] = {}
        self.pids: dict[int, tuple[str, str]] = {}  # rank → (pid, host) of the listing under way

    def current(self) -> NcclRun:
        if self.run is None:
            self.run = NcclRun(self.collective, ranks=self.pending_ranks)
            self.pending_ranks, self.pids = {}, {}
            self.out.runs.append(self.run)
        return self.run

    def close(self) -> None:
        self.run = None

    def line(self, raw: str) -> None:
        line = read_prefix(raw.rstrip("\r\n")).body
        if "NCCL INFO" in line or "NCCL WARN" in line:
            read_debug(line, self.out)
            return
        body = line.lstrip("# ").rstrip()
        if m := _VERSION.search(line):
            self.out.nccl_version = m.group(1)
        elif m := _TESTS_VERSION.search(line):
            self.out.tests_version = m.group(1)
            if m.group(2) and self.out.nccl_version is None:
                self.out.nccl_version = _version_of(int(m.group(2)))
        elif _RUN_START.match(line):
            self.close()
        elif m := _RANK.match(line.strip()):
            self.ranked(int(m.group(1)), m.group(2), m.group(3))
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

    def ranked(self, rank: int, pid: str, host: str) -> None:
        """A `Rank N … Pid P on H` line. The same rank listed again by another process means
        each process is a job of its own (nccl-tests built without MPI)."""
        seen = self.pids.get(rank)
        if seen is not None and seen[0] != pid:
            self.out.alone.extend(h for h in (seen[1], host) if h not in self.out.alone)
        self.pids[rank] = (pid, host)
        ranks = self.run.ranks if self.run is not None else self.pending_ranks
        ranks[rank] = host


def _version_of(code: int) -> str:
    """NCCL_VERSION_CODE as a version: 23102 is 2.31.2, 2804 (before 2.9) is 2.8.4."""
    if code >= 10000:
        return f"{code // 10000}.{code % 10000 // 100}.{code % 100}"
    return f"{code // 1000}.{code % 1000 // 100}.{code % 100}"


def _check(token: str) -> float | None:
    return float(token) if _NUMBER.match(token) else None


def parse_nccl_output(lines: Iterable[str], collective: str | None = None) -> NcclOutput:
    parser = _Parser(collective)
    for raw in lines:
        parser.line(raw)
    parser.out.listed_ranks = parser.pending_ranks
    return parser.out
