"""NcclSampled events of one parsed run, batched per node."""

from __future__ import annotations

from collectors.events import Stamp
from collectors.nccl.parse import NcclRun
from schemas.events import NcclSampled
from schemas.events.gpus import NcclSampledPayload


def nccl_events(run: NcclRun, stamp: Stamp, node: str, job_id: str | None) -> list[NcclSampled]:
    ranks = run.nranks
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
                ranks=ranks,
                job_id=job_id,
                source_kind="nccl-tests",
            ),
        )
        for row in run.rows
    ]
