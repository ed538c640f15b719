"""Slurm watcher: polls `squeue --json` and `sinfo --json`; jobs that vanished between polls
are completed from the job completion log (`sacct -c`, jobcomp/filetxt).

Per job it emits JobSubmitted once, JobStateChanged on every change of raw state or attempt,
and JobExited once per attempt (an attempt ended by a requeue too). Node state changes (drain,
down) become NodeHealthChecked `slurm_node_state`. What was emitted is kept in a ledger on disk
and event ids derive from it, so a restart neither repeats nor loses events.
"""

from __future__ import annotations

import asyncio
import os
import re
from datetime import UTC, datetime
from typing import Any

import orjson
import structlog

from collectors.events import Stamp
from collectors.loop import poll_forever
from collectors.sink import EventSink
from collectors.watchers.ledger import Ledger
from collectors.watchers.lifecycle import TERMINAL, JobTracker, Observation
from collectors.watchers.slurm.hostlist import expand
from collectors.watchers.slurm.settings import SlurmWatchSettings
from collectors.watchers.slurm.states import exit_of, job_state, node_health, raw_state
from schemas.envelope import Event
from schemas.events import JobExited
from schemas.events.jobs import JobExitedPayload, JobSubmittedPayload

log = structlog.get_logger(__name__)

_GPUS = re.compile(r"gres/gpu(?::[^=]+)?=(\d+)")
NODE_CHECK = "slurm_node_state"


def _reason(job: dict[str, Any]) -> str | None:
    reason = job.get("state_reason")
    return None if reason in (None, "", "None") else str(reason)


class SlurmWatcher:
    def __init__(self, settings: SlurmWatchSettings, sink: EventSink) -> None:
        self.settings = settings
        self.sink = sink
        self.ledger = Ledger(settings.state_file)
        self.tracker = JobTracker(
            self.ledger, Stamp(source=settings.source, cluster=settings.cluster)
        )
        self._env = {**os.environ, **({"SLURM_CONF": str(settings.conf)} if settings.conf else {})}

    def job_id(self, job: dict[str, Any]) -> str:
        array_job, task = job.get("array_job_id") or 0, job.get("array_task_id")
        native = f"{array_job}_{task}" if array_job and task is not None else str(job["job_id"])
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
            sent += await self.tracker.commit(self.sink, jid, *self._job_events(jid, job))
        sent += await self._vanished(present)
        self.tracker.forget_ended(f"slurm/{self.settings.cluster}/", present)
        for node in (await self._json("sinfo", "--json"))["nodes"]:
            sent += await self.tracker.commit(
                self.sink, f"node:{node['name']}", *self._node_events(node)
            )
        self.ledger.save()
        return sent

    def _job_events(
        self, jid: str, job: dict[str, Any]
    ) -> tuple[list[Event], dict[str, Any] | None]:
        raw = raw_state(job.get("job_state"))
        code, signal = exit_of(job.get("exit_code"))
        gpus = _GPUS.search(str(job.get("tres_alloc_str") or ""))
        seen = Observation(
            raw_state=raw,
            state=job_state(raw),
            attempt=int(job.get("restart_cnt") or 0) + 1,
            nodes=expand(job.get("nodes") or ""),
            reason=_reason(job),
            exit_code=code,
            signal=signal,
            gpus=int(gpus.group(1)) if gpus else 0,
            submitted_at=job.get("submit_time"),
            started_at=job.get("start_time"),
            ended_at=job.get("end_time"),
        )
        return self.tracker.observe(jid, seen, self._submitted(job))

    def _submitted(self, job: dict[str, Any]) -> JobSubmittedPayload:
        gpus = _GPUS.search(str(job.get("tres_per_job") or job.get("tres_req_str") or ""))
        return JobSubmittedPayload(
            name=job.get("name"),
            user=job.get("user_name"),
            queue=job.get("partition"),
            nodes_requested=job.get("node_count"),
            gpus_requested=int(gpus.group(1)) if gpus else None,
            command=job.get("command") or None,
            raw={
                "native_id": str(job["job_id"]),
                "tres_per_node": str(job.get("tres_per_node") or ""),
            },
        )

    async def _vanished(self, present: set[str]) -> list[Event]:
        """Jobs gone from squeue before their end was seen: complete them from jobcomp."""
        gone = self.tracker.unfinished(f"slurm/{self.settings.cluster}/", present)
        if not gone:
            return []
        records = await self._jobcomp()
        sent: list[Event] = []
        for jid in gone:
            entry = dict(self.ledger.entries[jid])
            record = records.get(jid.rsplit("/", 1)[1])
            if record is None:
                log.warning("slurm_job_vanished", job=jid)
                self.ledger.drop(jid)
                continue
            code, _, signal = record["ExitCode"].partition(":")
            raw = record["State"].split()[0]
            payload = JobExitedPayload(
                state=job_state(raw),
                raw_state=raw,
                exit_code=int(code) if code.isdigit() else None,
                signal=int(signal) or None if signal.isdigit() else None,
                attempt=entry["attempt"],
                nodes=expand(record["NodeList"]),
                reason="from the job completion log",
            )
            at = datetime.fromisoformat(record["End"]).astimezone(UTC)
            event = self.tracker.make(JobExited, jid, entry, payload, at)
            entry["exited"] = entry["attempt"]
            sent += await self.tracker.commit(self.sink, jid, [event], entry)
        return sent

    async def _jobcomp(self) -> dict[str, dict[str, str]]:
        fields = ["JobID", "State", "ExitCode", "NodeList", "End"]
        out = await self._run("sacct", "-c", "-P", "-n", f"--format={','.join(fields)}")
        records: dict[str, dict[str, str]] = {}
        for line in out.splitlines():
            record = dict(zip(fields, line.split("|"), strict=False))
            if job_state(record.get("State", "UNKNOWN")) in TERMINAL:
                records[record["JobID"]] = record  # the last terminal record wins
        return records

    def _node_events(self, node: dict[str, Any]) -> tuple[list[Event], dict[str, Any] | None]:
        flags = [str(f) for f in node.get("state_flags") or []]
        state = raw_state(node.get("state"))
        reason = str(node.get("reason") or "")
        words = " ".join([state, *flags]).lower()
        return self.tracker.node_state(
            f"node:{node['name']}",
            node["name"],
            NODE_CHECK,
            node_health(state, flags),
            f"{words}: {reason}" if reason else words,
            {"state": state, "flags": flags, "reason": reason},
        )

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
