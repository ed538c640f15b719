"""`centrality report`: what became of each rule's decisions, how long remediation took, the
lemon nodes, and the jobs' effective training time, from history."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from centrality.history_cli import JSON, UNTIL, _checked_time, time_range
from centrality.progress import tracking, wanted

if TYPE_CHECKING:
    from streams.analysis.goodput import Ettr, JobTime
    from streams.analysis.outcomes import Outcomes, OutcomeSettings

SINCE = typer.Option(
    "7d", callback=_checked_time, help="Decisions from: ISO time, or an age like 30m, 2h, 7d."
)
STORE = typer.Option(
    True, "--store/--no-store", help="Keep what was found in ClickHouse for the dashboards."
)
CHANCE = (
    "chance is one rate for the range: of the (job, node) pairs where a job ran on a node, the "
    "share where it failed there; a node is a lemon when at least two jobs failed there and "
    "chance gives as many or more a probability under alpha split over the nodes (Bonferroni)"
)


def report(
    since: str = SINCE,
    until: str = UNTIL,
    store: bool = STORE,
    json: bool = JSON,
) -> None:
    """What the rules' decisions came to: quarantines, restarts, remediation and goodput.

    Each rule's quarantines confirmed or false alarms, restarts that held or failed again,
    remediation step timings (p50/p99), lemon nodes, and ETTR per job and cluster."""
    from streams.analysis.goodput import by_cluster, ettr, fold, job_time
    from streams.analysis.outcomes import OutcomeSettings, outcomes
    from streams.analysis.reports import events_of, job_histories, outcome_events, store_report
    from streams.analysis.timed import TYPES, timed
    from streams.history.settings import ClickHouseSettings

    now = datetime.now(UTC)
    start, end = time_range(since, until, now)
    settings, judging = ClickHouseSettings(), OutcomeSettings()
    observed = min(now, end + timedelta(seconds=judging.confirm_window_s))
    with tracking(wanted(json)) as progress:
        progress.phase("reading decisions and what followed them")
        found = outcomes(outcome_events(settings, start, observed), start, end, observed, judging)
        progress.phase("folding the jobs' time")
        times = [job_time(job, end) for job in fold(job_histories(settings, start, end)).values()]
        progress.phase("reading decisions timed to jobs' checkpoints")
        ways = timed(events_of(settings, TYPES, start, end))
    stored = None
    if store:
        stored = store_report(settings, now, start, end, found, times, judging.lemon_alpha)
    doc = _document(start, end, observed, judging, found, times, ettr(times), by_cluster(times))
    doc["report_id"] = None if stored is None else str(stored)
    doc["timed"] = {way: asdict(w) for way, w in ways.items()}
    if json:
        print(orjson.dumps(doc).decode())
        return
    _print(doc, Console())


def _document(
    since: datetime,
    until: datetime,
    observed: datetime,
    judging: OutcomeSettings,
    found: Outcomes,
    times: list[JobTime],
    whole: Ettr,
    clusters: dict[str, Ettr],
) -> dict[str, Any]:
    return {
        "since": since.isoformat(),
        "until": until.isoformat(),
        "observed_until": observed.isoformat(),
        "settings": judging.model_dump(),
        "quarantines": _by_rule(
            [(s.rule, s.outcome) for s in found.stories],
            ("confirmed", "false_alarm", "pending", "not_drained"),
            ("confirmed", "false_alarm", "precision"),
        ),
        "restarts": _by_rule(
            [(r.rule, r.outcome) for r in found.restarts],
            ("held", "failed_again", "pending", "not_requeued"),
            ("held", "failed_again", "held_share"),
        ),
        "steps": [asdict(s) for s in found.steps],
        "lemons": {
            "chance": CHANCE,
            "failure_rate": found.failure_rate,
            "nodes_judged": found.nodes_judged,
            "alpha": judging.lemon_alpha,
            "nodes": [asdict(x) for x in found.lemons],
        },
        "ettr": {
            "all": _ettr(whole),
            "clusters": {c: _ettr(e) for c, e in clusters.items()},
            "jobs": [
                {**asdict(t), "wall_s": t.wall_s, "ettr": t.ettr}
                for t in sorted(times, key=lambda t: (t.ettr is None, t.ettr or 0.0, t.job_id))
            ],
        },
        "stories": [_jsonable(asdict(s)) for s in found.stories],
        "restart_outcomes": [_jsonable(asdict(r)) for r in found.restarts],
    }


def _by_rule(
    judged: list[tuple[str, str]], outcomes: tuple[str, ...], share: tuple[str, str, str]
) -> dict[str, dict[str, Any]]:
    """Counts per rule and outcome, and (named `share[2]`) the share of the judged (`share[0]`
    and `share[1]`) that were `share[0]`."""
    good, bad, name = share
    counts = Counter(judged)
    out = {}
    for rule in sorted({r for r, _ in judged}):
        row: dict[str, Any] = {o: counts[(rule, o)] for o in outcomes}
        row["decisions"] = sum(row.values())
        decided = row[good] + row[bad]
        row[name] = row[good] / decided if decided else None
        out[rule] = row
    return out


def _ettr(e: Ettr) -> dict[str, Any]:
    hours = 3600.0
    return {
        "jobs": e.jobs,
        "ettr": e.ettr,
        "productive_gpu_h": e.productive_gpu_s / hours,
        "lost_gpu_h": e.lost_gpu_s / hours,
        "open_gpu_h": e.open_gpu_s / hours,
    }


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}


def _share(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f} %"


def _seconds(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.0f} s" if value < 600 else f"{value / 60:.1f} min"


def _print(doc: dict[str, Any], console: Console) -> None:
    span = f"{doc['since'][:19]} → {doc['until'][:19]} UTC"
    q = Table("rule", "decisions", "confirmed", "false alarms", "pending", "not drained",
              "precision", title=f"Quarantines, {span}",
              caption=f"confirmed: benchmark failed, or failed again within "
              f"{doc['settings']['confirm_window_s'] / 3600:g} h of its release")  # fmt: skip
    for rule, row in doc["quarantines"].items():
        q.add_row(rule, *(str(row[k]) for k in ("decisions", "confirmed", "false_alarm",
                  "pending", "not_drained")), _share(row["precision"]))  # fmt: skip
    console.print(q)
    r = Table("rule", "decisions", "held", "failed again", "pending", "not requeued",
              "held share", title="Restarts",
              caption=f"failed again: the next attempt failed within "
              f"{doc['settings']['restart_window_s'] / 60:g} min of its start")  # fmt: skip
    for rule, row in doc["restarts"].items():
        r.add_row(rule, *(str(row[k]) for k in ("decisions", "held", "failed_again",
                  "pending", "not_requeued")), _share(row["held_share"]))  # fmt: skip
    console.print(r)
    skewed = sum(step["out_of_order"] for step in doc["steps"])
    s = Table("step", "stories", "p50", "p99", "out of order", title="Remediation steps",
              caption=f"out of order: {skewed} steps whose end was stamped before their start "
              "(the clocks that stamped them disagree), left out of p50 and p99"
              if skewed else None)  # fmt: skip
    for step in doc["steps"]:
        s.add_row(step["name"].replace("_", " "), str(step["count"]), _seconds(step["p50_s"]),
                  _seconds(step["p99_s"]), str(step["out_of_order"]))  # fmt: skip
    console.print(s)
    lemons = doc["lemons"]
    x = Table("node", "cluster", "jobs ran", "jobs failed", "expected by chance", "p-value",
              title="Lemon nodes", caption=f"{CHANCE}. Here: {_share(lemons['failure_rate'])}, "
              f"{lemons['nodes_judged']} nodes, alpha {lemons['alpha']:g}")  # fmt: skip
    for n in lemons["nodes"]:
        x.add_row(n["node"], n["cluster"], str(n["jobs_ran"]), str(n["jobs_failed"]),
                  f"{n['expected']:.2f}", f"{n['p_value']:.2e}")  # fmt: skip
    console.print(x)
    e = Table("cluster", "jobs", "ETTR", "productive GPU-h", "lost GPU-h", "not decided GPU-h",
              title="Effective training time (docs/goodput.md)")  # fmt: skip
    for cluster, row in [*doc["ettr"]["clusters"].items(), ("all", doc["ettr"]["all"])]:
        e.add_row(cluster, str(row["jobs"]), _share(row["ettr"]),
                  f"{row['productive_gpu_h']:.1f}", f"{row['lost_gpu_h']:.1f}",
                  f"{row['open_gpu_h']:.1f}")  # fmt: skip
    console.print(e)
    t = Table("way", "decisions", "expected GPU-h", "saved GPU-h",
              title="Slow nodes, timed to their jobs (docs/rules.md, slow_node)",
              caption="saved: against taking the node out at once; both as the rule weighed "
              "them when it decided")  # fmt: skip
    for way, w in doc["timed"].items():
        t.add_row(way.replace("_", " "), str(w["decisions"]), f"{w['expected_gpu_h']:.1f}",
                  f"{w['saved_gpu_h']:.1f}")  # fmt: skip
    console.print(t)


def register(app: typer.Typer) -> None:
    app.command("report")(report)
