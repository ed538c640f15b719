"""Events of one parsed output: NcclSampled of its valid runs, batched per node, and a job's
LogSignalDetected per process NCCL's RAS report names as dead or unreachable.

A run that failed its correctness check measured a broken collective: its rows are never
published as samples. `rejected` names those runs so the caller can report them.

A process RAS names is evidence against its node, as NCCL's own `Connection closed by remote
peer` is: the signal names that node as its `peer`, which the job resolves among its nodes
(docs/rules.md, "suspects"). Like any log signal it belongs to a job, so only an output read for
a job gives any.
"""

from __future__ import annotations

from collectors.events import Stamp
from collectors.nccl.output import NcclOutput
from collectors.nccl.ras import RasProcess, RasReport
from schemas.events import LogSignalDetected, NcclSampled
from schemas.events.gpus import NcclSampledPayload
from schemas.events.logs import LogSignal, LogSignalDetectedPayload
from schemas.limits import LOG_LINE, NODE_NAME


def rejected(output: NcclOutput) -> list[str]:
    return [run.failure for run in output.runs if run.failure]


def nccl_events(
    output: NcclOutput, stamp: Stamp, node: str, job_id: str | None
) -> list[NcclSampled]:
    return [
        stamp.make(
            NcclSampled,
            node,
            NcclSampledPayload(
                collective=row.collective,
                size_bytes=row.size_bytes,
                algbw_gbps=row.algbw_gbps,
                busbw_gbps=row.busbw_gbps,
                duration_us=row.duration_us,
                ranks=output.ranks_of(run),
                job_id=job_id,
                source_kind="nccl-tests",
            ),
        )
        for run in output.runs
        if run.valid
        for row in run.rows
    ]


def ras_events(report: RasReport, stamp: Stamp, node: str, job_id: str) -> list[LogSignalDetected]:
    """One signal per process RAS declared dead (`nccl_ras_dead`) or could not reach
    (`nccl_ras_unreachable`), read on `node`, naming the process' node as the peer."""
    named = [("nccl_ras_dead", p) for p in report.dead]
    named += [("nccl_ras_unreachable", p) for p in report.unreachable]
    return [stamp.make(LogSignalDetected, job_id, _said(pattern, p, node)) for pattern, p in named]


def _said(pattern: str, process: RasProcess, node: str) -> LogSignalDetectedPayload:
    line = process.said or f"Process {process.pid} on node {process.node}"
    return LogSignalDetectedPayload(
        signal=LogSignal.NCCL_ERROR,
        line=f"NCCL RAS: {line}"[:LOG_LINE],
        node=node,
        rank=process.rank,
        pattern=pattern,
        peer=process.node if len(process.node) <= NODE_NAME else None,
    )
