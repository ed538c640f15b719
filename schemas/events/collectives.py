"""How long a job's collectives take on one host: NCCL Inspector's per-collective records,
summarised per communicator and interval.

Timed on the GPU (Inspector's `coll_timing_source: kernel_gpu`), a collective runs from the moment
a rank's kernel starts to the moment the last rank's data is in: every rank ends together, so a
rank that starts late, because its host is behind in its own work, shows the shortest time, and
the ranks that waited for it the longest. A host whose collectives take much less time than its
job's other hosts' in the same communicator is the one the others wait for (docs/rules.md,
`slow_node`). That is attribution, not magnitude: how much it costs the job is the job's step
times' to say.
"""

from typing import Literal

from pydantic import Field

from schemas.envelope import Event, Payload
from schemas.limits import INT32_MAX, INT64_MAX, NAME, NODE_NAME, UINT32_MAX, WORD
from schemas.registry import event

Timing = Literal["kernel_gpu", "kernel_cpu", "collective_cpu", "other"]
# An hour a collective: a longer one is a hang, which the hang rules see.
EXEC_US_MAX = 3_600_000_000.0


class CollectivesTimedPayload(Payload):
    node: str = Field(min_length=1, max_length=NODE_NAME, description="The host they ran on.")
    communicator: str = Field(
        min_length=1, max_length=NAME, description="NCCL's communicator id, as Inspector writes it."
    )
    collective: str = Field(min_length=1, max_length=WORD, description="AllReduce, AllGather, …")
    size_bytes: int = Field(ge=0, le=INT64_MAX, description="The message size of each.")
    comm_ranks: int = Field(ge=1, le=INT32_MAX, description="The communicator's ranks, all hosts.")
    comm_nodes: int = Field(ge=1, le=INT32_MAX, description="The hosts it spans.")
    ranks: int = Field(ge=1, le=INT32_MAX, description="This host's ranks these came from.")
    count: int = Field(ge=1, le=UINT32_MAX, description="How many collectives this summarises.")
    exec_us: float = Field(
        ge=0,
        le=EXEC_US_MAX,
        description="The host's latest rank's median time a collective (the shortest of its "
        "ranks' medians): how long it takes where this host is the one waited for.",
    )
    busbw_gbs: float | None = Field(
        default=None, ge=0, le=1e6, description="Their median bus bandwidth, GB/s."
    )
    timing: Timing = Field(
        default="other",
        description="What Inspector timed: the GPU kernel's span (`kernel_gpu`, the only one "
        "that tells who was waited for), or a CPU's.",
    )


@event(topic="jobs")
class CollectivesTimed(Event):
    """One host's collectives in one communicator over an interval; `subject` is the job id."""

    type: Literal["CollectivesTimed"] = "CollectivesTimed"
    payload: CollectivesTimedPayload
