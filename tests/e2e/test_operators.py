"""Operators see and steer the fleet, on the real stack (Kafka, ClickHouse, the three workers):

- after `centrality simulate`, `centrality nodes` / `jobs` list what the streams app holds, each
  XID node with where its story stands and why;
- an operator's quarantine holds a node (a benchmark does not release it) until an operator's
  release; a release by an unknown operator, or by one without authority on the cluster, is
  refused and changes nothing;
- a silence holds a fatal XID's drain (recorded as held, not carried out, never a failure:
  `silence list` shows what it held, ClickHouse has it `held`); once it is expired, one message
  says what it held, and the next fatal XID drains the node.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from centrality.client import Fleet
from centrality.pipeline import Pipeline
from centrality.slack_fake import SlackFake
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from schemas.operators import OperatorKey
from streams.history.client import connect
from streams.history.query import rows_for
from streams.history.settings import ClickHouseSettings
from tests.support.operators import ALICE, BOB, MALLORY, TRUSTED
from tests.support.until import until as wait

pytestmark = pytest.mark.e2e

CLI = str(Path(sys.executable).with_name("centrality"))
NODES, XID_NODES, SEED = 40, 2, 5


@pytest.fixture
def slack() -> Iterator[SlackFake]:
    with SlackFake() as stub:
        yield stub


def key_file(tmp_path: Path, key: OperatorKey) -> str:
    return str(key.save(tmp_path / f"{key.name}.key"))


def cli(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, *args],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def listing(env: dict[str, str], kind: str, *args: str) -> list[dict[str, Any]]:
    done = cli(env, kind, "--cluster", "sim", "--json", *args)
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def until(what: str, check: Callable[[], Any], pipeline: Pipeline, **more: Any) -> Any:
    """The stories here are longer: two minutes, polled every second."""
    return wait(what, check, pipeline, **{"timeout_s": 120, "poll_s": 1.0, **more})


def silence_list(env: dict[str, str]) -> list[dict[str, Any]]:
    done = cli(env, "silence", "list", "--all", "--json")
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def node_now(env: dict[str, str], node: str) -> dict[str, Any]:
    [found] = listing(env, "nodes", node)
    return found


def test_operators_see_and_steer_the_fleet(
    clickhouse_settings: ClickHouseSettings,
    worker_env: dict[str, str],
    slack: SlackFake,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    trusted = {n: o.model_dump(mode="json") for n, o in TRUSTED.items()}
    trusted["alice"]["clusters"] = ["sim"]  # alice commands the simulated cluster; bob does not
    env = {
        **worker_env,
        "CENTRALITY_OPERATORS": json.dumps(trusted),
        "CENTRALITY_OPERATOR_KEY_FILE": key_file(tmp_path, ALICE),
        "CENTRALITY_SLACK_TOKEN": "xoxb-e2e",
        "CENTRALITY_SLACK_BASE_URL": slack.base_url,
        "CENTRALITY_SLACK_SILENCE_ENDS_POLL_S": "1",
    }
    as_mallory = {**env, "CENTRALITY_OPERATOR_KEY_FILE": key_file(tmp_path, MALLORY)}
    as_bob = {**env, "CENTRALITY_OPERATOR_KEY_FILE": key_file(tmp_path, BOB)}
    xid_nodes = ClusterModel(
        SimConfig(nodes=NODES, xid_nodes=XID_NODES, seed=SEED), datetime.now(UTC)
    ).xid_nodes
    with Pipeline(env, tmp_path / "logs") as pipeline:
        simulated = cli(
            env, "simulate", "--nodes", str(NODES), "--jobs", "4", "--xid-nodes", str(XID_NODES),
            "--seed", str(SEED), "--duration-s", "330", "--json",
        )  # fmt: skip
        assert simulated.returncode == 0, simulated.stderr

        # 1. The fleet as the streams app sees it: every node, each XID node with its XID.
        def every_node_with_its_story() -> list[dict[str, Any]] | None:
            nodes = listing(env, "nodes")
            told = {n["node"]: n for n in nodes}
            ready = len(nodes) == NODES and all(
                "Xid 79" in (told[x]["why"] or "") for x in xid_nodes if x in told
            )
            return nodes if ready else None

        nodes = until(
            "nodes listed",
            every_node_with_its_story,
            pipeline,
            seen=lambda: [(n["node"], n["state"], n["why"]) for n in listing(env, "nodes")],
        )
        assert {n["cluster"] for n in nodes} == {"sim"} and all(n["gpus"] == 8 for n in nodes)
        for name in xid_nodes:
            story = next(n for n in nodes if n["node"] == name)
            assert story["state"] in {
                "draining",
                "quarantined",
                "benchmarking",
                "releasing",
                "in_service",
            }
            assert story["by"] == "fatal_xid" or story["why"].startswith("released: ")

        jobs = listing(env, "jobs")
        assert len(jobs) == 4 and all(j["attempt"] == 1 and j["state"] for j in jobs)
        assert all(j["nodes_count"] == len(j["nodes"]) >= 1 for j in jobs)

        # 2. An operator's quarantine holds the node; a benchmark does not release it.
        target = next(n["node"] for n in nodes if n["node"] not in xid_nodes)
        done = cli(env, "quarantine", target, "--reason", "flaky NVLink, checking by hand")
        assert done.returncode == 0, done.stderr
        for key, value in env.items():  # the Python client reads the same settings
            monkeypatch.setenv(key, value)
        client = Fleet(operator=ALICE).node(target)
        held = client.wait("quarantined", timeout_s=60)  # who took it out is `by`, not a state
        assert held.payload.by == "operator/alice" == node_now(env, target)["by"]
        assert held.payload.stage == "held"
        bench = cli(env, "benchmark", target, "--reason", "after reseating", "--json")
        assert bench.returncode == 0, bench.stderr
        until("benchmarked", lambda: node_now(env, target)["last_benchmark"] == "pass", pipeline)
        assert (node_now(env, target)["state"], node_now(env, target)["stage"]) == (
            "quarantined",
            "held",
        )

        # 3. Releases nobody may give: refused, and nothing changes.
        forged = cli(as_mallory, "release", target, "--reason", "let me in", "--json")
        assert forged.returncode == 1
        assert json.loads(forged.stdout)["verdict"] == "dead-lettered"
        assert "unknown operator 'mallory'" in json.loads(forged.stdout)["words"]
        barred = cli(as_bob, "release", target, "--reason", "not my cluster", "--json")
        assert barred.returncode == 1
        assert json.loads(barred.stdout)["words"] == "operator bob may not command cluster sim"
        assert node_now(env, target)["state"] == "quarantined"
        unknown = cli(env, "release", "no-such-node", "--reason", "x")
        assert unknown.returncode == 2 and "unknown node(s): no-such-node" in unknown.stderr

        # 4. Alice releases it.
        freed = cli(env, "release", target, "--reason", "GPU reseated, benchmark passed")
        assert freed.returncode == 0, freed.stderr
        until("released", lambda: node_now(env, target)["state"] == "in_service", pipeline)
        back = node_now(env, target)  # who returned it, in their words, and why it was out
        assert back["by"] == "operator/alice"
        assert back["why"].startswith("released: GPU reseated, benchmark passed (out for: ")
        again = cli(env, "release", target, "--reason", "to be sure")
        assert again.returncode == 0 and f"{target} was in service" in again.stdout

        # 5. A silence holds a fatal XID's drain; after it, the next one drains.
        added = cli(env, "silence", "add", "--cluster", "sim", "--for", "2h", "--reason", "test")
        assert added.returncode == 0, added.stderr
        silence_id = added.stdout.strip()
        xid = ["emit", "GpuXidObserved", "--cluster", "sim", "--subject", target, "--gpu", "1",
               "--xid", "79"]  # fmt: skip
        assert cli(env, *xid).returncode == 0
        held_now = until(
            "held by the silence",
            lambda: (n := node_now(env, target))["state"] == "held" and n,
            pipeline,
        )  # `held` is a silence's hold alone: the node still takes work
        assert held_now["problem"].startswith(f"held by silence {silence_id} until ")
        listed = until(
            "the hold in silence list",
            lambda: [r for r in silence_list(env) if r["held"]["decisions"]],
            pipeline,
        )
        assert [(r["id"], r["held"]["nodes"]) for r in listed] == [(silence_id, target)]
        assert cli(env, "silence", "expire", silence_id, "--reason", "done").returncode == 0
        assert cli(env, *xid).returncode == 0
        until(
            "drained after the silence",
            lambda: any(
                r.type == "ActionSucceeded"
                and json.loads(r.payload)["trigger_type"] == "QuarantineNodes"
                and json.loads(r.payload)["operator"] is None
                for r in rows_for(clickhouse_settings, [target])
            ),
            pipeline,
        )
        until(
            "the silence's end told",
            lambda: any(p["text"].startswith(f"Silence {silence_id} ") for p in slack.posts),
            pipeline,
        )
        slack.wait_quiet(3.0, 120.0, pipeline.check)  # it keeps Slack's pace: a message a second

    rows = [(r.type, json.loads(r.payload)) for r in rows_for(clickhouse_settings, [target])]
    results = [p for t, p in rows if t in ("ActionSucceeded", "ActionFailed", "ActionHeld")]
    by_alice = [
        p for p in results if p.get("operator") == "alice" and "error" not in p and "why" not in p
    ]
    assert [p["trigger_type"] for p in by_alice] == [
        "QuarantineNodes",
        "RunBenchmark",
        "ReleaseNodes",
    ]
    [held_result] = [p for p in results if p.get("held_by") == silence_id]
    assert held_result["trigger_type"] == "QuarantineNodes" and "until" in held_result
    # A hold is held, not a failure: its own result, and `held` in ClickHouse.
    assert not [p for t, p in rows if t == "ActionFailed" and p.get("held_by")]
    with connect(clickhouse_settings) as ch:
        outcomes = ch.query(
            "SELECT outcome FROM action_results FINAL WHERE trigger_id = toUUID({id:String})",
            parameters={"id": held_result["trigger_id"]},
        ).result_rows
    assert outcomes == [("held",)]
    assert not [p for p in results if p.get("operator") in ("mallory", "bob") and "error" not in p]
    story = [e for e in client.timeline() if e.topic == "triggers"]
    assert [(e.type, e.payload.operator) for e in story][:2] == [  # type: ignore[attr-defined]
        ("QuarantineNodes", "alice"),
        ("RunBenchmark", "alice"),
    ]
    texts = [p["text"] for p in slack.posts]
    held = f"{target}: held by silence {silence_id} until "
    assert any(held in str(p.get("blocks")) for p in slack.posts)  # in the incident's thread
    [ended] = [t for t in texts if t.startswith(f"Silence {silence_id} ")]  # once
    assert ended.startswith(f"Silence {silence_id} on sim ended; it held 1 decision ({target})")
    assert any("may not command cluster sim" in t for t in texts)
