"""`centrality silence list` reads what each silence held from the action ledger on Kafka: how
many decisions, of which actions and rules, on which nodes (a hostlist) or jobs, in the table and
in `--json`."""

from __future__ import annotations

import asyncio
import uuid

import orjson
import pytest

from actions.ledger import KafkaLedger, LedgerEntry
from centrality.silence_cli import list_cmd
from centrality.stack.stack import Stack
from schemas.codec import encode
from schemas.events import SilenceAdded
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from tests.support.operators import ALICE, silence, trusted_json

pytestmark = pytest.mark.integration


def held(by: str, subject: str, nodes: tuple[str, ...], action: str, rule: str) -> LedgerEntry:
    return LedgerEntry(
        trigger_id=uuid.uuid4(), trigger_type="QuarantineNodes", action=action, cluster="test",
        subject=subject, rule=rule, nodes=nodes, outcome="held", incident="test/x", held_by=by,
    )  # fmt: skip


async def seed(kafka: KafkaSettings, busy: SilenceAdded, idle: SilenceAdded) -> None:
    async with Emitter(kafka) as emitter:
        for event in (busy, idle):
            await emitter.emit(event, ALICE.headers(encode(event)))
    ledger = KafkaLedger(kafka)
    await ledger.start()
    try:
        for i in range(1, 4):
            node = f"gpu-{i:02d}"
            await ledger.record(held(busy.subject, node, (node,), "quarantine_nodes", "fatal_xid"))
        job = held(busy.subject, "slurm/test/7", (), "restart_job", "restart_incomplete_exit")
        await ledger.record(job)
    finally:
        await ledger.stop()


def test_silence_list_shows_what_each_silence_held(
    stack: Stack,
    kafka_settings: KafkaSettings,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    busy, idle = silence(), silence(nodes="gpu-[10-12]")
    asyncio.run(seed(kafka_settings, busy, idle))
    for name, value in stack.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CENTRALITY_KAFKA_TOPIC_PREFIX", kafka_settings.topic_prefix)
    monkeypatch.setenv("CENTRALITY_OPERATORS", trusted_json())
    monkeypatch.setenv("COLUMNS", "250")

    list_cmd(cluster="test", all_=False, json=True)
    rows = {r["id"]: r for r in orjson.loads(capsys.readouterr().out)}
    assert rows[busy.subject]["held"] == {
        "decisions": 4,
        "actions": {"quarantine_nodes": 3, "restart_job": 1},
        "rules": {"fatal_xid": 3, "restart_incomplete_exit": 1},
        "nodes": "gpu-[01-03]",
        "nodes_count": 3,
        "jobs": ["slurm/test/7"],
        "first_at": rows[busy.subject]["held"]["first_at"],
        "last_at": rows[busy.subject]["held"]["last_at"],
    }
    assert rows[idle.subject]["held"]["decisions"] == 0 and rows[busy.subject]["verified"]

    list_cmd(cluster="test", all_=False, json=False)
    table = capsys.readouterr().out
    assert "4: quarantine_nodes (3), restart_job (1)" in table
    assert "nodes gpu-[01-03] (3)" in table and "jobs slurm/test/7" in table
    assert "nodes gpu-[10-12]" in table and "nothing" in table
