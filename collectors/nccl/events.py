"""NcclSampled events of the valid runs of one parsed output, batched per node.

A run that failed its correctness check measured a broken collective: its rows are never
published as samples. `rejected` names those runs so the caller can report them.
"""

from __future__ import annotations

from collectors.events import Stamp
from collectors.nccl.parse import NcclOutput
from schemas.events import NcclSampled
from schemas.events.gpus import NcclSampledPayload


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
