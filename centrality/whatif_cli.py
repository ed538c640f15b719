"""`centrality whatif`: a range of history re-decided under candidate rules, beside what was
decided then, every difference priced in GPU-hours, per rule and per node group."""

from __future__ import annotations

import os
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table

from centrality.errors import UserError
from centrality.history_cli import JSON, UNTIL, _checked_time, time_range
from centrality.progress import tracking, wanted

if TYPE_CHECKING:
    from streams.analysis.whatif.price import Priced
    from streams.analysis.whatif.run import WhatIf

RULES = typer.Option(
    None, "--rules", help="A rule module the candidate adds to today's (repeatable)."
)
SETS = typer.Option(
    None,
    "--set",
    help="A candidate setting, rule.field=value (repeatable), e.g. "
    "repeated_failures_on_node_set.threshold=3 or fatal_xid.enabled=false; '*.enabled=false': "
    "no rules at all.",
)
TOP = 20  # the costliest differences a table lists (--json lists every one)
_PRICES = ("capacity_gpu_h", "work_gpu_h", "idle_gpu_h", "gpu_h")


def whatif(
    since: str = typer.Option(
        "1d", callback=_checked_time, help="Start: ISO time, or an age like 30m, 2h, 7d."
    ),
    until: str = UNTIL,
    rules: list[str] | None = RULES,
    sets: list[str] | None = SETS,
    warmup_s: float | None = typer.Option(
        None,
        "--warmup-s",
        min=0,
        help="Seconds of history folded before the start. Default: the longest duration in "
        "today's rules' config or the candidate's.",
    ),
    parts: int = typer.Option(
        os.cpu_count() or 1, min=1, help="Processes re-deciding the range (default: one a core)."
    ),
    store: bool = typer.Option(
        True, "--store/--no-store", help="Keep the run in ClickHouse for the dashboards."
    ),
    cluster: str | None = typer.Option(
        None, "--cluster", help="Only this cluster's history (its own figures and assumptions)."
    ),
    json: bool = JSON,
) -> None:
    """What candidate rules would have decided over a range, each difference priced in GPU-hours.

    Beside what was decided then: capacity removed, work lost or saved, idle GPUs released."""
    from streams.analysis.replay.clickhouse_source import ClickHouseSource, Scope
    from streams.analysis.whatif.candidate import CandidateError, candidate
    from streams.analysis.whatif.run import warmup_for, what_if
    from streams.analysis.whatif.store import store_whatif
    from streams.history.settings import ClickHouseSettings
    from streams.settings import StreamsSettings

    if not rules and not sets:
        raise UserError("no candidate rules", "name one: --set rule.field=value, or --rules MODULE")
    now = datetime.now(UTC)
    start, end = time_range(since, until, now)
    try:
        cand = candidate(StreamsSettings(), rules or (), sets or ())
    except CandidateError as exc:
        raise UserError(f"the candidate cannot be loaded: {exc}", "fix --set or --rules") from None
    settings = ClickHouseSettings()
    source = ClickHouseSource(settings, Scope(start, end, cluster=cluster))
    warmup = warmup_for(cand) if warmup_s is None else warmup_s
    began = time.perf_counter()
    with tracking(wanted(json)) as progress:
        progress.phase(f"re-deciding under {cand.words} ({parts} parts)", total=1.0)
        run = what_if(source, cand, warmup, parts, now, on_progress=progress.update)
    elapsed_s = time.perf_counter() - began
    run_id = store_whatif(settings, now, run) if store else None
    doc = document(run, elapsed_s)
    doc["run_id"] = None if run_id is None else str(run_id)
    if json:
        print(orjson.dumps(doc).decode())
        return
    _print(doc, Console())


def document(run: WhatIf, elapsed_s: float) -> dict[str, Any]:
    from streams.analysis.replay.reasons import NOT_THE_RULES, counts

    then = Counter(d.then.payload.rule for d in run.decisions if d.then is not None)
    now = Counter(d.now.payload.rule for d in run.decisions if d.now is not None)
    # The candidate's differences only: those any rules would show are named apart, unpriced.
    edges = {tid for tid, why in run.whys.items() if why.reason in NOT_THE_RULES}
    priced_ids = {p.decision.trigger_id for p in run.priced}
    assumed = run.pricing
    return {
        "since": run.since.isoformat(),
        "until": run.until.isoformat(),
        "candidate": run.candidate.words,
        "warmup_s": run.warmup_s,
        "parts": run.rerun.parts,
        "events": run.rerun.events,
        "elapsed_s": round(elapsed_s, 3),
        "assumptions": {
            "response_s": assumed.response_s,
            "repair_s": assumed.repair_s,
            "node_gpus": assumed.node_gpus,
            **_measured(run),
            "sign": "positive: GPU-hours the candidate costs; negative: GPU-hours it saves",
        },
        "decisions": {"then": sum(then.values()), "now": sum(now.values())},
        "differing": sum(d.status != "same" and d.trigger_id not in edges for d in run.decisions),
        "not_priced": counts({tid: w for tid, w in run.whys.items() if tid not in priced_ids}),
        "total": _sums(run.priced),
        "rules": _by_rule(run, then, now, edges),
        "groups": _by_group(run.priced),
        "priced": [_priced_json(q) for q in sorted(run.priced, key=lambda q: -abs(q.price.gpu_h))],
    }


