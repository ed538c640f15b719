"""CancelJob and ReleaseJob through the dispatcher: once per trigger, allowlist honoured."""

from __future__ import annotations

from actions.adapters.memory import InMemoryAdapter
from actions.dispatch import Dispatcher
from actions.ledger import Ledger
from actions.settings import ActionsSettings
from actions.slack.notifier import log_notifier
from schemas.envelope import Event
from schemas.events import ActionFailed, ActionSucceeded, CancelJob, JobExited, ReleaseJob
from tests.factories import exited


def rig(**settings: object) -> tuple[Dispatcher, InMemoryAdapter, list[Event]]:
    adapter, events = InMemoryAdapter(), []

    async def emit(event: Event) -> None:
        events.append(event)

    options = ActionsSettings.model_validate({"fleet_size": {"test": 10}, **settings})
    return Dispatcher(options, adapter, log_notifier(), Ledger(), emit), adapter, events


def cause() -> JobExited:
    return exited("SUCCEEDED", subject="slurm/test/1", at_s=10, exit_code=0)


def release() -> ReleaseJob:
    return ReleaseJob.decide(
        cause=cause(), source="t", subject="slurm/test/2", rule="completion_hooks",
        window="slurm/test/1/attempt-1", reason="hook", after="slurm/test/1",
    )  # fmt: skip


def cancel() -> CancelJob:
    return CancelJob.decide(
        cause=cause(), source="t", subject="slurm/test/3", rule="idle_allocation",
        window="attempt-1/idle/cancel", reason="idle 60 min",
    )  # fmt: skip


async def test_release_and_cancel_act_once_on_the_job_they_name() -> None:
    dispatcher, adapter, events = rig()
    for trigger in (release(), release(), cancel(), cancel()):
        await dispatcher.handle(trigger)
    assert adapter.released == ["slurm/test/2"]
    assert adapter.cancelled == {"slurm/test/3": "centrality: idle 60 min"}
    done = [e for e in events if isinstance(e, ActionSucceeded)]
    assert [(e.subject, e.payload.action) for e in done] == [
        ("slurm/test/2", "release_job"),
        ("slurm/test/3", "cancel_job"),
    ]
    assert done[0].payload.detail["after"] == "slurm/test/1"


async def test_a_cluster_that_does_not_allow_cancel_is_refused() -> None:
    dispatcher, adapter, events = rig(allow={"test": ["release_job", "notify"]})
    await dispatcher.handle(cancel())
    assert adapter.cancelled == {}
    [refused] = [e for e in events if isinstance(e, ActionFailed)]
    assert "not enabled" in refused.payload.error
