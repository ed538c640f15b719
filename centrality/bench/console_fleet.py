"""A fleet's statuses made up for the console's benchmark and tests: nodes in every state, with
reasons, rules, GPU models, partitions and incidents, and jobs on them; published on the status
topic as the streams app publishes them."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name

MODELS = ("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
# One node in a hundred is out, in the ways the states name.
TROUBLE = {
    1: ("quarantined", "fatal_xid", "Xid 79 (GPU has fallen off the bus) on GPU 3"),
    2: ("held", "fatal_xid", "held by silence s-0000000001 until 2026-11-29T02:00:00Z"),
    3: ("quarantined", "operator/alice", "flaky NVLink, checking by hand"),
    4: ("draining", "repeated_failures_on_node_set", "5 failures on one node set"),
    5: ("unreachable", "heartbeat_lost", "no heartbeat for 180 s"),
    6: ("benchmarking", "fatal_xid", "Xid 48 (double-bit ECC) on GPU 2"),
}


def node_status(i: int, now: datetime, clusters: int = 2) -> NodeStatusChanged:
    cluster = f"c{i % clusters}"
    state, rule, why = TROUBLE.get(i % 100, ("in_service", None, None))
    payload: dict[str, Any] = {
        "state": state,
        "since": now - timedelta(minutes=i % 90),
        "why": why,
        "by": rule,
        "gpus": 8,
        "gpu_model": MODELS[i % len(MODELS)],
        "partitions": (f"p{i % 4}",),
        "jobs": (f"slurm/{cluster}/{i // 8}",),
        "jobs_running": 1,
        "incident": f"inc-{cluster}-{i % 100}" if state != "in_service" else None,
    }
    return NodeStatusChanged(
        source="streams",
        cluster=cluster,
        subject=f"gpu-{i:05d}",
        occurred_at=now,
        payload=payload,
    )


def job_status(j: int, now: datetime, clusters: int = 2) -> JobStatusChanged:
    cluster = f"c{(j * 8) % clusters}"
    return JobStatusChanged(
        source="streams",
        cluster=cluster,
        subject=f"slurm/{cluster}/{j}",
        occurred_at=now,
        payload={
            "state": "RUNNING",
            "attempt": 1,
            "restarts_left": 3,
            "checkpoint_step": 100 * j,
            "checkpoint_uri": f"s3://ckpt/{j}",
            "checkpoint_at": now - timedelta(minutes=5),
            "nodes": tuple(f"gpu-{n:05d}" for n in range(j * 8, j * 8 + 8)),
            "nodes_count": 8,
        },
    )


def fleet(nodes: int, now: datetime) -> list[Event]:
    statuses: list[Event] = [node_status(i, now) for i in range(nodes)]
    return statuses + [job_status(j, now) for j in range(max(1, nodes // 8))]


async def publish(kafka: KafkaSettings, events: list[Event]) -> None:
    producer = kafka_clients.producer(kafka, client_id=f"{kafka.client_id}-console-fleet")
    await producer.start()
    try:
        topic = topic_name("status", kafka)
        for event in events:
            await producer.send(topic, value=encode(event), key=event.key)
        await producer.flush()
    finally:
        await producer.stop()
