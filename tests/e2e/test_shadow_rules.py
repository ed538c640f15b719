"""Rules of one's own and rules in shadow, on the real stack (Kafka, ClickHouse, the streams,
action and sink workers as `centrality` runs them):

- with a module of one's own in `CENTRALITY_RULES` (docs/rules.md's NCCL rule), the built-in
  fatal-XID story still drains, benchmarks and releases its node;
- a built-in set to shadow (`repeated_health_failures`) and the module's rule, in shadow too,
  decide on their events: their triggers are recorded, marked shadow, only planned by the action
  worker, and nothing is carried out: the node is never drained nor benchmarked, nobody is told;
- `centrality rules --json` lists the module's rule beside the built-ins with its mode, and
  `centrality shadow report --json` sets the shadow decisions beside what was done.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from centrality.pipeline import Pipeline
from centrality.slack_fake import SlackFake
from schemas.envelope import Event
from schemas.runtime.emitter import Emitter
from schemas.runtime.settings import KafkaSettings
from streams.history.query import HistoryRow, wait_for
from streams.history.settings import ClickHouseSettings
from streams.testing import T0, health, log_signal, xid
from tests.support.docs_examples import examples

pytestmark = pytest.mark.e2e
CLI = str(Path(sys.executable).with_name("centrality"))
RULE_CONFIG = {
    "repeated_health_failures": {"threshold": 1, "mode": "shadow"},
    "nccl_timeout_twice": {"mode": "shadow"},
}


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    with SlackFake() as stub:
        yield stub


def cli(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [CLI, *args, "--json"], env={**os.environ, **env}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


async def emit(settings: KafkaSettings, events: list[Event]) -> None:
    async with Emitter(settings) as emitter:
        for event in events:
            await emitter.emit(event)


def story(rows: list[HistoryRow], subject: str) -> list[dict[str, Any]]:
    return [
        {"type": r.type, "id": r.event_id, **json.loads(r.payload)}
        for r in rows
        if r.subject == subject
    ]


def test_own_rules_beside_the_built_ins_and_shadow_rules_that_only_record(
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    slack: SlackFake,
    unique: str,
    tmp_path: Path,
) -> None:
    (tmp_path / "nccl_timeouts.py").write_text(examples("docs/rules.md")["nccl_timeouts.py"])
    env = {
        **worker_env,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
        "CENTRALITY_RULES": "nccl_timeouts",
        "CENTRALITY_STREAMS_RULE_CONFIG": json.dumps(RULE_CONFIG),
        "CENTRALITY_ACTIONS_FLEET_SIZE": '{"test": 100}',
        "CENTRALITY_SLACK_TOKEN": "xoxb-e2e",
        "CENTRALITY_SLACK_BASE_URL": slack.base_url,
    }
    listed = {r["rule"]: r for r in cli(env, "rules")}
    assert (listed["nccl_timeout_twice"]["module"], listed["nccl_timeout_twice"]["mode"]) == (
        "nccl_timeouts", "shadow",
    )  # fmt: skip
    assert listed["fatal_xid"]["mode"] == "live" and listed["fatal_xid"]["builtin"]

    faulty, sick, job = f"{unique}-xid", f"{unique}-sick", f"slurm/test/{unique}"
    now_s = (datetime.now(UTC) - T0).total_seconds()
    events: list[Event] = [
        xid(faulty, 79, at_s=now_s),
        health(sick, "gpu", "CRITICAL", at_s=now_s, message="row remapping failed"),
        log_signal(job, "NCCL_TIMEOUT", at_s=now_s, line="Watchdog caught collective timeout"),
        log_signal(job, "NCCL_TIMEOUT", at_s=now_s + 1, line="Watchdog caught collective timeout"),
    ]

    def settled(rows: list[HistoryRow]) -> bool:
        released = any(
            r["type"] == "ActionSucceeded" and r["trigger_type"] == "ReleaseNodes"
            for r in story(rows, faulty)
        )
        planned = {
            r.subject for r in rows if r.type == "ActionSucceeded" and '"shadow":true' in r.payload
        }
        return released and {sick, job} <= planned

    with Pipeline(env, tmp_path / "logs") as pipeline:
        asyncio.run(emit(kafka_settings, events))
        rows = wait_for(clickhouse_settings, [faulty, sick, job], settled, 240.0, pipeline.check)
        slack.wait_quiet(3.0, 120.0, pipeline.check)  # it keeps Slack's pace: a message a second
        # What the ticks after the decisions could still add for the shadowed node: nothing.
        report = cli(env, "shadow", "report", "--since", "1h")

    # The built-in story, with a module of one's own loaded beside it: drained, benchmarked,
    # released, as out of the box.
    done = story(rows, faulty)
    decided = [(r["type"], r["rule"]) for r in done if "rule" in r]
    assert decided == [
        ("QuarantineNodes", "fatal_xid"),
        ("RunBenchmark", "quarantine_story"),
        ("ReleaseNodes", "benchmark_verdict"),
    ]
    assert not any(r.get("shadow") or r.get("dry_run") for r in done)

    # The shadow decisions: recorded, marked, only planned; nothing done, nothing folded back.
    for subject, kind, rule in (
        (sick, "QuarantineNodes", "repeated_health_failures"),
        (job, "Notify", "nccl_timeout_twice"),
    ):
        mine = story(rows, subject)
        [trigger] = [r for r in mine if r["type"] in ("QuarantineNodes", "Notify", "RunBenchmark")]
        assert (trigger["type"], trigger["rule"], trigger["shadow"]) == (kind, rule, True)
        results = [r for r in mine if r["type"].startswith("Action")]
        assert {r["type"] for r in results} == {"ActionStarted", "ActionSucceeded"}
        assert all(
            r["shadow"] and r["dry_run"] and r["trigger_id"] == trigger["id"] for r in results
        )
        [planned] = [r for r in results if r["type"] == "ActionSucceeded"]
        calls = [c["call"] for c in planned["detail"]["planned"]]
        assert calls == (["drain", "taint"] if kind == "QuarantineNodes" else ["notify"])
    statuses = [r["state"] for r in story(rows, sick) if r["type"] == "NodeStatusChanged"]
    assert set(statuses) <= {"in_service"}  # never suspect, draining, nor benchmarked
    told = " ".join(p["text"] for p in slack.posts)
    assert faulty in told and sick not in told and job not in told

    # What the shadow rules would have done, beside what was done.
    tallies = {(t["side"], t["rule"], t["type"]): t for t in report["tallies"]}
    assert tallies[("shadow", "repeated_health_failures", "QuarantineNodes")]["outcomes"] == {
        "planned": 1
    }
    assert tallies[("shadow", "nccl_timeout_twice", "Notify")]["first_targets"] == [f"test/{job}"]
    assert tallies[("live", "fatal_xid", "QuarantineNodes")]["outcomes"] == {"succeeded": 1}
    differences = {(d["side"], d["type"], d["target"]) for d in report["differences"]}
    assert ("shadow", "QuarantineNodes", sick) in differences
    assert ("live", "QuarantineNodes", faulty) in differences
