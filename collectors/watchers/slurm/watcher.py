"""Slurm watcher: polls `squeue --json` and `sinfo --json`; jobs that vanished between polls
are completed from Slurm's records (`sacct --json` with slurmdbd, else `sacct -c`).

Per job it emits JobSubmitted once, JobStateChanged on every change of raw state or attempt,
and JobExited once per attempt (an attempt ended by a requeue too). A node whose state as the
controller sees it (available, draining, drained, down) or whose reason changed becomes
NodeStateObserved, whoever drained or downed it; one whose partitions, active features or leaf
switch (`scontrol show topology`) changed (or first seen) becomes NodeFactsObserved. What was
emitted is kept in a ledger on disk and event ids derive from it, so a restart neither repeats
nor loses events.

Reads Slurm 22.05 and 23.02+ JSON alike (see states.py); hostlists go through python-hostlist.
"""

from __future__ import annotations

import asyncio
import os
import re
from dataclasses import replace
from typing import Any

import orjson
import structlog

from collectors.events import Stamp
from collectors.loop import poll_forever
from collectors.sink import EventSink
from collectors.watchers.hooks import HOOKS_KEY, comment_value, parse_hooks
from collectors.watchers.ledger import Ledger
from collectors.watchers.lifecycle import JobTracker, Observation, when
from collectors.watchers.slurm import ends
from collectors.watchers.slurm.ends import AttemptEnd
from collectors.watchers.slurm.nodes import NodeView, from_scontrol, from_sinfo, windows_of
from collectors.watchers.slurm.settings import SlurmWatchSettings
from collectors.watchers.slurm.states import exit_of, expand, job_state, number
from collectors.watchers.slurm.topology import leaf_switches
from schemas.envelope import Event
from schemas.events import JobExited
from schemas.events.jobs import JobExitedPayload, JobState, JobSubmittedPayload
from schemas.events.nodes import (
    NodeFactsObservedPayload,
    NodeStateObserved,
    NodeStateObservedPayload,
    SchedulerNodeState,
)
from schemas.limits import NAME, SMALL_LIST

log = structlog.get_logger(__name__)

_GPUS = re.compile(r"gres/gpu(?::[^=]+)?=(\d+)")


def _requeue_gap(event: Event) -> bool:
    return isinstance(event, JobExited) and event.payload.raw_state == "REQUEUED"


def _native(job: dict[str, Any]) -> str:
    return str(number(job["job_id"]))


def _reason(job: dict[str, Any]) -> str | None:
    reason = job.get("state_reason")
    return None if reason in (None, "", "None") else str(reason)


def _facts(node: NodeView) -> NodeFactsObservedPayload:
    """What Slurm says the node is: its partitions and active features (node groups), and the
    leaf switch it hangs off (the failure domain incidents name)."""
    return NodeFactsObservedPayload(
        partitions=tuple(p[:NAME] for p in node.partitions[:SMALL_LIST]),
        features=tuple(f[:NAME] for f in node.features[:SMALL_LIST]),
        switch=node.switch[:NAME] if node.switch else None,
    )


