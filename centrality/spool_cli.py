"""`centrality spool list|drop` and `centrality deadletters list|drop`: what was not delivered,
and what no consumer could take, looked at and let go of by a person."""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from centrality.errors import UserError
from schemas.deadletter import DeadLetter
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.emitter.spool import Spool, spool_dirs
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import Records, TopicReader
from schemas.topics import topic_name

spool_app = typer.Typer(help="The spool: what was sent while Kafka did not take it.")
deadletters_app = typer.Typer(help="Dead letters: what no consumer could decode or act on.")
JSON = typer.Option(False, "--json", help="One JSON document instead of a table.")
err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    app.add_typer(spool_app, name="spool")
    app.add_typer(deadletters_app, name="deadletters")


def _spools(directory: Path) -> list[dict[str, Any]]:
    rows = []
    for path in spool_dirs(directory):
        spool = Spool.unused(path)
        if spool is None:
            rows.append({"dir": str(path), "in_use": True, "messages": None, "by_topic": {}})
            continue
        try:
            topics = Counter(record.topic for _, record in spool.pending())
        finally:
            spool.close()
        row = {"dir": str(path), "in_use": False, "messages": sum(topics.values())}
        rows.append(row | {"by_topic": dict(topics)})
    return rows


@spool_app.command("list")
def spool_list(json: bool = JSON) -> None:
    """Messages waiting in the spool (CENTRALITY_EMITTER_SPOOL_DIR), per directory and topic."""
    rows = _spools(EmitterSettings().spool_dir)
    if json:
        print(orjson.dumps(rows).decode())
        return
    table = Table("spool", "messages", "topics", title="spool")
    for r in rows:
        waiting = "in use by a running sender" if r["in_use"] else str(r["messages"])
        table.add_row(r["dir"], waiting, ", ".join(f"{t} {n}" for t, n in r["by_topic"].items()))
    Console().print(table)


@spool_app.command("drop")
def spool_drop(yes: bool = typer.Option(False, "--yes", help="Drop without asking.")) -> None:
    """Forget what waits in the spool (not what a running sender holds: stop it first)."""
    rows = [r for r in _spools(EmitterSettings().spool_dir) if not r["in_use"] and r["messages"]]
    total = sum(r["messages"] for r in rows)
    if not total:
        err.print("nothing to drop")
        return
    if not yes and not typer.confirm(f"drop {total} undelivered message(s)?"):
        raise typer.Exit(1)
    for r in rows:
        spool = Spool.unused(Path(r["dir"]))
        if spool is not None:
            try:
                spool.drop()
            finally:
                spool.close(remove_if_empty=True)
    err.print(f"dropped {total} message(s)")


class _Letters:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def take(self, records: Records) -> None:
        for r in records:
            try:
                letter = DeadLetter.from_bytes(r.value or b"")
            except ValueError:
                continue
            self.rows.append(
                {
                    "partition": r.partition,
                    "offset": r.offset,
                    "at": r.timestamp,
                    "reason": letter.reason,
                    "consumer": letter.consumer,
                    "topic": letter.topic,
                    "detail": letter.detail,
                }
            )


async def _letters(kafka: KafkaSettings) -> list[dict[str, Any]]:
    letters = _Letters()
    reader = TopicReader(kafka, topic_name("deadletter", kafka), letters.take, client_id="dlq")
    try:
        await reader.load()
    finally:
        await reader.stop()
    return letters.rows


@deadletters_app.command("list")
def deadletters_list(
    reason: Annotated[str | None, typer.Option(help="Only this reason.")] = None,
    json: bool = JSON,
) -> None:
    """The dead letters still on the topic: where each came from, and why."""
    rows = [r for r in asyncio.run(_letters(KafkaSettings())) if reason in (None, r["reason"])]
    if json:
        print(orjson.dumps(rows).decode())
        return
    table = Table("partition@offset", "reason", "from", "by", "detail", title="dead letters")
    for r in rows:
        table.add_row(
            f"{r['partition']}@{r['offset']}",
            r["reason"],
            r["topic"],
            r["consumer"],
            r["detail"][:120],
        )
    Console().print(table)
    counts = Counter(r["reason"] for r in rows)
    err.print(", ".join(f"{n} {why}" for why, n in counts.most_common()) or "none")


@deadletters_app.command("drop")
def deadletters_drop(
    yes: bool = typer.Option(False, "--yes", help="Drop without asking."),
) -> None:
    """Delete every dead letter now on the topic (ClickHouse keeps its own copy of each)."""
    kafka = KafkaSettings()
    rows = asyncio.run(_letters(kafka))
    if not rows:
        err.print("nothing to drop")
        return
    if not yes and not typer.confirm(f"delete {len(rows)} dead letter(s) from the topic?"):
        raise typer.Exit(1)
    ends: dict[int, int] = {}
    for r in rows:
        ends[r["partition"]] = max(ends.get(r["partition"], 0), r["offset"] + 1)
    asyncio.run(_delete_before(kafka, ends))
    err.print(f"dropped {len(rows)} dead letter(s)")


async def _delete_before(kafka: KafkaSettings, ends: dict[int, int]) -> None:
    from aiokafka import TopicPartition
    from aiokafka.admin.records_to_delete import RecordsToDelete

    from schemas.runtime import kafka_clients

    admin = kafka_clients.admin(kafka)
    await admin.start()
    try:
        topic = topic_name("deadletter", kafka)
        wanted = {TopicPartition(topic, p): RecordsToDelete(o) for p, o in ends.items()}
        await admin.delete_records(wanted)
    except Exception as exc:
        raise UserError(f"the broker refused: {exc}", "check the ACLs (DeleteRecords)") from None
    finally:
        await admin.close()
