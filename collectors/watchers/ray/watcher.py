"""Ray watcher: polls the dashboard's Jobs API and node list.

A job is `ray/<submission id>`; its one attempt ran on the driver's node. When a job ends its
driver log is scanned with the tailer's patterns, and the signals (Training Complete, NCCL,
CUDA, OOM, ...) are sent before JobExited, so rules see them first. An entrypoint killed by
a signal ends with that signal, not a negative exit code. A node turning DEAD becomes
NodeHealthChecked `ray_node_state`: CRITICAL when Ray says it died unexpectedly (or says nothing),
WARN when Ray ended it on purpose: stopped, scaled down idle, or preempted, which is no fault of
the node.
"""

from __future__ import annotations

import asyncio
import re
import urllib.parse
import urllib.request
from typing import Any

import orjson
import structlog

from collectors.events import Stamp
from collectors.logs.patterns import Matcher
from collectors.logs.peers import peer_of
from collectors.logs.prefixes import split_prefix
from collectors.loop import poll_forever
from collectors.sink import EventSink
from collectors.watchers.hooks import METADATA_KEY, parse_hooks
from collectors.watchers.ledger import Ledger
from collectors.watchers.lifecycle import TERMINAL, JobTracker, Observation, when
from collectors.watchers.ray.settings import RayWatchSettings
from schemas.envelope import Event
from schemas.events import JobExited, LogSignalDetected
from schemas.events.jobs import JobState, JobSubmittedPayload
from schemas.events.logs import LogSignalDetectedPayload
from schemas.events.nodes import HealthStatus

log = structlog.get_logger(__name__)

NODE_CHECK = "ray_node_state"
_ENTRYPOINT_ECHO = "Running entrypoint for job "
# The dashboard's words for a death Ray or the cloud chose (NodeDeathInfo's EXPECTED_TERMINATION,
# AUTOSCALER_DRAIN_IDLE, AUTOSCALER_DRAIN_PREEMPTED), with or without its prefix.
_ENDED_ON_PURPOSE = re.compile(
    r"^(?:Expected termination\b|Terminated due to (?:idle|preemption)\b|received SIGTERM$)"
)
# Ray before `driver_exit_code` (2.8) said it only in the message; a negative code is a signal.
_EXIT_IN_MESSAGE = re.compile(r"^Job entrypoint command failed with exit code (-?\d+)")
_STATES = {
    "PENDING": JobState.PENDING,
    "RUNNING": JobState.RUNNING,
    "SUCCEEDED": JobState.SUCCEEDED,
    "FAILED": JobState.FAILED,
    "STOPPED": JobState.CANCELLED,
}


def _seconds(ms: Any) -> float | None:
    return float(ms) / 1000 if ms else None


def _exit_of(code: Any, message: list[str]) -> tuple[int | None, int | None]:
    """(exit code, signal) of the entrypoint: a subprocess return code, negative when a signal
    ended it (`driver_exit_code`, or the message of Rays that had no such field)."""
    if code is None and message and (m := _EXIT_IN_MESSAGE.match(message[0])):
        code = m.group(1)
    if code is None:
        return None, None
    return (None, -int(code)) if int(code) < 0 else (int(code), None)


def _node_status(dead: bool, why: str) -> HealthStatus:
    if not dead:
        return HealthStatus.OK
    return HealthStatus.WARN if _ENDED_ON_PURPOSE.match(why) else HealthStatus.CRITICAL


