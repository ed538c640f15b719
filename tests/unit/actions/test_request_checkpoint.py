"""RequestCheckpoint through the dispatcher onto the recording adapter: the job is sent its
signal once per trigger, a simulator can read what was sent, and schedulers that cannot
deliver a signal say so."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import actions.handlers  # noqa: F401  (registers the built-in handlers)
from actions.adapters.kubernetes import KubernetesAdapter
from actions.adapters.memory import InMemoryAdapter
from actions.adapters.ray import RayAdapter
from actions.adapters.settings import KubernetesSettings
from actions.dispatch import Dispatcher
from actions.errors import PermanentError
from actions.ledger import Ledger
from actions.registry import handler_for, handler_names
from actions.settings import ActionsSettings
from actions.slack.notifier import log_notifier
from schemas.envelope import Event
from schemas.events import ActionFailed, ActionSucceeded, RequestCheckpoint
from tests.support.triggers import cause

JOB = "slurm/test/7"


def rig() -> tuple[Dispatcher, InMemoryAdapter, list[Event]]:
    adapter, events = InMemoryAdapter(), []

    async def emit(event: Event) -> None:
        events.append(event)

    options = ActionsSettings.model_validate({"fleet_size": {"test": 10}})
    return Dispatcher(options, adapter, log_notifier(), Ledger(), emit), adapter, events


def ask(window: str = "q1", **payload: object) -> RequestCheckpoint:
    return RequestCheckpoint.decide(
        cause=cause(), source="test", subject=JOB, rule="move_jobs", window=window,
        reason="node n2 is to be drained", **payload,
    )  # fmt: skip


async def test_the_job_is_sent_its_signal_once_per_trigger() -> None:
    dispatcher, adapter, events = rig()
    for trigger in (ask(), ask(), ask("q2", signal="USR2", nodes=("n2",))):
        await dispatcher.handle(trigger)
    assert adapter.signalled == {JOB: ["USR1", "USR2"]}  # USR1 unless the trigger names one
    done = [e for e in events if isinstance(e, ActionSucceeded)]
    assert [(e.subject, e.payload.action, e.payload.detail["signal"]) for e in done] == [
        (JOB, "request_checkpoint", "USR1"),
        (JOB, "request_checkpoint", "USR2"),
    ]


async def test_a_job_that_cannot_be_signalled_fails_at_once() -> None:
    dispatcher, adapter, events = rig()
    adapter.fail("signal", PermanentError(f"job {JOB} is COMPLETED, not running: no USR1 sent"))
    await dispatcher.handle(ask())
    [failed] = [e for e in events if isinstance(e, ActionFailed)]
    assert "not running" in failed.payload.error
    assert adapter.calls == ["signal"]  # not retried
    assert adapter.signalled == {}


def test_people_read_what_was_asked_of_which_job() -> None:
    spec = handler_for(ask(nodes=("n2",)))
    assert spec is not None and "request_checkpoint" in handler_names()
    assert spec.headline(ask(), succeeded=True) == f"Asked {JOB} for a checkpoint"
    assert spec.headline(ask(), succeeded=False) == f"{JOB} not asked for a checkpoint"


def test_the_signals_file_tells_a_simulator_what_each_job_was_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    file = tmp_path / "signals.json"
    monkeypatch.setenv("CENTRALITY_MEMORY_SIGNALS_FILE", str(file))
    adapter = InMemoryAdapter()
    adapter.signal("slurm/sim/1", signal="USR1")
    adapter.signal("slurm/sim/2", signal="TERM")
    adapter.signal("slurm/sim/1", signal="USR1")
    sent = json.loads(file.read_text())
    assert sent == {"slurm/sim/1": ["USR1", "USR1"], "slurm/sim/2": ["TERM"]}


@pytest.mark.parametrize(
    ("adapter", "job"),
    [
        (lambda: KubernetesAdapter(KubernetesSettings(host="http://127.0.0.1:9")), "k8s/ml/train"),
        (RayAdapter, "ray/raysubmit_1"),
    ],
)
def test_schedulers_without_a_signal_say_what_the_job_can_do_instead(
    adapter: type, job: str
) -> None:
    with pytest.raises(PermanentError, match="checkpoint at its own cadence"):
        adapter().signal(job, signal="USR1")
