"""What a handler gets besides its trigger: the adapter, the notifier (and the webhook for
tickets), settings, an outbox, and where fleet baselines are read."""

from __future__ import annotations

from dataclasses import dataclass, field

from actions.adapters.base import SchedulerAdapter
from actions.benchmark.baseline import BaselineSource, no_history
from actions.settings import ActionsSettings
from actions.slack.notifier import Poster
from actions.webhook import LogWebhook, Webhook
from schemas.envelope import Event


@dataclass
class ActionContext:
    adapter: SchedulerAdapter
    notifier: Poster
    settings: ActionsSettings
    incident: str
    dry_run: bool = False
    # Events the handler produced (e.g. BenchmarkCompleted); emitted only if the action succeeds.
    outbox: list[Event] = field(default_factory=list)
    forced: str | None = None  # an operator's command past a breaker: what the breaker said
    webhook: Webhook = field(default_factory=LogWebhook)
    baselines: BaselineSource = no_history  # a GPU model's fleet baseline, from history

    def emit(self, event: Event) -> None:
        self.outbox.append(event)
