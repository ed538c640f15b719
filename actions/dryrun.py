"""Shadow mode: stand-ins for the adapter and the notifier that record calls instead of acting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from actions.adapters.base import RunResult
from actions.ledger import ThreadRef
from actions.slack.message import Message


class Plan:
    """The calls a handler would have made, in order; `ActionSucceeded.detail["planned"]`."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def add(self, call: str, **args: Any) -> dict[str, Any]:
        self.calls.append({"call": call, **args})
        return {"planned": call}


class PlanningAdapter:
    name = "dry-run"

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def requeue(
        self, job_id: str, *, checkpoint_uri: str | None, exclude: Sequence[str] = ()
    ) -> dict[str, Any]:
        avoid = {"exclude": list(exclude)} if exclude else {}
        return self.plan.add("requeue", job_id=job_id, checkpoint_uri=checkpoint_uri, **avoid)

    def cancel(self, job_id: str, *, reason: str) -> dict[str, Any]:
        return self.plan.add("cancel", job_id=job_id, reason=reason)

    def release(self, job_id: str) -> dict[str, Any]:
        return self.plan.add("release", job_id=job_id)

    def signal(self, job_id: str, *, signal: str) -> dict[str, Any]:
        return self.plan.add("signal", job_id=job_id, signal=signal)

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        return self.plan.add("drain", nodes=list(nodes), reason=reason)

    def resume(self, nodes: Sequence[str]) -> dict[str, Any]:
        return self.plan.add("resume", nodes=list(nodes))

    def taint(self, nodes: Sequence[str], *, key: str, reason: str) -> dict[str, Any]:
        return self.plan.add("taint", nodes=list(nodes), key=key, reason=reason)

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]:
        return self.plan.add("untaint", nodes=list(nodes), key=key)

    def reboot(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        return self.plan.add("reboot", nodes=list(nodes), reason=reason)

    def run_on_nodes(
        self,
        nodes: Sequence[str],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout_s: float,
    ) -> RunResult:
        self.plan.add("run_on_nodes", nodes=list(nodes), command=list(command))
        return RunResult(exit_code=0, stdout="")

    def job_logs(self, job_id: str, *, tail_lines: int = 200) -> str:
        self.plan.add("job_logs", job_id=job_id)
        return ""


class PlanningWebhook:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def post(self, document: dict[str, Any]) -> dict[str, Any]:
        return self.plan.add("webhook", document=document)


class PlanningNotifier:
    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.threads: dict[str, ThreadRef] = {}

    def post(self, incident: str, message: Message) -> dict[str, Any]:
        return self.plan.add("notify", incident=incident, text=message.text)
