"""One benchmark run's own names on the local stack, so runs never read each other's data: its
topics (a prefix), ClickHouse database, consumer groups, trigger key and scratch directory."""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import typer
from pydantic import SecretStr
from rich.console import Console

from centrality.pipeline import WORKERS
from centrality.stack.stack import Stack
from schemas.events import CheckpointSaved, JobExited
from schemas.runtime import kafka_clients
from schemas.runtime.emitter import Emitter
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.settings import KafkaSettings
from streams.history.client import connect
from streams.history.settings import ClickHouseSettings

# What each worker consumes of the catalog (the sink also reads the dead letters, which hostile
# input makes, so they are not part of "consumed"; the streams worker its own internal topics).
INPUTS = {
    "streams": ("jobs", "nodes", "gpu", "actions"),
    "actions": ("triggers",),
    "sink": ("jobs", "logs", "nodes", "gpu", "triggers", "actions"),
}

# The nodes of the story every bench sends first: the fleet listing counts them too.
STORY_NODES = ("hn-story-1", "hn-story-2")


def local_stack() -> tuple[Stack, Console]:
    """The local stack, started where it is not, and the console a bench's progress goes to
    (stderr: stdout is its figures)."""
    progress = Console(stderr=True)
    stack = Stack()
    stack.up(progress=lambda msg: progress.log(msg))
    return stack, progress


def tell_result(
    result: dict[str, Any], *, json: bool, tables: Callable[[dict[str, Any], Console], None]
) -> None:
    """A bench's figures, as one JSON line or as tables; exit 1 when a target is missed."""
    if json:
        print(orjson.dumps(result).decode())
    else:
        tables(result, Console())
    if not result["ok"]:
        raise typer.Exit(1)


async def delete_topics(kafka: KafkaSettings, *prefixes: str) -> None:
    """Every topic named with `kafka`'s topic prefix, or one of `prefixes`: a benchmark's own,
    never the user's (a run that cannot own a prefix must not call this)."""
    admin = kafka_clients.admin(kafka)
    await admin.start()
    try:
        ours = (kafka.topic_prefix, *prefixes)
        doomed = [t for t in await admin.list_topics() if t.startswith(ours)]
        if doomed:
            await admin.delete_topics(doomed)
    finally:
        await admin.close()


@dataclass
class BenchRun:
    stack: Stack
    kind: str  # the benchmark's name, in every name the run makes
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    key: SecretStr = field(default_factory=lambda: SecretStr(secrets.token_urlsafe(32)))
    dir: Path = field(init=False)

    def __post_init__(self) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix=f"bench-{self.kind}-"))

    @property
    def kafka(self) -> KafkaSettings:
        prefix = f"{self.stack.kafka.topic_prefix}{self.kind}{self.id}."
        return self.stack.kafka.model_copy(update={"topic_prefix": prefix})

    @property
    def clickhouse(self) -> ClickHouseSettings:
        return self.stack.clickhouse.model_copy(update={"database": f"{self.kind}_{self.id}"})

    @property
    def groups(self) -> dict[str, str]:
        return {w: f"{self.kind}-{w}-{self.id}" for w in WORKERS}

    def env(self) -> dict[str, str]:
        groups = self.groups
        return {
            **self.stack.env(),
            "CENTRALITY_KAFKA_TOPIC_PREFIX": self.kafka.topic_prefix,
            "CENTRALITY_CLICKHOUSE_DATABASE": self.clickhouse.database,
            "CENTRALITY_STREAMS_APP_ID": groups["streams"],
            "CENTRALITY_STREAMS_DATA_DIR": str(self.dir / "streams"),
            # Consumption is seen through commits: commit often so it is seen soon.
            "CENTRALITY_STREAMS_COMMIT_INTERVAL_S": "0.5",
            "CENTRALITY_ACTIONS_GROUP_ID": groups["actions"],
            "CENTRALITY_ACTIONS_ADAPTER": "memory",
            "CENTRALITY_SINK_GROUP_ID": groups["sink"],
            "CENTRALITY_SINK_BATCH_MAX_MS": "200",
            "CENTRALITY_EMITTER_SPOOL_DIR": str(self.dir / "spool"),
            "CENTRALITY_TRIGGER_KEY": self.key.get_secret_value(),
        }

    def story(self, job: str) -> list[CheckpointSaved | JobExited]:
        """A job that checkpointed, then failed: the workers restart it from the checkpoint."""
        now = datetime.now(UTC)
        common: dict[str, Any] = {
            "source": f"bench-{self.kind}",
            "cluster": self.kind,
            "subject": job,
        }
        return [
            CheckpointSaved(
                **common,
                occurred_at=now - timedelta(seconds=2),
                payload={"step": 700, "uri": f"s3://ckpt/{job}/step-700"},
            ),
            JobExited(
                **common,
                occurred_at=now - timedelta(seconds=1),
                payload={"state": "FAILED", "exit_code": 1, "nodes": list(STORY_NODES)},
            ),
        ]

    async def send_story(self, job: str) -> float:
        """Sends the story; returns when its last event was acknowledged (monotonic clock)."""
        options = EmitterSettings(spool_dir=self.dir / "story-spool")
        async with Emitter(self.kafka, options) as emitter:
            for event in self.story(job):
                await emitter.emit(event)
        return time.monotonic()

    async def delete_topics(self) -> None:
        await delete_topics(self.kafka, self.groups["streams"])  # and its tables' changelogs

    def drop_database(self) -> None:
        with connect(self.clickhouse, database="default") as client:
            client.command(f"DROP DATABASE IF EXISTS `{self.clickhouse.database}`")

    def discard(self, *, keep_logs: bool) -> None:
        """The run's data gone; its logs too unless asked to keep them (a failed run)."""
        self.drop_database()
        for stores in self.dir.glob("streams*"):  # every streams worker's, scaled out or not
            shutil.rmtree(stores, ignore_errors=True)
        if not keep_logs:
            shutil.rmtree(self.dir, ignore_errors=True)
