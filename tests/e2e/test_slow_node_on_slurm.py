"""Slow but alive (issue 43) on the real stack and a real slurmctld: a job on two nodes, one of
them slowing it, is asked for a checkpoint through its hook (SIGUSR1); the node is drained only
once that checkpoint is written, and the job is requeued from it without the node.

The job is a training loop as docs/jobs.md shows one: a step every half second, a checkpoint
every `EVERY` steps, and one at the end of the current step when asked; a requeued run resumes
from the checkpoint Centrality names (CENTRALITY_RESUME_FROM, through the project's prolog).
The slow node is a fixture, told one of two ways:

- `steps`: the test sends the job's step times, one host at twice the other's;
- `collectives`: the job writes NCCL Inspector's records (one per step and host, as the plugin
  writes them to its dump directory), the slow host's AllReduce the shortest (it starts last),
  and a `centrality tail` per host reads its own; the job logs no step times.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
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
# What the Inspector plugin would write: per host a file of records, its second host's AllReduce
# 2 ms (it starts last), the other's 40 ms, until the job is requeued without it.
INSPECTOR = """
from hostlist import expand_hostlist
hosts = expand_hostlist(os.environ["SLURM_JOB_NODELIST"])
dump = os.path.join(os.environ["OUT_DIR"], "nccl-inspector-" + os.environ["SLURM_JOB_ID"])
def inspect(step):
    if os.environ.get("EVIDENCE") != "collectives":
        return
    for host in hosts:
        os.makedirs(os.path.join(dump, host), exist_ok=True)
        exec_us = 2000 if host == hosts[1] and not resumed else 40000
        header = {"id": "0x9e7a479f95a66c", "rank": hosts.index(host), "n_ranks": len(hosts),
                  "nnodes": len(hosts)}
        perf = {"coll": "AllReduce", "coll_sn": step, "coll_msg_size_bytes": 1 << 28,
                "coll_exec_time_us": exec_us, "coll_timing_source": "kernel_gpu"}
        record = {"header": header, "metadata": {"hostname": host}, "coll_perf": perf}
        with open(os.path.join(dump, host, "inspector.log"), "a") as f:
            f.write(json.dumps(record) + chr(10))
"""
TRAIN = f"""#!{sys.executable}
import json, os, signal, time
from collectors.checkpoints.notify import notify_checkpoint

asked = False
def ask(signum, frame):
    global asked
    asked = True
signal.signal(signal.SIGUSR1, ask)

ckpt = os.path.join(os.environ["OUT_DIR"], "ckpt-" + os.environ["SLURM_JOB_ID"])
os.makedirs(ckpt, exist_ok=True)
step = 0
resumed = bool(os.environ.get("CENTRALITY_RESUME_FROM"))
if resumed:
    step = int(open(os.environ["CENTRALITY_RESUME_FROM"].removeprefix("file://")).read())
    print("resumed from step", step, flush=True)
{INSPECTOR}
while step < 100_000:
    time.sleep(0.5)
    step += 1
    inspect(step)
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


@contextlib.contextmanager
def told_by_step_times(
    kafka: KafkaSettings, cluster: str, job: str, fast: str, slow: str, env: dict[str, str]
) -> Iterator[None]:
    stop = threading.Event()
    sender = threading.Thread(
        target=step_times, args=(kafka, cluster, job, {fast: 1.0, slow: 2.0}, stop)
    )
    sender.start()
    try:
        yield
    finally:
        stop.set()
        sender.join()


@contextlib.contextmanager
def told_by_inspector(
    kafka: KafkaSettings, cluster: str, job: str, fast: str, slow: str, env: dict[str, str]
) -> Iterator[None]:
    """A `centrality tail` per host, following that host's Inspector files (docs/events.md)."""
    out = Path(env["OUT_DIR"])
    tailers = [
        subprocess.Popen(
            [str(Path(sys.executable).with_name("centrality")), "tail"],
            env={
                **os.environ,
                **env,
                "CENTRALITY_TAIL_NODE": host,
                "CENTRALITY_TAIL_CLUSTER": cluster,
                "CENTRALITY_TAIL_PATHS": json.dumps([f"{out}/nccl-inspector-*/{host}/*.log"]),
                "CENTRALITY_TAIL_JOB_PATTERN": r"nccl-inspector-(?P<job>\d+)",
                "CENTRALITY_TAIL_STATE_FILE": str(out / f"tail-{host}.json"),
                "CENTRALITY_TAIL_POLL_S": "0.5",
                "CENTRALITY_TAIL_STEP_SUMMARY_S": "2",
            },
            stdout=(out / f"tail-{host}.log").open("ab"),
            stderr=subprocess.STDOUT,
        )
        for host in (fast, slow)
    ]
    try:
        yield
    finally:
        for tailer in tailers:
            tailer.terminate()
            tailer.wait(timeout=30)


@pytest.mark.parametrize(
    ("evidence", "told", "said"),
    [
        ("steps", told_by_step_times, "steps 2.00x the other hosts'"),
        ("collectives", told_by_inspector, "the other hosts wait for it at AllReduce: 38.0 ms"),
    ],
    ids=["steps", "collectives"],
)
def test_a_slow_node_is_drained_at_the_checkpoint_the_job_was_asked_for(
    evidence: str,
    told: Any,
    said: str,
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
    job_env = {**worker_env, "OUT_DIR": str(tmp_path), "EVIDENCE": evidence}
    quiet = ("StepTimesObserved", "CollectivesTimed")
    try:
        with Pipeline(env, tmp_path / "logs", ("streams", "actions", "sink", "watch slurm")) as p:
            local = slurm_cluster.sbatch(
                "-N", "2", "--requeue", "--open-mode=append", f"--output={out}", str(script),
                env={**slurm_cluster.env(), **job_env},
            )  # fmt: skip
            job = f"slurm/{cluster}/{local}"
            slurm_cluster.wait_job(local, {"RUNNING"})
            fast, slow = expand_hostlist(slurm_cluster.job_field(local, "NodeList"))
            with told(kafka_settings, cluster, job, fast, slow, job_env):
                until(
                    "the job restarted from the checkpoint it was asked for",
                    lambda: "resumed from step" in _output(slurm_cluster, local),
                    p,
                    timeout_s=180,
                    seen=lambda: (
                        [r for r in history(clickhouse_settings, job) if r[0] not in quiet],
                        _output(slurm_cluster, local),
                    ),
                )
            rows = history(clickhouse_settings, job, slow)
            drained = slurm_cluster.node_field(slow, "%T|%E")
            excluded = slurm_cluster.job_field(local, "ExcNodeList")
            report = subprocess.run(
                [str(Path(sys.executable).with_name("centrality")), "report", "--since", "1h",
                 "--no-store", "--json"],
                env=env, capture_output=True, check=True, text=True,
            )  # fmt: skip
    finally:
        slurm_cluster.tidy()

    [ask] = [p for t, _, p in rows if t == "RequestCheckpoint"]
    assert ask["signal"] == "USR1" and ask["nodes"] == [slow] and said in ask["reason"]
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
