"""`make demo`: the walking skeleton on the local stack, narrated.

Two jobs end on the real broker. One said `Training Complete`; the other crashed after saving a
checkpoint. Only the second is restarted from its checkpoint, and every step lands in ClickHouse.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from rich.console import Console
from rich.table import Table

from centrality.pipeline import Pipeline
from centrality.stack.stack import Stack
from schemas.emitter import Emitter
from schemas.envelope import Event
from schemas.events import CheckpointSaved, JobExited, LogSignalDetected
from schemas.signing import SigningSettings, ensure_key_file
from streams.history.query import wait_for_types

SOURCE = "demo"
CLUSTER = "demo"


def story(run: str) -> tuple[str, str, list[Event]]:
    """The events of two jobs; returns (crashed job id, completed job id, events)."""
    now = datetime.now(UTC)
    crashed, completed = f"slurm/{CLUSTER}/{run}-1", f"slurm/{CLUSTER}/{run}-2"
    nodes = ("gpu-node-07", "gpu-node-08")

    def at(job: str, seconds: int) -> dict[str, Any]:
        return {
            "source": SOURCE,
            "cluster": CLUSTER,
            "subject": job,
            "occurred_at": now - timedelta(seconds=60 - seconds),
        }

    return (
        crashed,
        completed,
        [
            CheckpointSaved(
                **at(crashed, 10), payload={"step": 1200, "uri": f"s3://ckpt/{run}/step-1200"}
            ),
            CheckpointSaved(
                **at(completed, 12), payload={"step": 900, "uri": f"s3://ckpt/{run}b/step-900"}
            ),
            LogSignalDetected(
                **at(completed, 20),
                payload={"signal": "TRAINING_COMPLETE", "line": "Training Complete", "rank": 0},
            ),
            JobExited(
                **at(completed, 21), payload={"state": "SUCCEEDED", "exit_code": 0, "nodes": nodes}
            ),
            JobExited(
                **at(crashed, 30),
                payload={
                    "state": "FAILED",
                    "exit_code": 1,
                    "nodes": nodes,
                    "reason": "NonZeroExitCode",
                },
            ),
        ],
    )


async def emit_all(stack: Stack, events: list[Event]) -> None:
    async with Emitter(stack.kafka) as emitter:
        for event in events:
            await emitter.emit(event)


def summary(payload: dict[str, Any]) -> str:
    """The few payload fields a person reads first."""
    detail = payload.get("detail")
    fields = {**payload, **(detail if isinstance(detail, dict) else {})}
    keys = ("state", "exit_code", "signal", "step", "uri", "checkpoint_uri", "attempt", "requeued")
    return " ".join(f"{k}={fields[k]}" for k in keys if fields.get(k) is not None)


def run_demo(console: Console, timeout_s: float = 120.0) -> None:
    stack = Stack()
    console.rule("[bold]Centrality walking skeleton")
    with console.status("bringing up the local stack (Kafka + ClickHouse)…"):
        stack.up(progress=lambda msg: console.log(msg))
    ensure_key_file(SigningSettings().key_file)  # as `centrality up`: the workers sign with it
    run = uuid.uuid4().hex[:6]
    crashed, completed, events = story(run)
    log_dir = stack.settings.state_dir / "run" / "demo"
    with Pipeline(stack.env(), log_dir) as pipeline:
        console.log(f"workers started (streams, actions, sink); logs in {log_dir}")
        asyncio.run(emit_all(stack, events))
        for e in events:
            console.log(f"emitted [cyan]{e.type}[/] for {e.subject}")
        with console.status("waiting for the rule, the action and the history sink…"):
            rows = wait_for_types(
                stack.clickhouse,
                [crashed, completed],
                {"RestartJob", "ActionSucceeded"},
                timeout_s,
                pipeline.check,
            )
    table = Table(title=f"ClickHouse {stack.clickhouse.database}.events for the two jobs")
    for col in ("time", "job", "type", "source", "what"):
        table.add_column(col, overflow="fold")
    for row in rows:
        style = "bold green" if row.type in {"RestartJob", "ActionSucceeded"} else ""
        table.add_row(
            row.occurred_at.strftime("%H:%M:%S.%f")[:12],
            row.subject.rsplit("/", 1)[-1],
            row.type,
            row.source,
            summary(orjson.loads(row.payload)),
            style=style,
        )
    console.print(table)
    console.print(f"[bold]{completed}[/] said 'Training Complete': left alone.")
    console.print(
        f"[bold]{crashed}[/] crashed without it: [green]RestartJob[/] from its checkpoint, "
        "handled by the action worker ([green]ActionSucceeded[/])."
    )
    console.print("The stack keeps running; `make down` stops it.")
