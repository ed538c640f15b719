"""Centrality from Python: the fleet as the streams app sees it, and operators' commands.

    from centrality.client import Fleet

    fleet = Fleet()                       # CENTRALITY_KAFKA_*, CENTRALITY_OPERATOR_KEY_FILE
    fleet.nodes(state="quarantined")      # what `centrality nodes --state quarantined` lists
    fleet.nodes(out_of_service=True, by="operator/*")
    job = fleet.job("slurm/a/4242")
    job.status().payload.attempt
    job.requeue("bad checkpoint", from_scratch=True)
    job.wait({"RUNNING"}, timeout_s=600)
    fleet.node("gpu-node-06").release("GPU replaced").ok

Statuses are the streams app's own (`NodeStatusChanged`/`JobStatusChanged`: `.payload.state`,
`.payload.by`, `.payload.why`, …); states are theirs too, one name each: an unknown one raises
ValueError naming the valid ones (`wait` too, at once). Commands are signed with the operator's
key and return their `Outcome` (what the action worker did, or why not); one without a reason
raises ValueError. Every call is synchronous, in a script or a notebook alike (a notebook's
running loop is left alone: the call runs on a loop of its own).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Coroutine, Iterable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any, Literal, TypeVar

from centrality.commands import checked_reason, command
from centrality.fleet import (
    FleetReader,
    Kind,
    checked_states,
    did_you_mean,
    matcher,
    out_of_service_states,
    read_fleet,
    selected,
)
from centrality.outcome import Outcome, OutcomeWatch
from schemas.codec import encode
from schemas.envelope import Event, utcnow
from schemas.events import (
    CancelJob,
    JobStatusChanged,
    NodeStatusChanged,
    QuarantineNodes,
    ReleaseNodes,
    RestartJob,
    RunBenchmark,
    Trigger,
)
from schemas.events.incidents import IncidentEvent
from schemas.operators import OperatorKey, OperatorSettings
from schemas.runtime import kafka_clients
from schemas.runtime.fleet import read_incidents
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.state.internal import node_set_key

T = TypeVar("T")
WAIT_S = 30.0  # how long a command waits for its outcome by default


class UnknownSubject(LookupError):
    """A node or job the streams app does not know (in that cluster)."""


class NoOutcome(TimeoutError):
    """A command was sent, and nothing answered it in time (is an action worker running?)."""


class WaitTimeout(TimeoutError):
    """`wait` ran out of time; `state` is the state reached (None: the subject is not known)."""

    def __init__(self, message: str, state: str | None) -> None:
        super().__init__(message)
        self.state = state


def run(coro: Coroutine[Any, Any, T]) -> T:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a notebook's loop is running
        return pool.submit(asyncio.run, coro).result()


class Fleet:
    def __init__(
        self, kafka: KafkaSettings | None = None, operator: OperatorKey | None = None
    ) -> None:
        self.kafka = kafka or KafkaSettings()
        self._operator = operator

    @property
    def operator(self) -> OperatorKey:
        if self._operator is None:
            self._operator = OperatorSettings().key()
        return self._operator

    # --- what Centrality believes -----------------------------------------------------------

    def nodes(
        self,
        *,
        state: str | Iterable[str] = (),
        cluster: str | None = None,
        names: str | None = None,
        out_of_service: bool = False,
        by: str | None = None,
        why: str | None = None,
    ) -> list[NodeStatusChanged]:
        """The nodes in any of `state` (or, `out_of_service`, in any state that takes no
        work), taken out `by` whom (a glob: `fatal_xid`, `operator/*`, `scheduler`), with
        `why` in their why or problem; ValueError for a state no node has."""
        states = checked_states("node", state) | (
            out_of_service_states() if out_of_service else frozenset()
        )
        names_ = matcher(names)  # a bad hostlist is refused before anything is read
        fleet = run(read_fleet(self.kafka))
        found = selected(
            fleet.nodes.values(), cluster=cluster, states=states, names=names_, by=by, why=why
        )
        return [s for s in found if isinstance(s, NodeStatusChanged)]

    def jobs(
        self,
        *,
        state: str | Iterable[str] = (),
        cluster: str | None = None,
        names: str | None = None,
        why: str | None = None,
    ) -> list[JobStatusChanged]:
        """The jobs in any of `state` (`RUNNING`, `FAILED`...; ValueError for another)."""
        states = checked_states("job", state)
        names_ = matcher(names)
        fleet = run(read_fleet(self.kafka))
        found = selected(fleet.jobs.values(), cluster=cluster, states=states, names=names_, why=why)
        return [s for s in found if isinstance(s, JobStatusChanged)]

    def incidents(
        self, *, state: Literal["open", "resolved"] | None = None, cluster: str | None = None
    ) -> list[IncidentEvent]:
        """Incidents as the streams app last published each (what `centrality incidents`
        lists), newest first; `state`: only open or only resolved ones."""
        found = run(read_incidents(self.kafka)).incidents.values()
        return sorted(
            (i for i in found if state in (None, i.payload.state) and cluster in (None, i.cluster)),
            key=lambda i: i.payload.opened_at,
            reverse=True,
        )

    def incident(self, incident_id: str) -> IncidentEvent:
        """One incident; `UnknownSubject` when the streams app published none of that id."""
        found = run(read_incidents(self.kafka)).incidents.get(incident_id)
        if found is None:
            raise UnknownSubject(f"no incident {incident_id!r}")
        return found

    def node(self, name: str, cluster: str | None = None) -> NodeHandle:
        return NodeHandle(self, name, cluster)

    def job(self, job_id: str, cluster: str | None = None) -> JobHandle:
        return JobHandle(self, job_id, cluster)

    # --- commands ---------------------------------------------------------------------------

    def quarantine(
        self, nodes: Iterable[str], reason: str, *, cluster: str | None = None, **kw: Any
    ) -> Outcome:
        return self._on_nodes(QuarantineNodes, tuple(nodes), reason, cluster, **kw)

    def release(
        self, nodes: Iterable[str], reason: str, *, cluster: str | None = None, **kw: Any
    ) -> Outcome:
        return self._on_nodes(ReleaseNodes, tuple(nodes), reason, cluster, **kw)

    def benchmark(
        self, nodes: Iterable[str], reason: str, *, cluster: str | None = None, **kw: Any
    ) -> Outcome:
        return self._on_nodes(RunBenchmark, tuple(nodes), reason, cluster, **kw)

    def requeue(
        self,
        job_id: str,
        reason: str,
        *,
        from_scratch: bool = False,
        cluster: str | None = None,
        **kw: Any,
    ) -> Outcome:
        reason = checked_reason(reason)
        status = self._known_job(job_id, cluster)
        p = status.payload
        return self.send(
            command(
                RestartJob,
                operator=self.operator.name,
                cluster=status.cluster,
                subject=job_id,
                reason=reason,
                force=kw.pop("force", False),
                checkpoint_uri=None if from_scratch else p.checkpoint_uri,
                checkpoint_step=None if from_scratch else p.checkpoint_step,
                attempt=max(p.attempt, 1),
            ),
            **kw,
        )

    def cancel(self, job_id: str, reason: str, *, cluster: str | None = None, **kw: Any) -> Outcome:
        reason = checked_reason(reason)
        status = self._known_job(job_id, cluster)
        return self.send(
            command(
                CancelJob,
                operator=self.operator.name,
                cluster=status.cluster,
                subject=job_id,
                reason=reason,
                force=kw.pop("force", False),
            ),
            **kw,
        )

    def send(self, trigger: Trigger, *, wait_s: float = WAIT_S) -> Outcome:
        """Sign and send an operator's command; its outcome (`NoOutcome` after `wait_s`)."""
        return run(self._send(trigger, wait_s))

    async def _send(self, trigger: Trigger, wait_s: float) -> Outcome:
        value = encode(trigger)
        producer = kafka_clients.producer(self.kafka, client_id=f"{self.kafka.client_id}-cli")
        async with OutcomeWatch(self.kafka) as watch:
            await producer.start()
            try:
                await producer.send_and_wait(
                    topic_name("triggers", self.kafka),
                    value=value,
                    key=trigger.key,
                    headers=self.operator.headers(value),
                )
            finally:
                await producer.stop()
            found = await watch.outcome(trigger.event_id, wait_s)
        if found is None:
            raise NoOutcome(
                f"{trigger.type} {trigger.event_id} was sent; nothing answered it within "
                f"{wait_s:g} s (is `centrality actions` running?)"
            )
        return found

    def _on_nodes(
        self,
        cls: type[Trigger],
        nodes: tuple[str, ...],
        reason: str,
        cluster: str | None,
        *,
        force: bool = False,
        wait_s: float = WAIT_S,
    ) -> Outcome:
        reason = checked_reason(reason)
        known = self._known_nodes(nodes, cluster)
        clusters = {s.cluster for s in known}
        if len(clusters) > 1:
            raise UnknownSubject(f"those nodes are in clusters {sorted(clusters)}: name one")
        [where] = clusters
        serving = [s.subject for s in known if s.payload.state == "in_service"]
        said = ""
        if cls is ReleaseNodes and serving and not force:
            # Nothing to release there: "done" would tell people they had been out.
            nodes = tuple(n for n in nodes if n not in serving)
            said = f"{', '.join(serving)} {'was' if len(serving) == 1 else 'were'} in service"
            if not nodes:
                return Outcome("unchanged", f"{said}: nothing to release", {"in_service": serving})
        # Several nodes are one decision, keyed as the streams app keys a node set.
        subject = nodes[0] if len(nodes) == 1 else node_set_key(nodes)
        trigger = command(
            cls,
            operator=self.operator.name,
            cluster=where,
            subject=subject,
            reason=reason,
            force=force,
            nodes=nodes,
        )
        outcome = self.send(trigger, wait_s=wait_s)
        return (
            replace(outcome, words=f"{outcome.words} ({said}: not released)") if said else outcome
        )

    def _known_nodes(self, nodes: tuple[str, ...], cluster: str | None) -> list[NodeStatusChanged]:
        if not nodes:
            raise UnknownSubject("name at least one node")
        fleet = run(read_fleet(self.kafka))
        found = [fleet.nodes.get(n) for n in nodes]
        missing = [
            n
            for n, s in zip(nodes, found, strict=True)
            if s is None or cluster not in (None, s.cluster)
        ]
        if missing:
            where = f" in cluster {cluster}" if cluster else ""
            hint = did_you_mean(missing[0], fleet.nodes) if len(missing) == 1 else ""
            raise UnknownSubject(f"unknown node(s){where}: {', '.join(missing)}{hint}")
        return [s for s in found if s is not None]

    def _known_job(self, job_id: str, cluster: str | None) -> JobStatusChanged:
        jobs = run(read_fleet(self.kafka)).jobs
        status = jobs.get(job_id)
        if status is None or cluster not in (None, status.cluster):
            where = f" in cluster {cluster}" if cluster else ""
            raise UnknownSubject(f"unknown job{where}: {job_id}{did_you_mean(job_id, jobs)}")
        return status


