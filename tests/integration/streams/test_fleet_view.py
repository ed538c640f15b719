"""`centrality nodes` and `jobs` show exactly the state the rules decide on: with two streams
workers sharing the partitions, every node and job of a simulated day is listed, and each
listed status is the view of the state that worker wrote to its table (the changelog), also
after one of the workers is killed and the other takes its partitions over."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from centrality.fleet import Fleet, read_fleet
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from schemas.events import NodeFactsObserved
from schemas.runtime.settings import KafkaSettings
from schemas.topics import topic_name
from streams.brain.views import job_status, node_status, restart_budget
from streams.history.lag import group_lag
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.node import Node
from streams.state.training_job import TrainingJob
from tests.integration.streams.test_changelog_refused import set_max_message_bytes
from tests.integration.streams.worker import StreamsWorker, emit, table_contents

pytestmark = pytest.mark.integration

NODES, JOBS = 60, 8


def views_of_the_tables(app_id: str, kafka: KafkaSettings) -> tuple[dict[str, Any], dict[str, Any]]:
    engine = RuleEngine.load(StreamsSettings().rule_modules, {})
    nodes = {
        k: node_status(Node.model_validate(v))
        for k, v in table_contents(app_id, "nodes", kafka).items()
    }
    jobs = {
        k: job_status(job, restart_budget(engine, job))
        for k, job in (
            (k, TrainingJob.model_validate(v))
            for k, v in table_contents(app_id, "jobs", kafka).items()
        )
    }
    return nodes, jobs


def agrees(fleet: Fleet, app_id: str, kafka: KafkaSettings) -> list[str]:
    """Where the listed fleet and the tables' views differ (empty: they agree)."""
    nodes, jobs = views_of_the_tables(app_id, kafka)
    listed_nodes = {k: s.payload for k, s in fleet.nodes.items()}
    listed_jobs = {k: s.payload for k, s in fleet.jobs.items()}
    problems = [
        f"node {k}"
        for k in nodes.keys() | listed_nodes.keys()
        if nodes.get(k) != listed_nodes.get(k)
    ]
    problems += [
        f"job {k}" for k in jobs.keys() | listed_jobs.keys() if jobs.get(k) != listed_jobs.get(k)
    ]
    return sorted(problems)


def period(model: ClusterModel, from_s: float, to_s: float) -> list[Any]:
    """What the simulated cluster sent from `from_s` to `to_s`, tick by tick."""
    step = model.config.interval_s
    return [
        e for i in range(int((to_s - from_s) / step) + 1) for e in model.tick(from_s + i * step)
    ]


def settle(
    kafka: KafkaSettings,
    app_id: str,
    workers: list[StreamsWorker],
    done: Callable[[Fleet], bool] = lambda fleet: True,
) -> Fleet:
    """Until the listing agrees with the tables and shows what `done` waits for: the two agree
    at moments when some events are not folded yet too."""
    deadline, problems = time.monotonic() + 120, ["not read yet"]
    while problems:
        for w in workers:
            w.check()
        fleet = asyncio.run(read_fleet(kafka))
        problems = agrees(fleet, app_id, kafka) if len(fleet.nodes) == NODES else ["nodes missing"]
        if not problems and not done(fleet):
            problems = ["not folded that far yet"]
        if time.monotonic() > deadline:
            raise AssertionError(f"the listing does not match the tables: {problems[:10]}")
        time.sleep(1.0)
    return fleet


