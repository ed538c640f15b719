"""Signals found in log lines at the edge, so rules never grep raw lines.

A line is read after what launchers put in front of it (`collectors.logs.prefixes`). One
compiled regex looks for the keywords every built-in pattern needs,
all at once; most lines have none and end there. Only the patterns whose keywords a line has
are then tried, in order, and the first that matches wins.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from collectors.logs.settings import PatternSpec
from schemas.events.logs import LogSignal

# What may stand right before a bare "Training complete": the start of the line or the end of
# a log header. Anything else ("epoch 3 training finished", "Training finished iteration 3")
# is a per-iteration line, never the end of a job.
_HEADER_END = r"(?:^|[\]|:>)-][ \t]*|\b(?:INFO|NOTICE)\b:?[ \t]+)"


@dataclass(frozen=True)
class Builtin:
    spec: PatternSpec
    keywords: tuple[str, ...]  # lower case; any line the regex matches contains one of them


# Order matters: the first match wins, so the specific precedes the general (an out-of-memory
# CUDA error is OOM, not CUDA_ERROR; a segfault reported by srun is a crash, not a task exit).
DEFAULT_PATTERNS: tuple[Builtin, ...] = (
    Builtin(
        PatternSpec(
            signal=LogSignal.TRAINING_COMPLETE,
            regex=r"`Trainer\.fit` stopped: `max_(?:epochs|steps)=-?\d+` reached"  # Lightning
            r"|^\[after training is done\]"  # Megatron-LM
            r"|\bdone training in \d+(?:\.\d+)? seconds"  # fairseq
            r"|^Training completed (?:training )?after \d+ iterations? at "  # Ray Train
            rf"|{_HEADER_END}(?:[Tt]raining|TRAINING) (?:is )?(?:[Cc]ompleted?|[Ff]inished|[Dd]one"
            r"|COMPLETED?|FINISHED|DONE)"
            r"(?:[.!]|[ \t]*$)",  # HF Trainer, torchtitan, and the plain "Training Complete"
            name="training_complete",
        ),
        ("training", "trainer.fit"),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.NODE_LOST,
            regex=r"Task failed because the node it was running on is dead"
            r"|Worker exit detail: Owner's node has crashed"
            r"|\bNodeDiedError\b|The actor died because its node has died"
            # Ray's GCS on a node whose raylet stopped answering, and the raylet told so
            r"|has been marked dead because the (?:detector|monitor) has missed too many heartbeats"
            r"|this node manager has mistakenly been marked as dead by the GCS"
            r"|The raylet exited immediately because",
            name="node_lost",
        ),
        (
            "node it was running on",
            "owner's node",
            "nodediederror",
            "its node has died",
            "marked dead",
            "marked as dead",
            "raylet exited",
        ),
    ),
    Builtin(
        PatternSpec(
            # Ray names what *may* have killed a worker (SIGKILL, the OOM killer, SIGSEGV)
            # without knowing: a worker death, not a crash or an OOM.
            signal=LogSignal.WORKER_FAILED,
            regex=r"A worker died or was killed while executing a task"
            r"|The actor is dead because its worker process has died",
            name="ray_worker_died",
        ),
        ("a worker died", "worker process has died"),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.COORDINATION_ERROR,
            regex=r"\bDist(?:Store|Network)Error\b|\bRendezvous\w*(?:Error|Exception)\b"
            r"|in coordination service: \w+|Polled an error from coordination service"
            r"|JAX distributed service detected fatal errors"
            r"|Failed to connect to GCS\b|Unable to connect to GCS at",  # Ray's control plane
            name="coordination",
        ),
        (
            "diststoreerror",
            "distnetworkerror",
            "rendezvous",
            "coordination service",
            "jax distributed",
            "to gcs",
        ),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.TPU_ERROR,
            regex=r"Core halted unexpectedly|Accelerator device halted prematurely",
            name="tpu_halted",
        ),
        ("halted",),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.NCCL_TIMEOUT,
            regex=r"Watchdog caught collective operation timeout|NCCL.*\bTime(?:d ?)?out\b"
            r"|ProcessGroupNCCL.*[Tt]imeout",
            name="nccl_timeout",
        ),
        ("nccl", "watchdog"),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.OOM,
            # XLA's BFC allocator says when running short is not a failure (it retries smaller)
            regex=r"\b[Oo]ut [Oo]f [Mm]emory\b(?!.*The caller indicates that this is not a failure)"
            r"|OUT OF MEMORY|OutOfMemoryError|\bCUDA_ERROR_OUT_OF_MEMORY\b"
            r"|(?:RESOURCE_EXHAUSTED|Resource exhausted): (?:Failed to allocate|Out\b)"
            r"|\b(?:CUBLAS|CUDNN)_STATUS_ALLOC_FAILED\b|cudaErrorMemoryAllocation"
            r"|can't allocate memory|\boom[-_]kill|OOMKilled"
            # XLA on TPU: the TF-era runtime's words, and its allocator's detail line
            r"|Resource exhausted: From /job:tpu_worker"
            r"|Attempting to reserve \S+ at the bottom of memory\. That was not possible",
            name="oom",
        ),
        ("memory", "oom", "alloc", "resource exhausted", "resource_exhausted"),
    ),
    Builtin(
        PatternSpec(
            # NCCL's own words for a broken connection naming its other end, as PyTorch's
            # exception repeats them after `Last error:` on a line without "NCCL" in it.
            signal=LogSignal.NCCL_ERROR,
            regex=r"Got completion from peer \S+<\d+>|Connection closed by remote peer \S+<\d+>"
            r"|Call to recv from \S+<\d+> failed"
            r"|^PEER_DEAD: Process \d+ on node \S+",  # NCCL RAS' monitor (`ncclras -m`)
            name="nccl_peer",
        ),
        ("from peer", "remote peer", "call to recv from", "peer_dead"),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.NCCL_ERROR,
            regex=r"NCCL WARN|NCCL error|NCCL failure|nccl(?:InternalError|UnhandledCudaError"
            r"|SystemError|RemoteError|InvalidUsage)"
            r"|NCCL operation \w+\(.*?\) failed"  # XLA's words for an NCCL call's result
            r"|^WARN: .*NET/OFI",  # aws-ofi-nccl's own format, outside NCCL's logger
            name="nccl_error",
        ),
        ("nccl", "net/ofi"),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.CUDA_ERROR,
            regex=r"CUDA error|cudaError\w+|\bCUDA_ERROR_\w+|CUBLAS_STATUS_\w+|CUDNN_STATUS_\w+"
            r"|cuda runtime error|illegal memory access|device-side assert",
            name="cuda_error",
        ),
        ("cuda", "cublas", "cudnn", "illegal memory", "device-side"),
    ),
    Builtin(
        PatternSpec(
            # What the XLA runtime raised that no signal above names (its status code says what:
            # INTERNAL, FAILED_PRECONDITION, …), and PJRT's own report of a failed execution.
            signal=LogSignal.XLA_ERROR,
            regex=r"\b(?:Xla|Jax)RuntimeError\b|Execution of replica \d+ failed"
            r"|Failed to execute XLA Runtime executable",
            name="xla_error",
        ),
        ("runtimeerror", "execution of replica", "xla runtime"),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.NATIVE_CRASH,
            regex=r"Segmentation fault|\bSIG(?:SEGV|BUS|ILL|FPE|ABRT)\b|Fatal Python error"
            r"|\bBus error\b|\(core dumped\)|exited on signal \d+|Caught signal \d+"
            r"|\bexitcode\s*:\s*-(?:4|6|7|8|11)\b"
            r"|\bexits with return code = -(?:4|6|7|8|11)\b"  # DeepSpeed's launcher
            r"|\bJob entrypoint command failed with exit code -(?:4|6|7|8|11)\b",  # Ray's jobs
            name="native_crash",
        ),
        (
            "segmentation",
            "sig",
            "fatal python",
            "bus error",
            "core dumped",
            "exitcode",
            "return code",
            "exit code",
        ),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.WORKER_FAILED,
            regex=r"ChildFailedError|\bfailed \(exitcode: -?\d+\) local_rank"
            r"|^\s*exitcode\s*: -?\d+ \(pid"
            r"|Signal \d+ \(SIG\w+\) received by PID|\] Worker group FAILED\b"
            r"|srun: error: \S+: tasks? [\d,-]+: (?:Exited with exit code|Killed|Terminated)"
            r"|Primary job\s+terminated normally, but \d+ process"
            r"|\b(?:RayTaskError|RayActorError|ActorDiedError|TrainingFailedError)\b"
            r"|\] \[.*\] exits with return code = -?\d+$"  # DeepSpeed's launcher
            # Ray's job supervisor, and `ray job submit` waiting on the job
            r"|\bJob entrypoint command failed with exit code\b|^Job '[^']+' failed$"
            r"|\bThe actor died unexpectedly before finishing this task",
            name="worker_failed",
        ),
        (
            "return code",
            "failed",
            "exitcode",
            "received by pid",
            "srun: error",
            "primary job",
            "raytaskerror",
            "rayactorerror",
            "actordiederror",
            "exit code",
            "actor died",
        ),
    ),
    Builtin(
        PatternSpec(
            signal=LogSignal.TRACEBACK,
            regex=r"^Traceback \(most recent call last\):",
            name="traceback",
        ),
        ("traceback",),
    ),
)


@dataclass(frozen=True)
class Pattern:
    signal: LogSignal
    name: str


JOB_MARKER = Pattern(LogSignal.TRAINING_COMPLETE, "job_marker")


class Matcher:
    """Custom patterns first (the user knows their job), then the built-ins.

    A job that declares its own completion marker is complete when a line contains it, and
    only then: the built-in completion patterns do not apply to it.
    """

    def __init__(self, custom: Iterable[PatternSpec], *, defaults: bool = True) -> None:
        self.custom = [
            (re.compile(s.regex), Pattern(s.signal, s.name or s.signal.value.lower()))
            for s in custom
        ]
        builtins = DEFAULT_PATTERNS if defaults else ()
        self.builtins = [
            (re.compile(b.spec.regex), b.keywords, Pattern(b.spec.signal, b.spec.name or ""))
            for b in builtins
        ]
        keywords = sorted({k for b in builtins for k in b.keywords}, key=len, reverse=True)
        self._any_keyword = re.compile("|".join(map(re.escape, keywords)) or r"(?!)")

    def match(self, body: str, *, completion_marker: str | None = None) -> Pattern | None:
        """The first pattern matching `body` (a line after its launcher prefixes)."""
        for regex, pattern in self.custom:
            if regex.search(body):
                return pattern
        if completion_marker is not None and completion_marker in body:
            return JOB_MARKER
        lowered = body.lower()
        if self._any_keyword.search(lowered) is None:
            return None
        for regex, keywords, pattern in self.builtins:
            if completion_marker is not None and pattern.signal is LogSignal.TRAINING_COMPLETE:
                continue
            if any(k in lowered for k in keywords) and regex.search(body):
                return pattern
        return None