class SlurmWatcher:
    def __init__(self, settings: SlurmWatchSettings, sink: EventSink) -> None:
        self.settings = settings
        self.sink = sink
        self.ledger = Ledger(settings.state_file)
        self.tracker = JobTracker(
            self.ledger, Stamp(source=settings.source, cluster=settings.cluster)
        )
        self._env = {**os.environ, **({"SLURM_CONF": str(settings.conf)} if settings.conf else {})}
        self._told_no_topology = False

    def job_id(self, job: dict[str, Any]) -> str:
        array_job, task = number(job.get("array_job_id")), number(job.get("array_task_id"))
        native = f"{array_job}_{task}" if array_job and task is not None else _native(job)
        return f"slurm/{self.settings.cluster}/{native}"

    async def run(self, stop: asyncio.Event) -> None:
        await poll_forever(self.poll_once, self.settings.poll_s, stop, "slurm")

    async def poll_once(self) -> list[Event]:
        sent: list[Event] = []
        jobs = (await self._json("squeue", "--json", "--states=all"))["jobs"]
        present = set()
        for job in jobs:
            jid = self.job_id(job)
            present.add(jid)
            events, entry = self._job_events(jid, job)
            events = await self._unseen_ends(_native(job), events)
            if entry is not None and "slurm_id" not in entry:
                entry["slurm_id"] = _native(job)  # an array task's own id, as sacct has it
            sent += await self.tracker.commit(self.sink, jid, events, entry)
        sent += await self._vanished(present)
        self.tracker.forget_ended(f"slurm/{self.settings.cluster}/", present)
        for node in await self._nodes():
            key = f"node:{node.name}"
            events, entry = self._node(node)
            facts, entry = self.tracker.node_facts(key, node.name, _facts(node), entry)
            sent += await self.tracker.commit(self.sink, key, [*events, *facts], entry)
        self.ledger.save()
        return sent

    def _job_events(
        self, jid: str, job: dict[str, Any]
    ) -> tuple[list[Event], dict[str, Any] | None]:
        raw, state = job_state(job.get("job_state"))
        attempt = (number(job.get("restart_cnt")) or 0) + 1
        known = self.ledger.get(jid)
        if raw == "COMPLETING" and known is not None and attempt > known["attempt"]:
            state = JobState.PENDING  # 22.05's word for a requeued job's old attempt ending
        code, signal = exit_of(job.get("exit_code"))
        gpus = _GPUS.search(str(job.get("tres_alloc_str") or ""))
        seen = Observation(
            raw_state=raw,
            state=state,
            attempt=attempt,
            nodes=expand(job.get("nodes")),
            reason=_reason(job),
            exit_code=code,
            signal=signal,
            gpus=int(gpus.group(1)) if gpus else 0,
            submitted_at=number(job.get("submit_time")),
            started_at=number(job.get("start_time")),
            ended_at=number(job.get("end_time")),
        )
        return self.tracker.observe(jid, seen, self._submitted(job))

    def _submitted(self, job: dict[str, Any]) -> JobSubmittedPayload:
        gpus = _GPUS.search(str(job.get("tres_per_job") or job.get("tres_req_str") or ""))
        return JobSubmittedPayload(
            name=job.get("name"),
            user=job.get("user_name"),
            queue=job.get("partition"),
            nodes_requested=number(job.get("node_count")),
            gpus_requested=int(gpus.group(1)) if gpus else None,
            command=job.get("command") or None,
            raw={
                "native_id": _native(job),
                "tres_per_node": str(job.get("tres_per_node") or ""),
            },
            hooks=parse_hooks(comment_value(job.get("comment"), HOOKS_KEY), job=_native(job)),
        )

    async def _vanished(self, present: set[str]) -> list[Event]:
        """Jobs gone from squeue before their end was seen: complete them from Slurm's records."""
        gone = self.tracker.unfinished(f"slurm/{self.settings.cluster}/", present)
        if not gone:
            return []
        # Entries written before slurm_id was kept: the job id's own number (no array task).
        ids = {
            jid: self.ledger.entries[jid].get("slurm_id") or jid.rsplit("/", 1)[1] for jid in gone
        }
        records = await self._attempt_ends(list(ids.values()))
        sent: list[Event] = []
        for jid in gone:
            entry = dict(self.ledger.entries[jid])
            ended = [e for e in records.get(ids[jid], []) if e.ended]
            if not ended:
                log.warning("slurm_job_vanished", job=jid)
                self.ledger.drop(jid)
                continue
            end = ended[-1]
            payload = JobExitedPayload(
                state=end.state,
                raw_state=end.raw_state,
                exit_code=end.exit_code,
                signal=end.signal,
                attempt=entry["attempt"],
                nodes=end.nodes,
                reason="from Slurm's records (accounting or job completion log)",
            )
            event = self.tracker.make(JobExited, jid, entry, payload, end.at)
            entry["exited"] = entry["attempt"]
            sent += await self.tracker.commit(self.sink, jid, [event], entry)
        return sent

    async def _unseen_ends(self, slurm_id: str, events: list[Event]) -> list[Event]:
        """Attempts that a requeue ended between two looks are PREEMPTED/REQUEUED to the
        tracker; Slurm's records say how they really ended (a NODE_FAIL requeued by Slurm is a
        failure of those nodes, not a preemption)."""
        if not any(_requeue_gap(e) for e in events):
            return events
        told_ends = (await self._attempt_ends([slurm_id])).get(slurm_id, [])
        told: list[Event] = []
        for event in events:
            attempt = event.payload.attempt if _requeue_gap(event) else 0
            end = told_ends[attempt - 1] if 0 < attempt <= len(told_ends) else None
            if end is not None and end.ended:
                payload = event.payload.model_copy(
                    update={
                        "state": end.state,
                        "raw_state": end.raw_state,
                        "exit_code": end.exit_code,
                        "signal": end.signal,
                        "nodes": end.nodes or event.payload.nodes,
                        "reason": "requeued; from Slurm's records",
                    }
                )
                event = event.model_copy(update={"payload": payload})
            told.append(event)
        return told

    async def _attempt_ends(self, slurm_ids: list[str]) -> dict[str, list[AttemptEnd]]:
        """From accounting where the cluster has it, else from the job completion log."""
        wanted = sorted({i for i in slurm_ids if re.fullmatch(r"\d+", i)})
        if not wanted:
            return {}
        ids = f"--jobs={','.join(wanted)}"
        try:
            return ends.from_sacct(await self._json(*ends.SACCT_ARGV, ids))
        except RuntimeError as e:  # "Slurm accounting storage is disabled"
            log.debug("slurm_accounting_unavailable", error=str(e)[:200])
        try:
            return ends.from_jobcomp(await self._run(*ends.JOBCOMP_ARGV, ids))
        except RuntimeError as e:
            log.info("slurm_job_ends_unknown", error=str(e)[:200])
            return {}

    async def _nodes(self) -> list[NodeView]:
        """`sinfo --json`, or `scontrol show node` where sinfo has no JSON (before 21.08), each
        node with the Centrality window it is in. Windows are read first: a window opened
        after that read found its nodes still drained, one closed since drained them again."""
        windows, switches = await self._windows(), await self._switches()
        try:
            views = from_sinfo(await self._json("sinfo", "--json"))
        except (RuntimeError, orjson.JSONDecodeError) as e:
            log.debug("slurm_sinfo_json_unavailable", error=str(e)[:200])
            views = from_scontrol(await self._run("scontrol", "show", "node"))
        return [
            replace(v, window=windows.get(v.name), switch=self._switch(v.name, switches))
            for v in views
        ]

    async def _switches(self) -> dict[str, str] | None:
        """node → leaf switch; {} on a cluster without a topology plugin; None: unread."""
        try:
            switches = leaf_switches(await self._run("scontrol", "show", "topology"))
        except (RuntimeError, TimeoutError) as e:
            log.warning("slurm_topology_unread", error=str(e)[:200])
            return None
        if not switches and not self._told_no_topology:
            log.debug("slurm_topology_none", why="no leaf switch in `scontrol show topology`")
            self._told_no_topology = True
        return switches

    def _switch(self, node: str, switches: dict[str, str] | None) -> str | None:
        """Unread this time, the switch the ledger last told for the node: a failed read is no
        change of cabling."""
        if switches is not None:
            return switches.get(node)
        facts = (self.ledger.get(f"node:{node}") or {}).get("facts") or {}
        return facts.get("switch")

    async def _windows(self) -> dict[str, str]:
        try:
            return windows_of(await self._run("scontrol", "show", "reservation", "-o"))
        except (RuntimeError, TimeoutError) as e:  # unknown windows: nodes as sinfo says
            log.warning("slurm_reservations_unread", error=str(e)[:200])
            return {}

    def _node(self, node: NodeView) -> tuple[list[Event], dict[str, Any] | None]:
        """NodeStateObserved when the node's state or reason changed; raw words alone (IDLE to
        MIXED as jobs come and go) are no change."""
        key = f"node:{node.name}"
        old = self.ledger.get(key)
        # 24.11 keeps the last reason after a resume: it explains nothing about a working node.
        reason = node.said if node.state != SchedulerNodeState.AVAILABLE else None
        seen = {"state": node.state.value, "reason": reason}
        if old is not None and {k: old.get(k) for k in seen} == seen:
            return [], None
        entry = {**(old or {"incarnation": key}), **seen}
        payload = NodeStateObservedPayload(
            state=node.state,
            raw_state=node.raw_state[:256],
            reason=reason[:1024] if reason else None,
            scheduler="slurm",
        )
        return [self.tracker.make(NodeStateObserved, node.name, entry, payload, when(None))], entry

    async def _json(self, *argv: str) -> dict[str, Any]:
        doc: dict[str, Any] = orjson.loads(await self._run(*argv))
        return doc

    async def _run(self, *argv: str) -> str:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self._env,
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), self.settings.command_timeout_s)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            raise
        if proc.returncode != 0:
            raise RuntimeError(f"{argv[0]} failed ({proc.returncode}): {err.decode()[:500]}")
        return out.decode()