def test_two_workers_publish_exactly_what_their_tables_hold(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], tmp_path: Path, unique: str
) -> None:
    config = SimConfig(
        nodes=NODES, gpus=2, jobs=JOBS, interval_s=30.0, xid_nodes=3, crash_jobs=2, seed=7
    )
    model = ClusterModel(config, datetime.now(UTC) - timedelta(minutes=30))
    first_half = period(model, 0.0, 600.0)
    workers = [
        StreamsWorker(
            {**worker_env, "CENTRALITY_STREAMS_DATA_DIR": str(tmp_path / f"w{i}")},
            tmp_path / f"run{i}",
        )
        for i in range(2)
    ]
    app_id = worker_env["CENTRALITY_STREAMS_APP_ID"]
    try:
        for w in workers:
            w.start()
        asyncio.run(emit(kafka_settings, first_half))
        fleet = settle(
            kafka_settings,
            app_id,
            workers,
            lambda f: all(f.nodes[n].payload.state == "draining" for n in model.xid_nodes),
        )
        assert len(fleet.jobs) >= JOBS
        xid_nodes = [fleet.nodes[n].payload for n in model.xid_nodes]
        assert all(p.state == "draining" and "Xid 79" in (p.why or "") for p in xid_nodes)

        # One worker dies: the other takes its partitions over, folds on, and publishes.
        workers[1].kill9()
        rest = period(model, 630.0, 1200.0)
        asyncio.run(emit(kafka_settings, rest))
        settle(kafka_settings, app_id, workers[:1])
        listed = subprocess.run(
            [str(Path(sys.executable).with_name("centrality")), "nodes", "--json"],
            env={**os.environ, **worker_env},
            capture_output=True,
            text=True,
            check=True,
        )
        assert len(json.loads(listed.stdout)) == NODES
    finally:
        for w in workers:
            w.stop()


def committed(kafka: KafkaSettings, app_id: str) -> None:
    """Until the worker has committed every record of the fleet's topics."""
    topics = [topic_name(t, kafka) for t in ("nodes", "gpu", "jobs")]
    deadline = time.monotonic() + 60
    while sum(t.lag for t in asyncio.run(group_lag(kafka, app_id, topics))) > 0:
        assert time.monotonic() < deadline, "the worker did not commit what it folded"
        time.sleep(0.5)


def test_a_state_whose_status_the_broker_refuses_is_never_committed_past(
    kafka_settings: KafkaSettings, worker_env: dict[str, str], tmp_path: Path, unique: str
) -> None:
    """Statuses do not hold the agent (streams.faust.write_behind): the state waits for them
    instead. One refused for good stops the worker before any commit past it and before its state
    reaches the changelog, so the restarted worker folds that message again and publishes it.
    New GPU facts change a node's status and nothing else, and nothing later changes it again:
    were a state written before its status, the restarted worker would fold the facts again to
    no change, and list the old GPU model for good."""
    config = SimConfig(nodes=NODES, gpus=2, jobs=JOBS, interval_s=30.0, xid_nodes=3, seed=11)
    model = ClusterModel(config, datetime.now(UTC) - timedelta(minutes=30))
    worker = StreamsWorker(worker_env, tmp_path / "run")
    app_id = worker_env["CENTRALITY_STREAMS_APP_ID"]
    status = topic_name("status", kafka_settings)
    first = period(model, 0.0, 300.0)
    try:
        worker.start()
        asyncio.run(emit(kafka_settings, first))
        settle(kafka_settings, app_id, [worker])
        committed(kafka_settings, app_id)  # a restart folds none of `first` again
        asyncio.run(set_max_message_bytes(kafka_settings, status, "64"))
        later = [
            e.model_copy(
                update={
                    "event_id": uuid.uuid4(),
                    "occurred_at": e.occurred_at + timedelta(minutes=10),
                    "payload": e.payload.model_copy(update={"gpu_model": "NVIDIA H200"}),
                }
            )
            for e in first
            if isinstance(e, NodeFactsObserved)
        ]
        assert len(later) == NODES
        asyncio.run(emit(kafka_settings, later))
        deadline = time.monotonic() + 60
        while worker.process.pid() is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert worker.process.pid() is None, "the worker went on past a refused status"
        assert "output_undelivered" in worker.process.log_file.read_text()
        asyncio.run(set_max_message_bytes(kafka_settings, status, "1048588"))
        worker.start()
        deadline, models = time.monotonic() + 120, set()
        while models != {"NVIDIA H200"} and time.monotonic() < deadline:
            fleet = settle(kafka_settings, app_id, [worker])  # the listing is the tables' view
            models = {s.payload.gpu_model for s in fleet.nodes.values()}
            time.sleep(0.5)
        assert models == {"NVIDIA H200"}
    finally:
        worker.stop()