def _by_rule(
    run: WhatIf, then: Counter[str], now: Counter[str], edges: set[str]
) -> dict[str, dict[str, Any]]:
    """Per rule, its decisions then and now, its differences (but `edges`) and their price."""
    statuses = Counter(
        (d.trigger.payload.rule, d.status) for d in run.decisions if d.trigger_id not in edges
    )
    rules: dict[str, dict[str, Any]] = {}
    for rule in sorted(then.keys() | now.keys()):
        rules[rule] = {
            "then": then[rule],
            "now": now[rule],
            **{s: statuses[(rule, s)] for s in ("new", "missing", "changed")},
            **_sums(p for p in run.priced if p.decision.trigger.payload.rule == rule),
        }
    return rules


def _by_group(priced: list[Priced]) -> list[dict[str, Any]]:
    """Per node group (a cluster's nodes of one GPU model), its priced differences summed."""
    groups: dict[tuple[str, str | None], list[Priced]] = defaultdict(list)
    for p in priced:
        groups[(p.cluster, p.gpu_model)].append(p)
    return [
        {"cluster": c, "gpu_model": m, "decisions": len(ps), **_sums(ps)}
        for (c, m), ps in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))
    ]


def _priced_json(q: Priced) -> dict[str, Any]:
    return {
        "trigger_id": q.decision.trigger_id,
        "status": q.decision.status,
        "type": q.decision.trigger.type,
        "rule": q.decision.trigger.payload.rule,
        "subject": q.decision.trigger.subject,
        "cluster": q.cluster,
        "gpu_model": q.gpu_model,
        "occurred_at": q.decision.trigger.occurred_at.isoformat(),
        "capacity_gpu_h": q.price.capacity_gpu_h,
        "work_gpu_h": q.price.work_gpu_h,
        "idle_gpu_h": q.price.idle_gpu_h,
        "gpu_h": q.price.gpu_h,
        "basis": q.price.basis,
    }


def _measured(run: WhatIf) -> dict[str, Any]:
    """What pricing a quarantine not made took from the range (or assumed), in figures and
    words (`streams.analysis.whatif.through`)."""
    a = run.assumed
    if a is None:
        return {}
    return {
        "precision": dict(a.precision),
        "precision_assumed": a.precision_assumed,
        "fails_after_s": a.fails_after_s,
        "fails_after": a.fails_after_words,
        "reuse": a.reuse,
        "reuse_said": a.reuse_words,
        "restarts": a.restarts,
        "job_gpus": dict(a.job_gpus),
    }


def _sums(priced: Any) -> dict[str, float]:
    out = dict.fromkeys(_PRICES, 0.0)
    for p in priced:
        for name in _PRICES:
            out[name] += getattr(p.price, name)
    return out


def _h(value: float) -> str:
    return f"{value:+.1f}" if value else "0"


def _let_through(a: dict[str, Any]) -> str:
    """What pricing a quarantine not made assumed, in words."""
    measured = ", ".join(f"{r} {p:.0%}" for r, p in sorted(a["precision"].items())) or "none"
    restarts = "none" if a["restarts"] is None else a["restarts"]
    return (
        f"a node a rule took out was faulty as its benchmark and what followed say, else at the "
        f"rule's precision ({measured}; unmeasured {a['precision_assumed']:.0%}); a job on a "
        f"faulty node fails {a['fails_after']} in; a restart goes back to a node it had "
        f"{a['reuse_said']}; restarts a job may have: {restarts}"
    )


def _print(doc: dict[str, Any], console: Console) -> None:
    a = doc["assumptions"]
    caption = (
        f"GPU-hours: + the candidate costs them, - it saves them; a person answers a dead job "
        f"after {a['response_s'] / 60:g} min, a node never back is out {a['repair_s'] / 3600:g} h, "
        f"a node no event counted has {a['node_gpus']} GPUs (CENTRALITY_WHATIF_*)"
    )
    if "fails_after" in a:
        caption += "; " + _let_through(a)
    title = f"what-if {doc['candidate']}: {doc['since'][:19]} → {doc['until'][:19]} UTC"
    rules = Table("rule", "then", "now", "new", "missing", "changed", "capacity", "work", "idle",
                  "net GPU-h", title=title, caption=caption)  # fmt: skip
    for rule, row in doc["rules"].items():
        rules.add_row(rule, *(str(row[k]) for k in ("then", "now", "new", "missing", "changed")),
                      *(_h(row[k]) for k in _PRICES))  # fmt: skip
    t = doc["total"]
    rules.add_row("[bold]all[/]", str(doc["decisions"]["then"]), str(doc["decisions"]["now"]),
                  "", "", "", *(f"[bold]{_h(t[k])}[/]" for k in _PRICES))  # fmt: skip
    console.print(rules)
    groups = Table("cluster", "GPU model", "decisions", "capacity", "work", "idle", "net GPU-h",
                   title="by node group")  # fmt: skip
    for g in doc["groups"]:
        groups.add_row(g["cluster"], g["gpu_model"] or "—", str(g["decisions"]),
                       *(_h(g[k]) for k in _PRICES))  # fmt: skip
    console.print(groups)
    if doc["not_priced"]:
        named = Table("reason", "decisions", title="differences any rules would show: not priced")
        for reason, n in doc["not_priced"].items():
            named.add_row(reason, str(n))
        console.print(named)
    costly = Table("status", "type", "subject", "rule", "GPU-h", "basis",
                   title=f"costliest differences (of {len(doc['priced'])})")  # fmt: skip
    for q in doc["priced"][:TOP]:
        costly.add_row(q["status"], q["type"], q["subject"], q["rule"], _h(q["gpu_h"]), q["basis"])
    console.print(costly)


def register(app: typer.Typer) -> None:
    app.command("whatif")(whatif)
