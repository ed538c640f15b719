"""Dashboard JSON is well formed: datasource, unique ids, layout, variables it uses exist."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from tests.grafana_macros import dashboards, expand

DATASOURCE = {"type": "grafana-clickhouse-datasource", "uid": "centrality-clickhouse"}
BOARDS = dict(dashboards())
MACROS = {"__timeFilter", "__timeInterval", "__fromTime", "__toTime"}  # the plugin's


def test_the_six_dashboards_exist_with_unique_uids() -> None:
    titles = sorted(b["title"] for b in BOARDS.values())
    assert titles == [
        "Centrality / Cluster overview",
        "Centrality / Incidents",
        "Centrality / Job detail",
        "Centrality / Node detail",
        "Centrality / Remediation audit",
        "Centrality / Rule outcomes and goodput",
    ]
    assert len({b["uid"] for b in BOARDS.values()}) == 6


@pytest.mark.parametrize("name", sorted(BOARDS))
def test_panels_are_well_formed(name: str) -> None:
    board = BOARDS[name]
    variables = {v["name"] for v in board["templating"]["list"]}
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids)) and board["panels"]
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24 and grid["h"] > 0
        assert panel["datasource"] == DATASOURCE
        [target] = panel["targets"]
        assert target["datasource"] == DATASOURCE and target["rawSql"].strip()
        used = set(re.findall(r"\$(\w+)", target["rawSql"])) - MACROS
        assert used <= variables, f"{panel['title']}: {used - variables}"
    for var in board["templating"]["list"]:
        assert var["datasource"] == DATASOURCE and var["type"] == "query"


def test_expand_replaces_macros_and_variables() -> None:
    end = datetime(2026, 1, 1, tzinfo=UTC)
    sql = expand(
        "SELECT $__timeInterval(t) AS time FROM x WHERE $__timeFilter(t) AND n = '$node' "
        "AND c = '${cluster}' AND i = $__interval_s AND t > $__fromTime AND t < $__toTime",
        end - timedelta(hours=1),
        end,
        timedelta(seconds=60),
        {"node": "n-1", "cluster": "c"},
    )
    assert sql == (
        "SELECT toStartOfInterval(toDateTime(t), INTERVAL 60 second) AS time FROM x WHERE "
        "t >= toDateTime(1767222000) AND t <= toDateTime(1767225600) AND n = 'n-1' "
        "AND c = 'c' AND i = 60 AND t > toDateTime(1767222000) AND t < toDateTime(1767225600)"
    )
    # A variable the dashboard lacks is left, as Grafana leaves it (the test above finds it).
    assert expand("SELECT '$job'", end, end, timedelta(seconds=1), {}) == "SELECT '$job'"


def test_holds_are_their_own_outcome_on_the_remediation_audit() -> None:
    """A hold (`ActionHeld`, or a refused `ActionFailed` naming a silence, from before it) is
    `held`, a refusal `refused`, each coloured apart from `failed`."""
    board = BOARDS["remediation-audit.json"]
    panels = {p["title"]: p for p in board["panels"]}
    results = panels["Results per interval: succeeded, failed, refused, held"]
    sql = results["targets"][0]["rawSql"]
    assert "type = 'ActionHeld' OR JSONExtractString(payload, 'held_by') != '', 'held'" in sql
    assert "JSONExtractBool(payload, 'refused'), 'refused', 'failed')" in sql
    colours = {
        o["matcher"]["options"]: o["properties"][0]["value"]["fixedColor"]
        for o in results["fieldConfig"]["overrides"]
    }
    assert colours["held"] != colours["failed"] != colours["refused"]
    assert "Held by silences" in panels
