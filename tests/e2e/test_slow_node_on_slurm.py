"""Slow but alive (issue 43) on the real stack and a real slurmctld: a job on two nodes, one of
them slowing it, is asked for a checkpoint through its hook (SIGUSR1); the node is drained only
once that checkpoint is written, and the job is requeued from it without the node.

The job is a training loop as docs/jobs.md shows one: a step every half second, a checkpoint
every `EVERY` steps, and one at the end of the current step when asked; a requeued run resumes
from the checkpoint Centrality names (CENTRALITY_RESUME_FROM, through the project's prolog).
The slow node is a fixture: the test sends the job's step times, one host at twice the other's.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hostlist import expand_hostlist

from centrality.pipeline import Pipeline
from schemas.envelope import utcnow
from schemas.events import StepTimesObserved
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.history.query import rows_for
from streams.history.settings import ClickHouseSettings
from tests.support.slurm import SlurmCluster
from tests.support.until import until

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(420)]

EVERY = 200  # steps between the job's own checkpoints: 100 s, longer than the story
TRAIN = f"""#!{sys.executable}
import os, signal, time
from collectors.checkpoints.notify import notify_checkpoint

asked = False
def ask(signum, frame):
    global asked
    asked = True
signal.signal(signal.SIGUSR1, ask)

ckpt = os.path.join(os.environ["OUT_DIR"], "ckpt-" + os.environ["SLURM_JOB_ID"])
os.makedirs(ckpt, exist_ok=True)
step = 0
if os.environ.get("CENTRALITY_RESUME_FROM"):
    step = int(open(os.environ["CENTRALITY_RESUME_FROM"].removeprefix("file://")).read())
    print("resumed from step", step, flush=True)
while step < 100_000:
    time.sleep(0.5)
    step += 1
    if step % {EVERY} == 0 or asked:
        path = os.path.join(ckpt, f"step-{{step}}")
        open(path, "w").write(str(step))
        notify_checkpoint(None, step, "file://" + path)
        print("saved step", step, "(asked)" if asked else "", flush=True)
        asked = False
"""
RULES = {"slow_node": {"evidence_s": 4, "restart_s": 5, "checkpoint_write_s": 1,
                       "ask_checkpoint": True}}  # fmt: skip


def history(clickhouse: ClickHouseSettings, *subjects: str) -> list[tuple[str, datetime, Any]]:
    """The job's events and the slow node's (the node decides its quarantine)."""
    rows = rows_for(clickhouse, list(subjects))
    return [(r.type, r.occurred_at, json.loads(r.payload)) for r in rows]


def step_times(
    kafka: KafkaSettings, cluster: str, job: str, hosts: dict[str, float], stop: threading.Event
) -> None:
    """The job's hosts' step times every 2 s, as the log tailer would summarise them."""

    async def send() -> None:
        async with Emitter(kafka) as emitter:
            while not stop.is_set():
                for host, seconds in hosts.items():
                    payload = {"node": host, "steps": 4, "median_s": seconds, "max_s": seconds}
                    await emitter.emit(
                        StepTimesObserved(
                            source="test",
                            cluster=cluster,
                            subject=job,
                            occurred_at=utcnow(),
                            payload=payload,
                        )
                    )
                await asyncio.sleep(2.0)

    asyncio.run(send())


def test_a_slow_node_is_drained_at_the_checkpoint_the_job_was_asked_for(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    slurm_cluster: SlurmCluster,
    tmp_path: Path,
) -> None:
    cluster = slurm_cluster.name
    env = {
        **worker_env,
        **slurm_cluster.adapter_env(),
        "CENTRALITY_ACTIONS_ADAPTER": "slurm",
        "CENTRALITY_ACTIONS_FLEET_SIZE": json.dumps({cluster: 3}),
        "CENTRALITY_ACTIONS_QUARANTINE_MAX_SHARE": "0.7",
        "CENTRALITY_STREAMS_RULE_CONFIG": json.dumps(RULES),
        "CENTRALITY_SLURM_WATCH_CLUSTER": cluster,
        "CENTRALITY_SLURM_WATCH_CONF": str(slurm_cluster.conf),
        "CENTRALITY_SLURM_WATCH_POLL_S": "0.5",
        "CENTRALITY_SLURM_WATCH_STATE_FILE": str(tmp_path / "watch-state.json"),
    }
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    script.chmod(0o755)
    out = slurm_cluster.output_dir / "train-%j.out"
    stop = threading.Event()
    try:
        with Pipeline(env, tmp_path / "logs", ("streams", "actions", "sink", "watch slurm")) as p:
            local = slurm_cluster.sbatch(
                "-N", "2", "--requeue", "--open-mode=append", f"--output={out}", str(script),
                env={**slurm_cluster.env(), **worker_env, "OUT_DIR": str(tmp_path)},
            )  # fmt: skip
            job = f"slurm/{cluster}/{local}"
            slurm_cluster.wait_job(local, {"RUNNING"})
            fast, slow = expand_hostlist(slurm_cluster.job_field(local, "NodeList"))
            sender = threading.Thread(
                target=step_times,
                args=(kafka_settings, cluster, job, {fast: 1.0, slow: 2.0}, stop),
            )
            sender.start()
            until(
                "the job restarted from the checkpoint it was asked for",
                lambda: "resumed from step" in _output(slurm_cluster, local),
                p,
                timeout_s=180,
                seen=lambda: (
                    [r for r in history(clickhouse_settings, job) if r[0] != "StepTimesObserved"],
                    _output(slurm_cluster, local),
                ),
            )
            stop.set()
            sender.join()
            rows = history(clickhouse_settings, job, slow)
            drained = slurm_cluster.node_field(slow, "%T|%E")
            excluded = slurm_cluster.job_field(local, "ExcNodeList")
            report = subprocess.run(
                [str(Path(sys.executable).with_name("centrality")), "report", "--since", "1h",
                 "--no-store", "--json"],
                env=env, capture_output=True, check=True, text=True,
            )  # fmt: skip
    finally:
        stop.set()
        slurm_cluster.tidy()

    [ask] = [p for t, _, p in rows if t == "RequestCheckpoint"]
    assert ask["signal"] == "USR1" and ask["nodes"] == [slow]
    assert ask["timing"]["chosen"] == "ask" and ask["timing"]["saved_gpu_h"] > 0
    [(asked_at, saved)] = [(at, p) for t, at, p in rows if t == "CheckpointSaved"]
    [(drained_at, drain)] = [(at, p) for t, at, p in rows if t == "QuarantineNodes"]
    assert drain["nodes"] == [slow] and drain["move_jobs"]
    assert drained_at >= asked_at  # only once the checkpoint was written
    restarts = [p for t, _, p in rows if t == "RestartJob"]
    if len(restarts) != 1:
        told = ("Job", "Restart", "Action")
        pytest.fail("\n".join(f"{at} {t} {p}" for t, at, p in rows if t.startswith(told)))
    [restart] = restarts
    assert restart["checkpoint_uri"] == saved["uri"] and restart["exclude_nodes"] == [slow]
    assert f"resumed from step {saved['step']}" in _output(slurm_cluster, local)
    assert "DRAIN" in drained.upper() and slow in excluded
    timed = json.loads(report.stdout)["timed"]
    assert timed["ask"]["decisions"] == 1 and timed["ask"]["saved_gpu_h"] > 0


def _output(cluster: SlurmCluster, local: str) -> str:
    path = cluster.output_dir / f"train-{local}.out"
    return path.read_text() if path.exists() else ""
