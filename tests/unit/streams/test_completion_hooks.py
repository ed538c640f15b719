"""Completion hooks: a finished job releases the held jobs it declared, once per attempt."""

from __future__ import annotations

from schemas.events import JobSubmitted, ReleaseJob
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.testing import JOB, envelope
from tests.factories import exited


def brain() -> Brain:
    return Brain(RuleEngine.load(StreamsSettings().rule_modules, {}))


def submitted(*hooks: tuple[str, str]) -> JobSubmitted:
    return JobSubmitted(
        **envelope(JOB, 0),
        payload={"hooks": [{"when": w, "release": r} for w, r in hooks]},
    )


def releases(b: Brain, *events: object) -> list[tuple[str, str]]:
    out = []
    for e in events:
        out += [(t.subject, t.payload.after) for t in b.handle(e) if isinstance(t, ReleaseJob)]  # type: ignore[arg-type, attr-defined]
    return out


def test_a_successful_exit_releases_the_declared_followups_once() -> None:
    b = brain()
    hooks = (("succeeded", "slurm/test/eval"), ("failed", "slurm/test/cleanup"))
    done = exited("SUCCEEDED", exit_code=0, at_s=60)
    assert releases(b, submitted(*hooks), done, done) == [("slurm/test/eval", JOB)]


def test_failed_and_ended_hooks_fire_on_each_failed_attempt_but_not_on_preemption() -> None:
    b = brain()
    hooks = (("failed", "slurm/test/cleanup"), ("ended", "slurm/test/report"))
    got = releases(
        b,
        submitted(*hooks),
        exited("PREEMPTED", attempt=1, at_s=10),
        exited("FAILED", attempt=2, at_s=20),
        exited("FAILED", attempt=3, at_s=30),
    )
    assert got == [("slurm/test/cleanup", JOB), ("slurm/test/report", JOB)] * 2


def test_the_release_is_keyed_by_the_released_job_with_a_deterministic_id() -> None:
    def decided() -> list[ReleaseJob]:
        b = brain()
        b.handle(submitted(("ended", "k8s/ml/eval")))
        return [t for t in b.handle(exited("FAILED")) if isinstance(t, ReleaseJob)]

    first, again = decided(), decided()
    assert [t.event_id for t in first] == [t.event_id for t in again] and len(first) == 1
    assert first[0].subject == "k8s/ml/eval" and first[0].key == b"k8s/ml/eval"


def test_without_a_declaration_nothing_is_released() -> None:
    assert releases(brain(), exited("SUCCEEDED", exit_code=0)) == []
