"""The remediation ladder's actions through the dispatcher (no Kafka), on the recording adapter:
each rung only on a drained node, the budgets that bound it (per node and window, per cluster at
once) read from the ledger, escalation's marks and messages, restarts off implicated nodes."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from pydantic import SecretStr

from actions.adapters.kubernetes_specs import recreated
from actions.adapters.memory import InMemoryAdapter
from actions.dispatch import Dispatcher
from actions.ledger import Ledger
from actions.settings import ActionsSettings
from actions.webhook import HttpWebhook, WebhookSettings
from centrality.slack_fake import SlackFake
from centrality.webhook_stub import WebhookStub
from schemas.envelope import Event
from schemas.events import (
    ActionFailed,
    ActionSucceeded,
    EscalateNodes,
    RebootNodes,
    ResetGpus,
    Trigger,
)
from streams.testing import T0
from tests.support.slack import notifier_for
from tests.support.triggers import quarantine, release, restart, rung

HARDWARE = "centrality.io/hardware-service"


class Rig:
    """A dispatcher on the recording adapter, with a clock the test moves."""

    def __init__(self, slack: SlackFake, webhook: WebhookStub, **settings: Any) -> None:
        self.adapter = InMemoryAdapter()
        self.events: list[Event] = []
        self.now = T0
        config = ActionsSettings(backoff_scale=0.001, fleet_size={"test": 10}, **settings)
        notifier = notifier_for(slack)
        self.dispatcher = Dispatcher(
            config,
            self.adapter,
            notifier,
            Ledger(),
            self._emit,
            clock=lambda: self.now,
            webhook=HttpWebhook(WebhookSettings(url=webhook.url, token=SecretStr("t0k"))),
        )

    async def _emit(self, event: Event) -> None:
        self.events.append(event)

    async def handle(self, *triggers: Trigger, after: timedelta = timedelta(minutes=1)) -> None:
        for trigger in triggers:
            self.now += after
            await self.dispatcher.handle(trigger)
        await asyncio.wait_for(self.dispatcher.notifier.join(), 30)

    def outcome(self, trigger: Trigger) -> ActionSucceeded | ActionFailed:
        [done] = [
            e
            for e in self.events
            if isinstance(e, ActionSucceeded | ActionFailed)
            and e.payload.trigger_id == trigger.event_id
        ]
        return done


def reboot(node: str, window: str) -> Trigger:
    return rung(RebootNodes, (node,), window=window)


async def test_a_reset_runs_on_drained_nodes_only(slack: SlackFake) -> None:
    with WebhookStub() as hook:
        rig = Rig(slack, hook)
        await rig.handle(quarantine(("n1",)))
        reset = rung(ResetGpus, ("n1",), gpus=(3,))
        stray = rung(ResetGpus, ("n2",), window="w2")
        await rig.handle(reset, stray)
    assert rig.adapter.reset == [("n1", (3,))]
    done = rig.outcome(reset)
    assert isinstance(done, ActionSucceeded)
    assert done.payload.detail["reset"] == {
        "n1": [{"gpu": 3, "reset": True, "pids": [], "error": None}]
    }
    refused = rig.outcome(stray)
    assert isinstance(refused, ActionFailed) and refused.payload.refused
    assert refused.payload.error == (
        "circuit breaker: n2 not drained: a GPU reset runs only on drained nodes"
    )


async def test_a_reboot_budget_stops_a_third_reboot_within_its_window(slack: SlackFake) -> None:
    with WebhookStub() as hook:
        rig = Rig(slack, hook)
        await rig.handle(quarantine(("n1",)))
        first, second, third = (reboot("n1", w) for w in ("a", "b", "c"))
        await rig.handle(first, second, third)
        assert rig.adapter.rebooted == ["n1", "n1"]
        refused = rig.outcome(third)
        assert isinstance(refused, ActionFailed) and refused.payload.refused
        assert refused.payload.error == (
            "circuit breaker: n1 was rebooted 2 times within 86400s (limit 2)"
        )
        await rig.handle(reboot("n1", "d"), after=timedelta(hours=24))  # the window moved on
    assert rig.adapter.rebooted == ["n1", "n1", "n1"]


async def test_at_most_so_many_nodes_are_in_remediation_at_once(slack: SlackFake) -> None:
    with WebhookStub() as hook:
        rig = Rig(slack, hook, remediation_max_nodes=1, quarantine_max_share=0.5)
        await rig.handle(quarantine(("n1", "n2")))
        await rig.handle(reboot("n1", "a"))
        blocked = reboot("n2", "b")
        await rig.handle(blocked)
        refused = rig.outcome(blocked)
        assert isinstance(refused, ActionFailed)
        assert "2 nodes of test would be in remediation at once (limit 1; already: n1)" in (
            refused.payload.error
        )
        await rig.handle(rung(EscalateNodes, ("n1",)))  # n1 leaves the ladder for a person
        await rig.handle(reboot("n2", "c"))
    assert rig.adapter.rebooted == ["n1", "n2"]


async def test_an_escalation_keeps_the_node_drained_marks_it_and_files_a_ticket(
    slack: SlackFake,
) -> None:
    escalate = rung(
        EscalateNodes,
        ("n1",),
        tried=("reboot: back", "validate: fail (180 TFLOP/s slowest GPU)"),
        xids=(79,),
        benchmarks=("fail (180 TFLOP/s slowest GPU)",),
    )
    told_serials = rung(EscalateNodes, ("n2",), window="w2", serials=("1653724025363",))
    with WebhookStub() as hook:
        rig = Rig(slack, hook)
        await rig.handle(quarantine(("n1",)), escalate, told_serials)
    assert rig.adapter.drained["n1"].startswith("centrality: hardware service: EscalateNodes")
    assert rig.adapter.taints["n1"] == {"centrality.io/quarantined", HARDWARE}
    ticket, other = hook.documents
    assert other["serials"] == {"n2": [{"gpu": 0, "serial": "1653724025363"}]}  # the agent's
    assert hook.authorizations == ["Bearer t0k"] * 2
    assert ticket["kind"] == "centrality.escalation" and ticket["nodes"] == ["n1"]
    assert ticket["tried"] == ["reboot: back", "validate: fail (180 TFLOP/s slowest GPU)"]
    assert ticket["xids"] == [79]
    serials = ticket["serials"]["n1"]  # no agent reported them: read on the node
    assert len(serials) == 8 and serials[0]["serial"].startswith("165372")
    [posted, _] = [p for p in slack.posts if "hardware service needed" in p["text"]]
    shown = str(posted["blocks"])
    assert "reboot: back" in shown and "GPU 0 serial 165372" in shown and "*XIDs:* 79" in shown
    # Released after the repair: both marks go.
    await rig.handle(release(("n1",), window="after-repair"))
    assert rig.adapter.taints["n1"] == set() and "n1" not in rig.adapter.drained


async def test_a_webhook_down_fails_the_escalation_for_a_retry(slack: SlackFake) -> None:
    with WebhookStub(down=True) as hook:
        rig = Rig(slack, hook)
        escalate = rung(EscalateNodes, ("n1",))
        await rig.handle(escalate)
    failed = rig.outcome(escalate)
    assert isinstance(failed, ActionFailed) and not failed.payload.permanent
    assert failed.payload.error == "TemporaryError: webhook answered 503"
    assert not any("hardware service needed" in p["text"] for p in slack.posts)


async def test_a_restart_avoids_the_nodes_its_decision_names(slack: SlackFake) -> None:
    with WebhookStub() as hook:
        rig = Rig(slack, hook, dry_run=True)
        planned = restart(exclude_nodes=("n2",))
        await rig.handle(planned)
        rig.dispatcher.settings = ActionsSettings(backoff_scale=0.001)
        await rig.handle(restart(window="attempt-2", exclude_nodes=("n2",)))
    assert rig.adapter.excluded == {"slurm/test/42": ["n2"]}
    plan = rig.outcome(planned).payload.detail["planned"]  # type: ignore[union-attr]
    assert plan[0]["exclude"] == ["n2"]


def test_a_recreated_kubernetes_job_is_kept_off_excluded_nodes() -> None:
    term = {"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["h100"]}]}
    job = {
        "kind": "Job",
        "metadata": {"name": "train"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "t"}],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [term, {"matchFields": []}]
                            }
                        }
                    },
                }
            }
        },
    }
    new = recreated(job, None, ("n2", "n1"))
    terms = new["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]["nodeSelectorTerms"]
    avoid = {"key": "metadata.name", "operator": "NotIn", "values": ["n1", "n2"]}
    assert terms == [{**term, "matchFields": [avoid]}, {"matchFields": [avoid]}]
    plain = recreated({"kind": "Job", "spec": {"template": {"spec": {}}}}, None, ("n1",))
    assert plain["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ] == {"nodeSelectorTerms": [{"matchFields": [{**avoid, "values": ["n1"]}]}]}
    assert "affinity" not in recreated(job, None)["spec"]["template"]["spec"]["containers"][0]
