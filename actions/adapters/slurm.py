"""Slurm through its own commands (`scontrol`, `sbatch`, `sinfo`), for clusters we can reach.

Contracts the cluster sees:
- requeue: `scontrol requeuehold`, then, once PENDING (and held), `StartTime=now` (or Slurm
  waits ~2 minutes) and the job's Comment set to `centrality-resume=<uri>`; nodes to avoid join
  the job's `ExcNodeList` in that same update, then `scontrol release` (`requeue_release_delay_s`
  later: within the second its last instance ended, 22.05 fails it): it never starts without
  them, even requeued while it ran (Slurm refuses to update a job that has ended: "Job has
  already finished"). A job those exclusions would leave too few
  usable nodes in its partition is not requeued: it would pend for ever (`BadConstraints`).
  Nor is a CANCELLED job: Slurm would requeue it, undoing whoever cancelled it.
- reboot: `scontrol reboot reason=…` (plus `reboot_args`). Without `ASAP`/`nextstate=RESUME`
  a drained node comes back drained, so it is validated before it takes work; the reboot is
  done when the watcher sees the node back, not when this returns. `infra/slurm/` (`prolog.sh`,
  `task-prolog.sh`, `epilog.sh`, installed as the cluster's Prolog, TaskProlog and Epilog)
  turns that into `CENTRALITY_RESUME_FROM=<uri>` in every task's environment without asking
  the controller per task (a job script can also read the Comment itself). The job keeps its id.
- signal: `scancel --signal=SIG` (every step: slurmstepd signals its tasks) and then
  `scancel --signal=SIG --batch` (the batch script's shell, not what it started). Never
  `--full`: it also signals the `srun` in the batch script, and srun answers TERM or HUP by
  killing its step and keeps a first INT to itself (docs/jobs.md, "Asked for a checkpoint").
  A job that is not RUNNING gets nothing: PermanentError.
- taint: Slurm has no taints; the key becomes a node feature (`sinfo -o %f`), a marker that
  repels nothing. Keeping work off a node is `drain`.
- run_on_nodes: one task per node via `sbatch --nodelist … --wrap 'srun …'`, output in
  `output_dir` (shared with the nodes); drained nodes are opened for that job only. The job asks
  for the nodes' GPUs (`--gres=gpu:N`: `gpus_per_node`, or every GPU their GRES shows), so a
  benchmark measures them all and Slurm's cgroups let it see them.
"""

from __future__ import annotations

import math
import re
import shlex
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from actions.adapters.base import RunResult, adapter
from actions.adapters.jobids import parse_job_id
from actions.adapters.settings import SlurmSettings
from actions.adapters.slurm_cli import (
    SlurmCli,
    exit_status,
    expand_nodes,
    hostlist_of,
    parse_nodes,
)
from actions.adapters.slurm_window import maintenance_window
from actions.errors import PermanentError, TemporaryError
from schemas.slurm import SLURM_FINISHED, slurm_job_word

RESUME_PREFIX = "centrality-resume="
# Node states (sinfo %T) in which a node takes no job: down, drained or draining, failed,
# unregistered, not yet in the cluster.
UNUSABLE = ("down", "drain", "fail", "inval", "unk", "future")


