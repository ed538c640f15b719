"""What one NCCL output says: nccl-tests' tables, and what NCCL's debug lines say of its
communicators (their sizes, their init timings, the collectives called) and its warnings."""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class InitTiming:
    """`Init timings - ncclCommInitRank: rank 1 nranks 2 total 1.43 (…)` (NCCL 2.2x): how long
    one rank took to join its communicator."""

    rank: int
    nranks: int
    total_s: float


@dataclass
class NcclOutput:
    """What one output file says: tables, communicators, collective calls and warnings."""

    runs: list[NcclRun] = field(default_factory=list)
    comm_ranks: dict[str, int] = field(default_factory=dict)  # communicator → its size
    comm_nodes: dict[str, int] = field(default_factory=dict)  # → its nodes, where printed
    init_timings: list[InitTiming] = field(default_factory=list)
    collective_calls: dict[str, int] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    nccl_version: str | None = None
    tests_version: str | None = None  # nccl-tests' own, where it prints it (2.14+)
    # Rank lines with no table after them (the output stops, or was cut, before it)
    listed_ranks: dict[int, str] = field(default_factory=dict)
    # Hosts of processes that each listed themselves as the rank of a job of their own:
    # nccl-tests built without MPI, started by mpirun, runs once per process.
    alone: list[str] = field(default_factory=list)

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
        listed = max((len(r.ranks) for r in self.runs), default=0)
        return max(largest, listed, len(self.listed_ranks), 1)

    @property
    def slowest_init(self) -> InitTiming | None:
        return max(self.init_timings, key=lambda t: t.total_s, default=None)
