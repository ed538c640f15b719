"""`centrality rules` lists what the worker loads; a rule set it would refuse is one line at the
worker's start, in `centrality rules` and in `centrality doctor`, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from centrality.doctor.rules import rules as rules_check

CLI = str(Path(sys.executable).with_name("centrality"))
ROOT = Path(__file__).resolve().parents[3]
OWN = """
from schemas.events import LogSignalDetected, Notify
from streams.rules import RuleConfig, rule


class Twice(RuleConfig):
    times: int = 2


@rule("cli_own_rule", on=(LogSignalDetected,), config=Twice)
def own(job, event, config):
    return ()
"""


def run(args: list[str], env: dict[str, str], rules_dir: Path) -> subprocess.CompletedProcess[str]:
    outside = {k: v for k, v in os.environ.items() if not k.startswith("CENTRALITY_")}
    environ = {**outside, "PYTHONPATH": f"{ROOT}:{rules_dir}", "COLUMNS": "200", **env}
    return subprocess.run([CLI, *args], env=environ, capture_output=True, text=True, timeout=60)


def test_rules_lists_ones_own_beside_the_built_ins_with_their_modes(tmp_path: Path) -> None:
    (tmp_path / "cli_own_rules.py").write_text(OWN)
    env = {
        "CENTRALITY_RULES": "cli_own_rules",
        "CENTRALITY_STREAMS_RULE_CONFIG": '{"cli_own_rule": {"mode": "shadow", "times": 3, '
        '"scopes": [{"match": {"cluster": "b"}, "times": 4}]}, '
        '"idle_allocation": {"enabled": false}, '
        '"repeated_health_failures": {"for_count": 3}}',
    }
    listed = run(["rules", "--json"], env, tmp_path)
    assert listed.returncode == 0, listed.stderr
    rows = {r["rule"]: r for r in orjson.loads(listed.stdout)}
    own = rows["cli_own_rule"]
    assert (own["module"], own["builtin"], own["events"]) == (
        "cli_own_rules", False, ["LogSignalDetected"],
    )  # fmt: skip
    assert own["mode"] == "shadow" and own["config"]["times"] == 3
    assert own["config"]["cooldown_s"] == 0.0  # every setting, defaults included
    # A job rule's scope selects jobs: the nodes it selects are not counted.
    assert own["scopes"] == [
        {"match": {"cluster": "b"}, "set": {"times": 4}, "mode": "shadow", "nodes": None}
    ]
    assert rows["fatal_xid"]["scopes"] == []
    assert rows["fatal_xid"]["mode"] == "live" and rows["fatal_xid"]["builtin"]
    assert rows["idle_allocation"]["mode"] == "off"  # switched off, still listed
    assert {"quarantine_story", "benchmark_verdict"} <= set(rows)
    assert rows["repeated_health_failures"]["debounce"] == {"for_s": 0.0, "for_count": 3}
    assert rows["fatal_xid"]["debounce"] == {"for_s": 0.0, "for_count": 1}
    table = run(["rules"], env, tmp_path)
    assert table.returncode == 0 and "cli_own_rule" in table.stdout and "shadow" in table.stdout
    assert '{"mode":"shadow","times":3}' in table.stdout  # what the config changed
    assert 'cluster=b: {"times":4}' in table.stdout
    assert "3 in a row" in table.stdout  # each rule's debounce


@pytest.mark.parametrize(
    ("env", "said", "commands"),
    [
        (
            {"CENTRALITY_STREAMS_RULE_CONFIG": '{"fatal_xdi": {"enabled": false}}'},
            "configures no such rule: 'fatal_xdi' (did you mean 'fatal_xid'?)",
            (["rules"], ["streams"]),
        ),
        (
            {"CENTRALITY_RULES": "not_installed_rules"},
            "no rule module 'not_installed_rules'",
            (["streams"],),
        ),
    ],
)
def test_a_rule_set_the_worker_would_refuse_is_one_line_everywhere(
    env: dict[str, str],
    said: str,
    commands: tuple[list[str], ...],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for command in commands:  # `streams`: the worker's start, before Kafka is asked anything
        done = run(command, {**env, "CENTRALITY_TRIGGER_KEY": "k"}, tmp_path)
        assert done.returncode == 2, done.stderr
        [line] = done.stderr.splitlines()
        assert line.startswith("error: ") and said in line and "unexpected" not in line
        assert "CENTRALITY_STREAMS_RULE_CONFIG" in line
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    [finding] = rules_check()
    assert finding.status == "fail" and said in finding.detail


def test_doctor_says_which_rules_run_in_shadow_and_which_are_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("CENTRALITY_RULES", raising=False)
    monkeypatch.setenv("CENTRALITY_KAFKA_BOOTSTRAP", "127.0.0.1:1")  # the fleet: unread
    monkeypatch.setenv(
        "CENTRALITY_STREAMS_RULE_CONFIG",
        '{"fatal_xid": {"mode": "shadow"}, "idle_allocation": {"enabled": false}}',
    )
    [finding] = rules_check()
    assert finding.status == "ok"
    assert "in shadow: fatal_xid" in finding.detail and "off: idle_allocation" in finding.detail
