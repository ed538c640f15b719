"""`centrality config` in its own process masks secrets and says where each value came from.

(Split from tests/unit/cli/test_config.py: the unit layer starts no process.)"""

from __future__ import annotations

import secrets
from pathlib import Path

import orjson

from centrality.settings_report import MASK
from tests.unit.cli.test_config import run


def test_config_masks_secrets_and_says_where_values_came_from(tmp_path: Path) -> None:
    token, password, url_password = (secrets.token_hex(12) for _ in range(3))
    env = {
        "CENTRALITY_SLACK_TOKEN": token,
        "CENTRALITY_CLICKHOUSE_PASSWORD": password,
        "CENTRALITY_CLICKHOUSE_URL": f"https://reader:{url_password}@ch.example:8443",
        "CENTRALITY_KAFKA_BOOTSTRAP": "broker-1:9092",
    }
    as_json = run(["config", "--json"], env, tmp_path)
    as_table = run(["config"], {**env, "COLUMNS": "200"}, tmp_path)
    for result in (as_json, as_table):
        assert result.returncode == 0, result.stderr
        for secret in (token, password, url_password):
            assert secret not in result.stdout + result.stderr
    rows = {r["variable"]: r for r in orjson.loads(as_json.stdout)}
    assert rows["CENTRALITY_SLACK_TOKEN"] == {
        "group": "SlackSettings", "variable": "CENTRALITY_SLACK_TOKEN", "value": MASK,
        "source": "env", "secret": True,
    }  # fmt: skip
    assert rows["CENTRALITY_CLICKHOUSE_PASSWORD"]["value"] == MASK
    assert rows["CENTRALITY_CLICKHOUSE_URL"]["value"] == f"https://reader:{MASK}@ch.example:8443"
    bootstrap, prefix = rows["CENTRALITY_KAFKA_BOOTSTRAP"], rows["CENTRALITY_KAFKA_TOPIC_PREFIX"]
    assert (bootstrap["value"], bootstrap["source"]) == ("broker-1:9092", "env")
    assert (prefix["value"], prefix["source"]) == ("centrality.", "default")
    assert rows["CENTRALITY_TRIGGER_KEY"]["value"] == "—"  # unset secrets say so, unmasked
    table = as_table.stdout
    assert "CENTRALITY_SLACK_TOKEN" in table and MASK in table and "broker-1:9092" in table
