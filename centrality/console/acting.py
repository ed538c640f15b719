"""Commands from the page: the CLI's own (`centrality.client`), signed here with the key of
the person who runs the console, so they carry that person's authority and audit trail.

Before a command is sent, the page shows what it will do and what the action worker's circuit
breaker would say, as far as the status and the breaker's settings here tell (the worker
decides on its own ledger: an estimate, said as one).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from actions.settings import ActionsSettings
from centrality.client import WAIT_S as CLIENT_WAIT_S
from centrality.client import Fleet as Client
from centrality.outcome import Outcome
from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.events.status import OUT_OF_SERVICE
from schemas.runtime.fleet import Fleet

Verb = Literal["quarantine", "release", "benchmark", "requeue", "cancel"]
NODE_VERBS = ("quarantine", "release", "benchmark")
# Drained by Centrality or an operator (a benchmark runs only there); a node down or silent is
# out of service but not drained.
DRAINED = OUT_OF_SERVICE - {"down", "unreachable"}
WAIT_S = {"benchmark": 1200.0}  # as the CLI waits; any other command: the client's default


class Refused(ValueError):
    """A command that is not sent: unknown subjects, no reason, a read-only console."""


@dataclass(frozen=True)
class Order:
    verb: Verb
    targets: tuple[str, ...]  # nodes, or the one job
    reason: str
    force: bool = False
    from_scratch: bool = False

    @classmethod
    def parse(cls, doc: dict[str, Any], *, reason_required: bool = True) -> Order:
        """`reason_required`: False for a preview, shown while the reason is being written."""
        verb = doc.get("verb")
        if verb not in get_args(Verb):
            raise Refused(f"unknown command {verb!r}")
        targets = tuple(str(t) for t in doc.get("targets") or () if str(t).strip())
        reason = str(doc.get("reason") or "").strip()
        if not targets:
            raise Refused("name at least one node or job")
        if verb not in NODE_VERBS and len(targets) != 1:
            raise Refused(f"{verb} takes one job")
        if not reason and reason_required:
            raise Refused("a reason is required: it is recorded, and shown to people")
        force, scratch = bool(doc.get("force")), bool(doc.get("from_scratch"))
        return cls(cast(Verb, verb), targets, reason, force, scratch)

    @property
    def said(self) -> str:
        return f"{self.verb} {' '.join(self.targets)}"


def _nodes(order: Order, fleet: Fleet) -> list[NodeStatusChanged]:
    found = [fleet.nodes.get(n) for n in order.targets]
    missing = [n for n, s in zip(order.targets, found, strict=True) if s is None]
    if missing:
        raise Refused(f"unknown node(s): {', '.join(missing)}")
    statuses = [s for s in found if s is not None]
    if len({s.cluster for s in statuses}) > 1:
        raise Refused("those nodes are in several clusters: one command per cluster")
    return statuses


def _job(order: Order, fleet: Fleet) -> JobStatusChanged:
    status = fleet.jobs.get(order.targets[0])
    if status is None:
        raise Refused(f"unknown job: {order.targets[0]}")
    return status


def preview(order: Order, fleet: Fleet, settings: ActionsSettings) -> dict[str, str]:
    """What the command will do, and what the breaker would say, in words."""
    if order.verb in NODE_VERBS:
        statuses = _nodes(order, fleet)
        what, breaker = _on_nodes(order, statuses, fleet, settings)
    else:
        what, breaker = _on_job(order, _job(order, fleet), settings)
    if order.force:
        breaker += " Forced: the breaker is passed, and the result says so."
    return {"what": what, "breaker": breaker}


def _on_nodes(
    order: Order, statuses: list[NodeStatusChanged], fleet: Fleet, settings: ActionsSettings
) -> tuple[str, str]:
    cluster = statuses[0].cluster
    named = ", ".join(order.targets)
    if order.verb == "release":
        return (
            f"Return {named} ({cluster}) to service (resume, untaint), whatever took them out; "
            "any story they are in ends.",
            "No breaker guards a release.",
        )
    if order.verb == "benchmark":
        undrained = [s.subject for s in statuses if s.payload.state not in DRAINED]
        said = (
            f"The breaker refuses it: {', '.join(undrained)} not drained (a benchmark runs "
            "only on drained nodes)."
            if undrained
            else "The breaker lets it run: every node named is drained."
        )
        return f"Benchmark {named} ({cluster}) and record the verdict.", said
    members = [s for s in fleet.nodes.values() if s.cluster == cluster]
    size = settings.fleet_size.get(cluster, len(members))
    # What the breaker counts: drains done, and asked for (a drain under way may have been done).
    counted = DRAINED | {"draining"}
    out = {s.subject for s in members if s.payload.state in counted} | set(order.targets)
    share, window_s = settings.quarantine_max_share, settings.quarantine_window_s
    verdict = "would refuse it" if size and len(out) > share * size else "would let it through"
    return (
        f"Drain and taint {named} ({cluster}); they stay quarantined until an operator "
        "releases them.",
        f"The breaker {verdict}: {len(out)} of {size} nodes of {cluster} out with these "
        f"(limit {share:.0%} drained within {window_s:g} s; the worker counts its own ledger).",
    )


def _on_job(order: Order, status: JobStatusChanged, settings: ActionsSettings) -> tuple[str, str]:
    p = status.payload
    if order.verb == "cancel":
        return f"Cancel job {status.subject} ({status.cluster}).", "No breaker guards a cancel."
    start = "from scratch"
    if not order.from_scratch and p.checkpoint_step is not None:
        start = f"from its checkpoint at step {p.checkpoint_step} ({p.checkpoint_uri})"
    left = "" if p.restarts_left is None else f"; its restart rule has {p.restarts_left} left"
    return (
        f"Requeue job {status.subject} ({status.cluster}) {start}.",
        f"The breaker allows {settings.restart_max_per_window} restarts of a job within "
        f"{settings.restart_window_s:g} s; it has used {p.restarts_used}{left}.",
    )


async def carry_out(order: Order, client: Client) -> Outcome:
    """Sends it as the CLI does (the client checks the subjects again and signs), and waits for
    the action worker's answer; `NoOutcome` when none came in time."""
    wait_s = WAIT_S.get(order.verb, CLIENT_WAIT_S)
    options: dict[str, Any] = {"force": order.force, "wait_s": wait_s}
    if order.verb in NODE_VERBS:
        send = getattr(client, order.verb)
        return await asyncio.to_thread(send, order.targets, order.reason, **options)
    if order.verb == "requeue":
        options["from_scratch"] = order.from_scratch
        return await asyncio.to_thread(client.requeue, order.targets[0], order.reason, **options)
    options.pop("force")
    return await asyncio.to_thread(client.cancel, order.targets[0], order.reason, **options)