class _Handle:
    kind: Kind = "node"

    def __init__(self, fleet: Fleet, subject: str, cluster: str | None) -> None:
        self.fleet, self.subject, self.cluster = fleet, subject, cluster

    def _status(self) -> Any:
        fleet = run(read_fleet(self.fleet.kafka))
        status = (fleet.nodes if self.kind == "node" else fleet.jobs).get(self.subject)
        if status is None or self.cluster not in (None, status.cluster):
            raise UnknownSubject(f"unknown {self.kind}: {self.subject}")
        return status

    def wait(self, states: str | Iterable[str], timeout_s: float, poll_s: float = 1.0) -> Any:
        """The status once its state is one of `states`. ValueError at once for a state no
        status has (a job `SUCCEEDED`, not Slurm's `COMPLETED`); `WaitTimeout`, naming the
        state reached, after `timeout_s`."""
        wanted = checked_states(self.kind, states)
        if not wanted:
            raise ValueError(f"name the {self.kind} state(s) to wait for")
        return run(self._wait(wanted, timeout_s, poll_s))

    async def _wait(self, wanted: frozenset[str], timeout_s: float, poll_s: float) -> Any:
        reader = FleetReader(self.fleet.kafka)
        deadline = time.monotonic() + timeout_s
        try:
            fleet = await reader.load()
            while True:
                table = fleet.nodes if self.kind == "node" else fleet.jobs
                status = table.get(self.subject)
                seen = None if status is None else status.payload.state
                if seen is not None and str(seen) in wanted:
                    return status
                if time.monotonic() > deadline:
                    reached = "not known" if status is None else f"{seen}"
                    raise WaitTimeout(
                        f"{self.kind} {self.subject} is {reached}, not "
                        f"{' or '.join(sorted(wanted))}, after {timeout_s:g} s",
                        None if seen is None else str(seen),
                    )
                await asyncio.sleep(poll_s)
                fleet = await reader.refresh()
        finally:
            await reader.stop()

    def timeline(
        self, since: datetime | None = None, until: datetime | None = None, *, noisy: bool = False
    ) -> list[Event]:
        """Its events, the decisions about it and their action results in time order, from
        ClickHouse (the last 7 days unless `since`); `noisy`: with telemetry and statuses."""
        from streams.history.settings import ClickHouseSettings
        from streams.history.timeline import timeline

        until = until or utcnow()
        since = since or until - timedelta(days=7)
        kind: Literal["job", "node"] = "node" if self.kind == "node" else "job"
        return timeline(ClickHouseSettings(), kind, self.subject, since, until, noisy)


class NodeHandle(_Handle):
    kind = "node"

    def status(self) -> NodeStatusChanged:
        status: NodeStatusChanged = self._status()
        return status

    def quarantine(self, reason: str, **kw: Any) -> Outcome:
        return self.fleet.quarantine((self.subject,), reason, cluster=self.cluster, **kw)

    def release(self, reason: str, **kw: Any) -> Outcome:
        return self.fleet.release((self.subject,), reason, cluster=self.cluster, **kw)

    def benchmark(self, reason: str, **kw: Any) -> Outcome:
        return self.fleet.benchmark((self.subject,), reason, cluster=self.cluster, **kw)


class JobHandle(_Handle):
    kind = "job"

    def status(self) -> JobStatusChanged:
        status: JobStatusChanged = self._status()
        return status

    def requeue(self, reason: str, *, from_scratch: bool = False, **kw: Any) -> Outcome:
        return self.fleet.requeue(
            self.subject, reason, from_scratch=from_scratch, cluster=self.cluster, **kw
        )

    def cancel(self, reason: str, **kw: Any) -> Outcome:
        return self.fleet.cancel(self.subject, reason, cluster=self.cluster, **kw)
