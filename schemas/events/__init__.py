"""Every event family of the contract; importing this package registers them all."""

from schemas.events.actions import (
    ActionFailed,
    ActionHeld,
    ActionStarted,
    ActionSucceeded,
    BenchmarkCompleted,
    FleetBaseline,
    GpuBenchmark,
)
from schemas.events.checkpoints import CheckpointSaved
from schemas.events.collectives import CollectivesTimed
from schemas.events.gpus import GpuSampled, GpuXidObserved, NcclSampled
from schemas.events.incidents import IncidentOpened, IncidentResolved, IncidentUpdated
from schemas.events.jobs import (
    CompletionHook,
    JobExited,
    JobExitedPayload,
    JobState,
    JobStateChanged,
    JobSubmitted,
)
from schemas.events.logs import LogLine, LogLinesObserved, LogSignal, LogSignalDetected
from schemas.events.nodes import (
    HealthStatus,
    NodeFactsObserved,
    NodeHealthChecked,
    NodeHeartbeat,
    NodeStateObserved,
    SchedulerNodeState,
)
from schemas.events.silences import SilenceAdded, SilenceExpired
from schemas.events.status import JobStatusChanged, NodeStatusChanged
from schemas.events.steps import StepTimesObserved
from schemas.events.triggers import (
    CancelJob,
    EscalateNodes,
    Notify,
    QuarantineBatch,
    QuarantineNodes,
    RebootNodes,
    ReleaseJob,
    ReleaseNodes,
    RequestCheckpoint,
    ResetGpus,
    RestartJob,
    RunBenchmark,
    Trigger,
    trigger_id,
)

__all__ = [
    "ActionFailed",
    "ActionHeld",
    "ActionStarted",
    "ActionSucceeded",
    "BenchmarkCompleted",
    "CancelJob",
    "CheckpointSaved",
    "CollectivesTimed",
    "CompletionHook",
    "EscalateNodes",
    "FleetBaseline",
    "GpuBenchmark",
    "GpuSampled",
    "GpuXidObserved",
    "HealthStatus",
    "IncidentOpened",
    "IncidentResolved",
    "IncidentUpdated",
    "JobExited",
    "JobExitedPayload",
    "JobState",
    "JobStateChanged",
    "JobStatusChanged",
    "JobSubmitted",
    "LogLine",
    "LogLinesObserved",
    "LogSignal",
    "LogSignalDetected",
    "NcclSampled",
    "NodeFactsObserved",
    "NodeHealthChecked",
    "NodeHeartbeat",
    "NodeStateObserved",
    "NodeStatusChanged",
    "Notify",
    "QuarantineBatch",
    "QuarantineNodes",
    "RebootNodes",
    "ReleaseJob",
    "ReleaseNodes",
    "RequestCheckpoint",
    "ResetGpus",
    "RestartJob",
    "RunBenchmark",
    "SchedulerNodeState",
    "SilenceAdded",
    "SilenceExpired",
    "StepTimesObserved",
    "Trigger",
    "trigger_id",
]
