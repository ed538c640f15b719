"""A rule's own signals per subject: kept in the subject's state (stored and restored with it),
bounded, keyed, forgotten on demand, and replayed like the rest."""

from __future__ import annotations

from datetime import timedelta

import pytest

from schemas.events import LogSignalDetected, Trigger
from streams.analysis.replay.rerun import rerun
from streams.rules import rule
from streams.rules.signals import Signals
from streams.state.training_job import TrainingJob
from streams.testing import JOB, T0, Story, log_signal

MODULE = """
from schemas.events import Notify
from schemas.events import LogSignalDetected, Trigger
from streams.rules import RuleConfig, rule


class Oom(RuleConfig):
    times: int = 3


@rule("ooms_per_node", on=(LogSignalDetected,), config=Oom, keep_signals=4)
def ooms_per_node(job, event, config, signals):
    if event.payload.signal != "OOM":
        return
    signals.record(event, key=event.payload.node or "")
    if signals.count(3600, key=event.payload.node) >= config.times:
        signals.forget(event.payload.node)  # told: count that node afresh
        yield Notify.decide(
            cause=event, source="rule/ooms_per_node", rule="ooms_per_node",
            window=str(event.event_id), reason=f"OOMs on {event.payload.node}",
            title="OOMs", incident=job.job_id,
        )
"""


@pytest.fixture(scope="module")
def rules(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    where = tmp_path_factory.mktemp("rules")
    (where / "signals_rules.py").write_text(MODULE)
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(where))
        Story(rules=["signals_rules"])  # imported (registered) while on the path
    return ["signals_rules"]


def oom(node: str, at_s: float) -> LogSignalDetected:
    return log_signal(signal="OOM", at_s=at_s, node=node)


def told(decided: list[Trigger]) -> int:
    return sum(1 for t in decided if t.payload.rule == "ooms_per_node")


def test_signals_are_counted_per_key_and_forgotten_once_told(rules: list[str]) -> None:
    story = Story(rules=rules)
    events = [oom("n1", 0), oom("n2", 10), oom("n1", 20), oom("n1", 30), oom("n1", 40)]
    assert [told(story.tell(e)) for e in events] == [0, 0, 0, 1, 0]
    kept = story.jobs[JOB].rule_memo.signals["ooms_per_node"]
    assert [(s.key, s.at - T0) for s in kept] == [
        ("n2", timedelta(seconds=10)),
        ("n1", timedelta(seconds=40)),
    ]


def test_signals_are_stored_and_restored_with_the_state(rules: list[str]) -> None:
    story = Story(rules=rules)
    story.tell(oom("n1", 0), oom("n1", 10))
    stored = story.jobs[JOB].model_dump_json()
    restored = Story(rules=rules)  # a worker that restored the table from its changelog
    restored.brain.jobs[JOB] = TrainingJob.model_validate_json(stored)
    assert told(restored.tell(oom("n1", 20))) == 1


def test_replay_decides_the_same_from_the_same_history(rules: list[str]) -> None:
    history = [oom("n1", t) for t in (0, 5, 10, 100, 200, 300)]
    first, again = (rerun(history, Story(rules=rules).brain, 5.0) for _ in range(2))
    assert told(first) == 2 and [t.event_id for t in first] == [t.event_id for t in again]


def test_kept_signals_are_bounded_by_count_and_age() -> None:
    kept = Signals((), T0, keep=3)
    for at_s in range(5):
        kept.record(log_signal(at_s=at_s))
    assert [s.at for s in kept.kept] == [T0 + timedelta(seconds=s) for s in (2, 3, 4)]
    late = Signals(kept.kept, T0 + timedelta(days=8), keep=3)
    late.record(log_signal(at_s=8 * 86400.0))
    assert len(late.kept) == 1 and late.count(60) == 1 and late.changed
    same = Signals(late.kept, T0 + timedelta(days=8), keep=3)
    [only] = late.kept
    same.record(log_signal(at_s=8 * 86400.0).model_copy(update={"event_id": only.event_id}))
    assert not same.changed  # an event already kept (redelivered, replayed) changes nothing


def test_keep_signals_is_bounded_at_registration() -> None:
    with pytest.raises(ValueError, match=r"keep_signals must be within 0\.\.256"):
        rule("too_much_memory", on=(LogSignalDetected,), keep_signals=10_000)
