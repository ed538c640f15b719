"""The alert rules, the Prometheus config and the "Centrality itself" dashboard: checked by
promtool, and every metric they name is one the code exports."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml
from prometheus_client import REGISTRY

import schemas.runtime.metrics.catalog
import schemas.runtime.metrics.server  # registers the metrics read at scrape time

ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS = ROOT / "infra" / "prometheus"
RULES = PROMETHEUS / "rules" / "centrality.yml"
BOARD = ROOT / "dashboards" / "prometheus" / "centrality-itself.json"
DATASOURCE = ROOT / "dashboards" / "provisioning" / "datasources" / "prometheus.yaml"
COMPOSE = ROOT / "infra" / "compose" / "compose.yaml"
# Prometheus' own series about a scrape target, not exported by us.
PROMETHEUS_OWN = {"up"}


def promtool(*args: str | Path) -> subprocess.CompletedProcess[str]:
    found = shutil.which("promtool") or str(Path(sys.executable).with_name("promtool"))
    assert Path(found).exists(), "promtool is installed by `make install`"
    return subprocess.run(
        [found, *map(str, args)], capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def exported() -> set[str]:
    """Every series name the processes can export, with the suffixes of its type."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum")}
    return {
        family.name + suffix
        for family in REGISTRY.collect()
        for suffix in suffixes.get(family.type, ("",))
    }


def names_in(expr: str) -> set[str]:
    """Series names of a PromQL expression: identifiers before a selector, range or operator,
    leaving out functions, aggregation clauses and label names."""
    found = set(re.findall(r"\b(centrality_\w+|up)\b(?!\s*\()", expr))
    return found - set(re.findall(r"(\w+)\s*=~?", expr))


def rule_exprs() -> list[tuple[str, str]]:
    doc = yaml.safe_load(RULES.read_text())
    return [(r["alert"], r["expr"]) for group in doc["groups"] for r in group["rules"]]


def panel_exprs() -> list[tuple[str, str]]:
    board = json.loads(BOARD.read_text())
    return [(p["title"], t["expr"]) for p in board["panels"] for t in p["targets"]]


def test_rules_pass_promtool() -> None:
    result = promtool("check", "rules", RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 10 rules found" in result.stdout


def test_each_alert_fires_on_its_series_and_not_on_healthy_ones() -> None:
    result = promtool("test", "rules", PROMETHEUS / "tests" / "centrality.test.yml")
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_catches_a_broken_rule(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(RULES.read_text().replace("> 10000", "> > 10000", 1))
    assert promtool("check", "rules", broken).returncode != 0


def test_prometheus_config_loads_the_rules() -> None:
    result = promtool("check", "config", PROMETHEUS / "prometheus.yml")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout


def test_dashboard_queries_are_promql(tmp_path: Path) -> None:
    """Each panel's query as a recording rule, `$__rate_interval` as Grafana would fill it in:
    promtool parses them all."""
    rules = [
        {"record": f"centrality:panel_{i}", "expr": expr.replace("$__rate_interval", "1m")}
        for i, (_, expr) in enumerate(panel_exprs())
    ]
    path = tmp_path / "panels.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "panels", "rules": rules}]}))
    result = promtool("check", "rules", path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_metric_named_is_exported() -> None:
    known = exported() | PROMETHEUS_OWN
    for where, expr in [*rule_exprs(), *panel_exprs()]:
        names = names_in(expr)
        assert names, f"{where}: names no metric"
        assert names <= known, f"{where}: {sorted(names - known)} is exported by no process"


def test_names_in_sees_what_a_query_selects() -> None:
    expr = 'sum by (job) (rate(centrality_polls_total{outcome="ok"}[5m])) > up'
    assert names_in(expr) == {"centrality_polls_total", "up"}
    assert "centrality_no_such_metric" not in exported()


def test_dashboard_covers_what_the_issue_asks_for() -> None:
    """Events in and out, lag, latency, dead letters, decisions, actions, breaker, spool,
    tables: each panel of its own, over the Prometheus datasource Grafana is given."""
    board = json.loads(BOARD.read_text())
    assert board["title"] == "Centrality itself"
    datasource = yaml.safe_load(DATASOURCE.read_text())["datasources"][0]
    wanted = {"type": datasource["type"], "uid": datasource["uid"]}
    used = set()
    for panel in board["panels"]:
        assert panel["datasource"] == wanted
        assert all(t["datasource"] == wanted for t in panel["targets"])
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        used |= {n for t in panel["targets"] for n in names_in(t["expr"])}
    for counter in (
        schemas.runtime.metrics.catalog.EVENTS_IN,
        schemas.runtime.metrics.catalog.EVENTS_OUT,
        schemas.runtime.metrics.catalog.DEAD_LETTERS,
        schemas.runtime.metrics.catalog.DECISIONS,
        schemas.runtime.metrics.catalog.ACTIONS,
        schemas.runtime.metrics.catalog.BREAKER_REFUSALS,
    ):
        assert f"{counter.describe()[0].name}_total" in used
    assert {
        "centrality_consumer_lag",
        "centrality_processing_seconds_bucket",
        "centrality_spool_bytes",
        "centrality_table_entries",
    } <= used


def test_compose_scrapes_every_worker_where_it_serves() -> None:
    compose = yaml.safe_load(COMPOSE.read_text())
    config = yaml.safe_load((PROMETHEUS / "prometheus.yml").read_text())
    targets = {
        t for job in config["scrape_configs"] for s in job["static_configs"] for t in s["targets"]
    }
    services = compose["services"]
    for worker in ("streams", "actions", "sink"):
        addr = services[worker]["environment"]["CENTRALITY_METRICS_ADDR"]
        assert f"{worker}:{addr.rpartition(':')[2]}" in targets
    mounts = services["prometheus"]["volumes"]
    assert any((COMPOSE.parent / m.split(":")[0]).resolve() == PROMETHEUS for m in mounts)
