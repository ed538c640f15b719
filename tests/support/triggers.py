"""Triggers for action tests, built the way rules build them (deterministic ids)."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from schemas.codec import encode
from schemas.events import (
    EscalateNodes,
    JobExited,
    Notify,
    QuarantineBatch,
    QuarantineNodes,
    RebootNodes,
    ReleaseNodes,
    ResetGpus,
    RestartJob,
    RunBenchmark,
    Trigger,
)
from schemas.signing import SigningSettings, signed_headers
from tests.factories import exited

# The key test workers trust (`CENTRALITY_TRIGGER_KEY` in `worker_env`) and test triggers carry.
TRIGGER_KEY = SecretStr("centrality-test-trigger-key")
SIGNING = SigningSettings(key=TRIGGER_KEY)


def signature_of(trigger: Trigger, key: SecretStr = TRIGGER_KEY) -> list[tuple[str, bytes]]:
    return signed_headers(encode(trigger), key)


def cause(subject: str = "slurm/test/42", cluster: str = "test") -> JobExited:
    return exited(subject=subject).model_copy(update={"cluster": cluster})


def restart(subject: str = "slurm/test/42", window: str = "attempt-1", **kw: Any) -> RestartJob:
    return RestartJob.decide(
        cause=cause(subject, kw.pop("cluster", "test")),
        source="test",
        rule="restart_incomplete_exit",
        window=window,
        reason="exited without Training Complete",
        checkpoint_uri="s3://ckpt/step-1200",
        attempt=1,
        **kw,
    )


def quarantine(
    nodes: tuple[str, ...], window: str = "w1", cluster: str = "test"
) -> QuarantineNodes:
    return QuarantineNodes.decide(
        cause=cause(cluster=cluster),
        source="test",
        rule="repeat_failures",
        window=window,
        reason="5 failures on the same nodes",
        nodes=nodes,
    )


def suspect(node: str, most_out: int, job: str = "slurm/test/42") -> QuarantineNodes:
    """A big job's suspect, as `repeated_failures_on_node_set` decides it: keyed by its node."""
    return QuarantineNodes.decide(
        cause=cause(), subject=node, source="test", rule="repeated_failures_on_node_set",
        window="0/suspect", reason="suspect", nodes=(node,), jobs=(job,),
        batch=QuarantineBatch(name=f"suspects of {job}", most_out=most_out),
    )  # fmt: skip


def benchmark(nodes: tuple[str, ...], window: str = "w1") -> RunBenchmark:
    return RunBenchmark.decide(
        cause=cause(), source="test", rule="repeat_failures", window=window,
        reason="suspect nodes", nodes=nodes,
    )  # fmt: skip


def release(nodes: tuple[str, ...], window: str = "w1") -> ReleaseNodes:
    return ReleaseNodes.decide(
        cause=cause(), source="test", rule="benchmark_verdict", window=window,
        reason="benchmark passed", nodes=nodes,
    )  # fmt: skip


def notify(incident: str, window: str) -> Notify:
    return Notify.decide(
        cause=cause(), source="test", rule="repeat_failures", window=window,
        reason="5 failures", title="Job keeps failing", incident=incident,
    )  # fmt: skip


def rung(
    cls: type[ResetGpus] | type[RebootNodes] | type[EscalateNodes],
    nodes: tuple[str, ...],
    window: str = "w1",
    cluster: str = "test",
    **payload: Any,
) -> Trigger:
    """A step of the remediation ladder, as `streams.rules.ladder` decides it."""
    return cls.decide(
        cause=cause(cluster=cluster), source="test", rule="remediation_ladder", window=window,
        reason=f"{cls.__name__} asked", nodes=nodes, **payload,
    )  # fmt: skip