class RayWatcher:
    def __init__(self, settings: RayWatchSettings, sink: EventSink) -> None:
        self.settings = settings
        self.sink = sink
        self.ledger = Ledger(settings.state_file)
        self.tracker = JobTracker(
            self.ledger, Stamp(source=settings.source, cluster=settings.cluster)
        )
        self.matcher = Matcher(())

    async def run(self, stop: asyncio.Event) -> None:
        await poll_forever(self.poll_once, self.settings.poll_s, stop, "ray")

    async def poll_once(self) -> list[Event]:
        nodes_doc = await self._get("/api/v0/nodes?detail=1")
        nodes = nodes_doc["data"]["result"]["result"]
        names = {n["node_id"]: n.get("node_name") or n.get("node_ip") for n in nodes}
        sent: list[Event] = []
        for job in await self._get("/api/jobs/"):
            jid = f"ray/{job.get('submission_id') or job['job_id']}"
            events, entry = await self._job_events(jid, job, names)
            sent += await self.tracker.commit(self.sink, jid, events, entry)
        for node in nodes:
            name = str(node.get("node_name") or node.get("node_ip"))
            why = str(node.get("state_message") or "")
            message = f"{str(node.get('state')).lower()}" + (f": {why}" if why else "")
            details = {"node_id": node["node_id"], "is_head_node": bool(node.get("is_head_node"))}
            status = _node_status(node.get("state") == "DEAD", why)
            key = f"node:{node['node_id']}"
            events, entry = self.tracker.node_state(key, name, NODE_CHECK, status, message, details)
            sent += await self.tracker.commit(self.sink, key, events, entry)
        self.ledger.save()
        return sent

    async def _job_events(
        self, jid: str, job: dict[str, Any], names: dict[str, Any]
    ) -> tuple[list[Event], dict[str, Any] | None]:
        raw = str(job.get("status"))
        state = _STATES.get(raw, JobState.UNKNOWN)
        driver = names.get(str(job.get("driver_node_id")))
        message = str(job.get("message") or "").splitlines()
        exit_code, signal = _exit_of(job.get("driver_exit_code"), message)
        seen = Observation(
            raw_state=raw,
            state=state,
            nodes=(str(driver),) if driver else (),
            reason=job.get("error_type") or (message[0] if message else None),
            exit_code=exit_code,
            signal=signal,
            submitted_at=_seconds(job.get("start_time")),
            started_at=_seconds(job.get("start_time")),
            ended_at=_seconds(job.get("end_time")),
        )
        submitted = JobSubmittedPayload(
            name=(job.get("metadata") or {}).get("job_name"),
            queue=self.settings.cluster,
            command=job.get("entrypoint"),
            raw={"type": str(job.get("type")), "job_id": str(job.get("job_id"))},
            hooks=parse_hooks((job.get("metadata") or {}).get(METADATA_KEY), job=jid),
        )
        events, entry = self.tracker.observe(jid, seen, submitted)
        ends = [i for i, e in enumerate(events) if isinstance(e, JobExited)]
        if state in TERMINAL and ends and entry is not None:
            signals = await self._signals(jid, job, entry, seen.nodes)
            events[ends[0] : ends[0]] = signals
        return events, entry

    async def _signals(
        self, jid: str, job: dict[str, Any], entry: dict[str, Any], nodes: tuple[str, ...]
    ) -> list[Event]:
        sid = urllib.parse.quote(str(job.get("submission_id") or job["job_id"]))
        try:
            text = str((await self._get(f"/api/jobs/{sid}/logs"))["logs"])
        except Exception as exc:
            log.warning("ray_logs_unavailable", job=jid, error=str(exc))
            return []
        out = []
        for line in text[-self.settings.max_log_bytes :].splitlines():
            if line.startswith(_ENTRYPOINT_ECHO):
                continue  # Ray echoes the command line, which may well mention the patterns
            rank, body = split_prefix(line)
            pattern = self.matcher.match(body)
            if pattern is None:
                continue
            payload = LogSignalDetectedPayload(
                signal=pattern.signal,
                line=line[:2000],
                node=nodes[0] if nodes else None,
                rank=rank,
                pattern=pattern.name,
                peer=peer_of(body),
            )
            at = when(_seconds(job.get("end_time")))
            out.append(self.tracker.make(LogSignalDetected, jid, entry, payload, at))
        return out

    async def _get(self, path: str) -> Any:
        def fetch() -> Any:
            url = self.settings.address.rstrip("/") + path
            with urllib.request.urlopen(url, timeout=self.settings.request_timeout_s) as reply:
                return orjson.loads(reply.read())

        return await asyncio.to_thread(fetch)
