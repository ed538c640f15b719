"""The control loop in one process, on a real Slurm: the Slurm watcher, the pure brain, the
action dispatcher with the Slurm adapter, and a clock — Kafka aside, as `centrality watch slurm`,
`streams` and `actions` run it. What the watcher sees goes to the brain, what the brain decides
goes to the dispatcher, what the dispatcher reports goes back to the brain; the test decides
when a rebooting node comes back (`reboot`).

    loop = ControlLoop(slurm_cluster, tmp_path, rules={...}, actions={...})
    await loop.run(lambda: ..., timeout_s=120, start=[xid_event])
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from actions.adapters.settings import SlurmSettings
from actions.adapters.slurm import SlurmAdapter
from actions.dispatch import Dispatcher
from actions.ledger import Ledger
from actions.settings import ActionsSettings
from actions.slack.notifier import log_notifier
from actions.webhook import HttpWebhook, WebhookSettings
from collectors.sink import RecordingSink
from collectors.watchers.slurm.settings import SlurmWatchSettings
from collectors.watchers.slurm.watcher import SlurmWatcher
from schemas.envelope import Event, utcnow
from schemas.events import Trigger
from streams.brain.process import Brain
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from tests.support.slurm import SlurmCluster

SUPPORT = Path(__file__).resolve().parent


class ControlLoop:
    def __init__(
        self,
        cluster: SlurmCluster,
        tmp: Path,
        *,
        rules: dict[str, Any],
        actions: dict[str, Any] | None = None,
        webhook: str | None = None,
    ) -> None:
        self.cluster = cluster
        self.brain = Brain(RuleEngine.load(StreamsSettings().rule_modules, rules))
        self.sink = RecordingSink()
        self.watcher = SlurmWatcher(
            SlurmWatchSettings(cluster=cluster.name, conf=cluster.conf, state_file=tmp / "w.json"),
            self.sink,
        )
        self.adapter = SlurmAdapter(
            SlurmSettings(cluster=cluster.name, conf=cluster.conf, output_dir=cluster.output_dir)
        )
        settings = ActionsSettings(
            fleet_size={cluster.name: len(cluster.node_names)},
            quarantine_max_share=0.7,
            backoff_scale=0.01,
            benchmark_command=[sys.executable, str(SUPPORT / "fake_benchmark.py")],
            benchmark_timeout_s=60,
            gpu_reset_command=[sys.executable, "-m", "actions.remediation.gpu_reset", "--json"],
            gpu_inventory_command=[
                sys.executable, "-m", "actions.remediation.gpu_inventory", "--json"
            ],
            **(actions or {}),
        )  # fmt: skip
        hook = HttpWebhook(WebhookSettings(url=webhook)) if webhook else None
        self.dispatcher = Dispatcher(
            settings, self.adapter, log_notifier(), Ledger(), self._emit, webhook=hook
        )
        self.seen: list[Event] = []  # everything, in the order the brain got it
        self.decided: list[Trigger] = []
        self._inbox: list[Event] = []
        self._acting: set[asyncio.Task[None]] = set()
        self.reboot: Callable[[str], bool] = lambda node: True  # boot a rebooting node now?
        # Per node: the reboots it came back from (the cluster is the session's: earlier too).
        self._booted: dict[str, int] = dict(Counter(cluster.reboots()))

    async def _emit(self, event: Event) -> None:
        self._inbox.append(event)

    async def run(
        self, done: Callable[[], bool], timeout_s: float, start: Iterable[Event] = ()
    ) -> None:
        self._inbox += start
        deadline = time.monotonic() + timeout_s
        try:
            while not done():
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not done within {timeout_s:g} s; decided {self.types()}")
                await self.step()
                await asyncio.sleep(0.3)
        finally:
            if self._acting:  # what is under way finishes: the cluster is the session's
                await asyncio.wait(self._acting, timeout=120)

    async def step(self) -> None:
        await self.watcher.poll_once()
        self._inbox += self.sink.events
        self.sink.events.clear()
        ran = self.cluster.reboots()
        for node in self.cluster.rebooting():
            # Back only once its slurmd ran the RebootProgram, which it does a moment after
            # slurmctld shows the reboot issued: a slurmd restarted before never runs it.
            if ran.count(node) > self._booted.get(node, 0) and self.reboot(node):
                self._booted[node] = ran.count(node)
                self.cluster.boot(node)
        triggers = self.brain.tick(utcnow())
        while self._inbox:
            event, *self._inbox = self._inbox
            self.seen.append(event)
            triggers += self.brain.handle(event)
        for trigger in triggers:  # acted on beside the watcher, as the worker does
            self.decided.append(trigger)
            task = asyncio.create_task(self.dispatcher.handle(trigger))
            self._acting.add(task)
            task.add_done_callback(self._acting.discard)

    def types(self, node: str | None = None) -> list[str]:
        return [
            t.type for t in self.decided if node is None or node in getattr(t.payload, "nodes", ())
        ]

    def results(self, trigger: Trigger) -> list[Event]:
        return [e for e in self.seen if getattr(e.payload, "trigger_id", None) == trigger.event_id]
