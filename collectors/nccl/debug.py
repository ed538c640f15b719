"""NCCL's debug lines (NCCL_DEBUG=INFO): communicator sizes, init timings, calls, warnings.

Debug lines carry no bandwidth, but say how big each communicator is, wherever NCCL prints it:

- `comm 0x… rank 0 nranks 16 … - Init START` / `- Init COMPLETE` (`ncclCommInitRank`,
  `ncclCommInitAll`, `ncclCommInitRankConfig`, `ncclCommSplit` in front of `comm` since 2.19);
- `comm 0x… rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0` (2.19+), the one line
  that also says how many nodes the communicator spans;
- `bootstrapSplit: comm 0x… parent 0x… rank 0 nranks 4 …` (a communicator split off another);
- NCCL 2.3's bare `comm 0x… rank 1 nranks 4`;
- a collective's `… comm 0x… [nranks=8] stream …`.

`Init timings - ncclCommInitRank: rank 1 nranks 2 total 1.43 (kernels …)` (2.2x) is how long a
rank took to join: a slow rank's node shows there first. The tuner's `8 Bytes -> Algo 0 proto 0
time 25.2` (NCCL_DEBUG_SUBSYS=TUNING) is the cost model's prediction, never a measurement: it is
not read.
"""

from __future__ import annotations

import re

from collectors.nccl.output import InitTiming, NcclOutput

_COMM = re.compile(
    r"\bcomm (0x[0-9a-fA-F]+)(?: parent 0x[0-9a-fA-F]+)? rank \d+ n[Rr]anks (\d+)"
    r"(?: nNodes (\d+))?"
)
_CALL_COMM = re.compile(r"\bcomm (0x[0-9a-fA-F]+) \[nranks=(\d+)\]")
_INIT_TIMING = re.compile(r"Init timings\b.*?\brank (\d+) nranks (\d+) total ([\d.]+)")
_WARN = re.compile(r"NCCL WARN (.*)")
_COLL_CALL = re.compile(
    r"NCCL INFO (\w+): opCount \w+ .* count (\d+) datatype (\d+) .*nranks=(\d+)"
)


def read_debug(line: str, out: NcclOutput) -> None:
    """What one `NCCL INFO`/`NCCL WARN` line adds to `out`."""
    if m := _WARN.search(line):
        out.warnings.append(m.group(1).strip())
        return
    if m := _INIT_TIMING.search(line):
        rank, nranks, total = m.groups()
        out.init_timings.append(InitTiming(int(rank), int(nranks), float(total)))
        return
    if m := _COMM.search(line) or _CALL_COMM.search(line):
        out.comm_ranks[m.group(1)] = int(m.group(2))
        if m.re is _COMM and m.group(3):
            out.comm_nodes[m.group(1)] = int(m.group(3))
    if m := _COLL_CALL.search(line):
        name = m.group(1)
        out.collective_calls[name] = out.collective_calls.get(name, 0) + 1
