"""Every long-running worker, as a process, serves /metrics, /healthz and /readyz, and its
counters move while a story runs through the pipeline (streams, actions, sink, node agent, log
tailer, Kubernetes watcher)."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from centrality.pipeline import Pipeline
from schemas.envelope import Event
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.testing import checkpoint
from tests.factories import exited
from tests.ports import free_ports
from tests.support.kube_api import KubeApiServer
from tests.support.kube_rbac import KubeWorkers
from tests.support.metrics import Scrape, scrape, status, wait_until

pytestmark = pytest.mark.e2e

WORKERS = ("streams", "actions", "sink", "agent", "tail", "watch k8s")


async def _story(settings: KafkaSettings, events: list[Event]) -> None:
    async with Emitter(settings) as emitter:
        for event in events:
            await emitter.emit(event)
    producer = AIOKafkaProducer(bootstrap_servers=settings.bootstrap)
    await producer.start()
    try:  # not JSON: every consumer of `jobs` that decodes dead-letters it as `malformed`
        await producer.send_and_wait(topic_name("jobs", settings), b"{not json", key=b"x")
    finally:
        await producer.stop()


def test_each_worker_serves_metrics_that_move_during_a_story(
    kafka_settings: KafkaSettings,
    worker_env: dict[str, str],
    kube_api: KubeApiServer,
    kube_workers: KubeWorkers,
    unique: str,
    tmp_path: Path,
) -> None:
    ports = dict(
        zip(
            ("streams", "actions", "sink", "agent", "tail", "watch-k8s"), free_ports(6), strict=True
        )
    )
    logs = tmp_path / "joblogs"
    logs.mkdir()
    node, cluster = f"gpu-{unique}", f"c{unique}"
    env = {
        **worker_env,
        "CENTRALITY_METRICS_PORTS": json.dumps(ports),
        "CENTRALITY_EMITTER_SPOOL_DIR": str(tmp_path / "spool"),
        "CENTRALITY_AGENT_BACKEND": "fake",
        "CENTRALITY_AGENT_NODE": node,
        "CENTRALITY_AGENT_CLUSTER": cluster,
        "CENTRALITY_AGENT_FAKE_GPUS": "2",
        # A fatal XID 20 s in: after the first scrape, so the decision is seen happening.
        "CENTRALITY_AGENT_FAKE_FAULTS": json.dumps(["xid:0:20:79"]),
        "CENTRALITY_AGENT_INTERVAL_S": "1",
        "CENTRALITY_AGENT_HEARTBEAT_INTERVAL_S": "1",
        "CENTRALITY_AGENT_KERNEL_LOG": "none",
        "CENTRALITY_TAIL_PATHS": json.dumps([str(logs / "slurm-*.out")]),
        "CENTRALITY_TAIL_STATE_FILE": str(tmp_path / "tail.json"),
        "CENTRALITY_TAIL_CLUSTER": cluster,
        "CENTRALITY_TAIL_POLL_S": "0.5",
        "CENTRALITY_K8S_WATCH_KUBECONFIG": str(kube_workers.watcher),
        "CENTRALITY_K8S_WATCH_CLUSTER": cluster,
        "CENTRALITY_K8S_WATCH_STATE_FILE": str(tmp_path / "k8s.json"),
    }
    job = f"slurm/{cluster}/{unique}"
    start = datetime.now(UTC) - timedelta(minutes=5) - datetime(2026, 1, 1, tzinfo=UTC)
    at_s = start.total_seconds()
    story: list[Event] = [
        checkpoint(1200, subject=job, at_s=at_s),
        exited("FAILED", subject=job, at_s=at_s + 10),
    ]
    with Pipeline(env, tmp_path / "logs", WORKERS) as pipeline:
        for worker, port in ports.items():
            wait_until(
                f"{worker} ready",
                lambda port=port: status(port, "/readyz")[0] == 200,
                120.0,
                pipeline.check,
            )
            assert status(port, "/healthz")[0] == 200
        before = {worker: scrape(port) for worker, port in ports.items()}

        asyncio.run(_story(kafka_settings, story))
        # A node joins: news on the watch, so the K8s watcher reconciles (its "poll").
        kube_api.node(node)
        (logs / "slurm-4242.out").write_text("epoch 1\nTraining Complete\n")

        def moved(worker: str, name: str, **labels: str) -> None:
            wait_until(
                f"{worker}: {name}{labels} to grow",
                lambda: (
                    scrape(ports[worker]).value(name, **labels)
                    > before[worker].value(name, **labels)
                ),
                90.0,
                pipeline.check,
            )

        jobs, triggers = topic_name("jobs", kafka_settings), topic_name("triggers", kafka_settings)
        moved("streams", "centrality_events_in_total", topic=jobs, type="JobExited")
        moved("streams", "centrality_decisions_total", rule="restart_incomplete_exit")
        moved("streams", "centrality_decisions_total", rule="fatal_xid", type="QuarantineNodes")
        moved("streams", "centrality_events_out_total", topic=triggers, type="RestartJob")
        moved("streams", "centrality_dead_letters_total", reason="malformed")
        moved("streams", "centrality_processing_seconds_count", stage="streams_message")
        moved("streams", "centrality_table_entries", table="jobs")

        moved("actions", "centrality_events_in_total", topic=triggers, type="RestartJob")
        moved("actions", "centrality_actions_total", action="restart_job", outcome="succeeded")
        # One node in the fleet: draining it is more than the breaker's 10 %.
        moved("actions", "centrality_breaker_refusals_total", action="quarantine_nodes")
        moved("actions", "centrality_actions_total", action="quarantine_nodes", outcome="refused")
        moved("actions", "centrality_events_out_total", type="ActionSucceeded")
        moved("actions", "centrality_processing_seconds_count", stage="actions_trigger")

        moved("sink", "centrality_events_in_total", type="ActionSucceeded")
        moved("sink", "centrality_events_in_total", type="DeadLetter")
        moved("sink", "centrality_processing_seconds_count", stage="sink_insert")

        moved("agent", "centrality_events_out_total", type="GpuSampled")
        moved("agent", "centrality_events_out_total", type="GpuXidObserved")
        moved("tail", "centrality_polls_total", collector="tailer", outcome="ok")
        moved("tail", "centrality_events_out_total", type="LogSignalDetected")
        moved("watch-k8s", "centrality_polls_total", collector="k8s", outcome="ok")

        # Lag is sampled (every 10-15 s) per assigned partition of each consumer group.
        for worker in ("streams", "actions", "sink"):
            wait_until(
                f"{worker}: consumer lag",
                lambda worker=worker: "centrality_consumer_lag" in scrape(ports[worker]).names(),
                60.0,
                pipeline.check,
            )
        after: dict[str, Scrape] = {worker: scrape(port) for worker, port in ports.items()}
        for worker, port in ports.items():
            code, body = status(port, "/readyz")
            assert code == 200, (worker, body)
            assert "centrality_heartbeat_age_seconds" in after[worker].names()
            assert after[worker].value("centrality_heartbeat_age_seconds") < 30