@adapter("slurm")
class SlurmAdapter:
    name = "slurm"

    def __init__(self, settings: SlurmSettings | None = None) -> None:
        self.settings = settings or SlurmSettings()
        self.cli = SlurmCli(self.settings)

    def requeue(
        self, job_id: str, *, checkpoint_uri: str | None, exclude: Sequence[str] = ()
    ) -> dict[str, Any]:
        job = self._local_id(job_id)
        fields = self.cli.job(job)
        if slurm_job_word(fields.get("JobState")) == "CANCELLED":
            # Slurm requeues a cancelled job as readily as a failed one: a stale decision
            # would bring back what someone ended on purpose.
            raise PermanentError(f"job {job} was cancelled: Centrality does not bring it back")
        excluded = self._exclusions(job, fields, exclude) if exclude else None
        # Held while its resume point and exclusions are set: a job requeued while it ran may
        # start again within the second, before them (seen on 22.05: it started from scratch).
        self.cli.run("scontrol", "requeuehold", job)
        fields = self._wait_state(job, {"PENDING"}, self.settings.requeue_pending_timeout_s)
        update = ["scontrol", "update", f"jobid={job}", "StartTime=now"]
        if checkpoint_uri is not None:
            update.append(f"Comment={RESUME_PREFIX}{checkpoint_uri}")
        elif fields.get("Comment", "").startswith(RESUME_PREFIX):
            # From scratch: an earlier requeue's checkpoint must not be picked up again.
            update.append("Comment=")
        if excluded is not None:
            update.append(f"ExcNodeList={hostlist_of(excluded)}")
        self.cli.run(*update)
        time.sleep(self.settings.requeue_release_delay_s)
        self.cli.run("scontrol", "release", job)
        done: dict[str, Any] = {
            "scheduler": self.name,
            "job_id": job_id,
            "checkpoint_uri": checkpoint_uri,
            "action": "requeued",
        }
        if excluded is not None:
            done |= {"excluded": sorted(expand_nodes(exclude)), "exc_node_list": excluded}
        return done

    def reboot(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        if not reason.strip():
            raise PermanentError("Slurm needs a reason to reboot")
        argv = ["scontrol", "reboot", *self.settings.reboot_args, f"reason={reason}"]
        self.cli.run(*argv, hostlist_of(nodes))
        return {"scheduler": self.name, "rebooting": list(nodes), "reason": reason}

    def _exclusions(self, job: str, fields: Mapping[str, str], exclude: Sequence[str]) -> list[str]:
        """The job's excluded nodes with `exclude` added, once sure the job still fits the
        usable nodes of its partition (PermanentError otherwise: it is not requeued)."""
        known = fields.get("ExcNodeList", "(null)")
        excluded = sorted(
            {*expand_nodes(exclude), *(expand_nodes([known]) if known != "(null)" else ())}
        )
        # NumNodes is `2`, or a range (`2-4`) for a job that can start on fewer.
        least = re.match(r"\d+", fields.get("NumNodes", ""))
        needed = int(least[0]) if least else 1
        partition = fields.get("Partition", "")
        listed = self.cli.run("sinfo", "-h", "-N", "-p", partition, "-o", "%N|%T|%E|%f")
        usable = [
            node
            for node, (state, _) in parse_nodes(listed).items()
            if not state.startswith(UNUSABLE) and node not in excluded
        ]
        if len(usable) < needed:
            raise PermanentError(
                f"job {job} needs {needed} node(s); partition {partition} has {len(usable)} "
                f"usable once {hostlist_of(excluded)} are excluded: not requeued"
            )
        return excluded

    def cancel(self, job_id: str, *, reason: str) -> dict[str, Any]:
        job = self._local_id(job_id)
        # scancel of a job already over answers "already completing or completed": done anyway.
        self.cli.run("scancel", job)
        return {"scheduler": self.name, "job_id": job_id, "action": "cancelled", "reason": reason}

    def release(self, job_id: str) -> dict[str, Any]:
        job = self._local_id(job_id)
        self.cli.run("scontrol", "release", job)
        return {"scheduler": self.name, "job_id": job_id, "action": "released"}

    def signal(self, job_id: str, *, signal: str) -> dict[str, Any]:
        job = self._local_id(job_id)
        # scancel answers a finished job "Invalid job id" and a pending one "try again later"
        # (temporary to `classify`): neither has a process to write a checkpoint now.
        state = slurm_job_word(self.cli.job(job).get("JobState"))
        if state != "RUNNING":
            raise PermanentError(f"job {job_id} is {state}, not running: no {signal} sent")
        self.cli.run("scancel", f"--signal={signal}", job)
        self.cli.run("scancel", f"--signal={signal}", "--batch", job)
        return {
            "scheduler": self.name,
            "job_id": job_id,
            "signal": signal,
            "action": "signalled",
            "to": ["steps", "batch script"],
        }

    def drain(self, nodes: Sequence[str], *, reason: str) -> dict[str, Any]:
        if not reason.strip():
            raise PermanentError("Slurm needs a reason to drain")
        self.cli.run(
            "scontrol",
            "update",
            f"nodename={hostlist_of(nodes)}",
            "state=drain",
            f"reason={reason}",
        )
        return {"scheduler": self.name, "drained": list(nodes), "reason": reason}

    def resume(self, nodes: Sequence[str]) -> dict[str, Any]:
        # Resuming a node that is not drained is an error in Slurm; here it is already done.
        drained = [
            n
            for n, (state, _) in self.cli.nodes(list(nodes)).items()
            if state in ("drained", "draining", "drain")
        ]
        if drained:
            self.cli.run("scontrol", "update", f"nodename={hostlist_of(drained)}", "state=resume")
        return {
            "scheduler": self.name,
            "resumed": drained,
            "already_up": sorted(set(expand_nodes(nodes)) - set(drained)),
        }

    def taint(self, nodes: Sequence[str], *, key: str, reason: str) -> dict[str, Any]:
        for node in expand_nodes(nodes):
            self._set_features(node, [*self.cli.features(node), key])
        return {"scheduler": self.name, "tainted": list(nodes), "key": key, "as": "feature"}

    def untaint(self, nodes: Sequence[str], *, key: str) -> dict[str, Any]:
        for node in expand_nodes(nodes):
            self._set_features(node, [f for f in self.cli.features(node) if f != key])
        return {"scheduler": self.name, "untainted": list(nodes), "key": key}

    def run_on_nodes(
        self,
        nodes: Sequence[str],
        command: Sequence[str],
        *,
        env: Mapping[str, str],
        timeout_s: float,
    ) -> RunResult:
        if not nodes or not command:
            raise PermanentError("run_on_nodes needs nodes and a command")
        out_dir = self.settings.output_dir
        out_dir.mkdir(parents=True, exist_ok=True)
        with maintenance_window(self.cli, nodes, timeout_s) as reservation:
            argv = [
                "sbatch",
                "--parsable",
                "--job-name=centrality-run",
                f"--nodelist={hostlist_of(nodes)}",
                f"--nodes={len(expand_nodes(nodes))}",
                "--ntasks-per-node=1",
                f"--time={max(1, math.ceil(timeout_s / 60))}",
                f"--output={out_dir}/%j.out",
                f"--error={out_dir}/%j.err",
            ]
            argv += [f"--partition={self.settings.partition}"] if self.settings.partition else []
            gpus = self._gpus_per_node(nodes)
            argv += [f"--gres=gpu:{gpus}"] if gpus else []
            argv += [f"--reservation={reservation}"] if reservation else []
            # The submitting environment travels with the job (sbatch's default --export=ALL).
            job = self.cli.run(*argv, "--wrap", f"srun {shlex.join(command)}", env=dict(env))
            job = job.strip().split(";")[0]
            try:
                fields = self._wait_state(job, SLURM_FINISHED, timeout_s)
            except TemporaryError:
                self.cli.run("scancel", job)
                raise
        return RunResult(
            exit_code=exit_status(fields),
            stdout=_read(out_dir / f"{job}.out"),
            stderr=_read(out_dir / f"{job}.err"),
            job_id=f"slurm/{self.settings.cluster}/{job}",
        )

    def job_logs(self, job_id: str, *, tail_lines: int = 200) -> str:
        path = self.cli.job(self._local_id(job_id)).get("StdOut", "")
        try:
            with Path(path).open(errors="replace") as f:
                return "".join(deque(f, maxlen=tail_lines))
        except OSError as e:
            raise PermanentError(f"log {path!r} of {job_id} is not readable here: {e}") from e

    def _gpus_per_node(self, nodes: Sequence[str]) -> int:
        if self.settings.gpus_per_node is not None:
            return self.settings.gpus_per_node
        # One count for every node of the job: the fewest, so it fits each of them.
        return min(self.cli.gpus(expand_nodes(nodes)).values(), default=0)

    def _local_id(self, job_id: str) -> str:
        cluster, job = parse_job_id(job_id, "slurm", 2)
        if cluster != self.settings.cluster or not re.fullmatch(r"\d+(_\d+)?", job):
            raise PermanentError(
                f"{job_id!r} is not a job of Slurm cluster {self.settings.cluster!r}"
            )
        return job

    def _wait_state(
        self, job: str, states: frozenset[str] | set[str], timeout_s: float
    ) -> dict[str, str]:
        deadline = time.monotonic() + timeout_s
        while True:
            fields = self.cli.job(job)
            if slurm_job_word(fields.get("JobState")) in states:
                return fields
            if time.monotonic() >= deadline:
                raise TemporaryError(
                    f"Slurm job {job} is {fields.get('JobState')}, not {sorted(states)}"
                )
            time.sleep(self.settings.poll_interval_s)

    def _set_features(self, node: str, features: list[str]) -> None:
        value = ",".join(sorted(set(features)))
        self.cli.run(
            "scontrol",
            "update",
            f"nodename={node}",
            f"AvailableFeatures={value}",
            f"ActiveFeatures={value}",
        )


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except FileNotFoundError:
        return ""
