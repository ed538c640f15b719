"""`centrality bench incidents`' targets, judged on its figures, and its tables for people."""

from __future__ import annotations

import json
from typing import Any, Protocol

from rich.console import Console
from rich.table import Column, Table

from streams.state.node import LOST_RULE

RATE_LIMITED = ": ratelimited"  # a 429 the notifier waits out, as Slack asks


class Targets(Protocol):
    @property
    def nodes(self) -> int: ...
    @property
    def rule_limit_s(self) -> float: ...
    @property
    def silent_messages_max(self) -> int: ...
    @property
    def burst_p99_max_ms(self) -> float: ...
    @property
    def burst_messages_max(self) -> int: ...


def targets(result: dict[str, Any], opts: Targets) -> dict[str, bool]:
    silent, burst = result["silent"], result["burst"]
    lost_max = silent["beat_to_unreachable_max_ms"]
    opened = next(iter(silent["incidents_opened"].values()), None)
    p99 = burst["xid_to_decided_p99_ms"]
    return {
        "silent_every_node_unreachable": silent["unreachable"] == opts.nodes
        and silent["listed_unreachable"] == opts.nodes
        and lost_max is not None
        and lost_max <= 2000 * opts.rule_limit_s,
        "silent_one_incident": len(silent["incidents_opened"]) == 1
        and opened is not None
        and opened["kind"] == LOST_RULE
        and opened["nodes"] == opts.nodes
        and silent["listed_heartbeat_lost"] == [opts.nodes]
        and silent["listed_incidents"] == 1
        and "none" not in silent["listed_incidents_named"]
        and len(silent["listed_incidents_named"]) == 1,
        "silent_messages": silent["slack"]["messages"] <= opts.silent_messages_max,
        "silent_no_drain": silent["quarantines"] == 0,
        "silent_back_and_resolved": silent["back_all"],
        "burst_every_xid_decided": burst["decided"] == burst["xids"],
        "burst_decided_p99": p99 is not None and p99 <= opts.burst_p99_max_ms,
        "burst_messages_first_window": burst["slack_in_window"]["messages"]
        <= opts.burst_messages_max,
        "slack_every_call_taken": result["slack_lost"] == 0
        and all(call.endswith(RATE_LIMITED) for call in result["slack_refused"]),
    }


def _said(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)  # spaced: a cell wraps between items
    return str(value)


def _figures(title: str, figures: dict[str, Any]) -> Table:
    table = Table("figure", Column("value", overflow="fold"), title=title)
    for name, value in figures.items():
        table.add_row(name, _said(value))
    return table


def print_result(result: dict[str, Any], console: Console) -> None:
    nested = ("silent", "burst", "workers", "beside_cpu_percent", "targets", "notes")
    console.print(_figures("bench incidents", {k: v for k, v in result.items() if k not in nested}))
    for title, phase in (("silent fleet", "silent"), ("burst of fatal XIDs", "burst")):
        figures = {k: v for k, v in result[phase].items() if k != "slack_said"}
        console.print(_figures(title, figures))
        said = Table(
            Column("what Slack was told (new messages, ↳ a reply)", overflow="fold"),
            title=f"{title}: Slack",
        )
        for text in result[phase]["slack_said"]:
            said.add_row(text)
        console.print(said)
    workers = Table("worker", "cpu %", "peak RSS MB", title="workers")
    for name, w in result["workers"].items():
        workers.add_row(name, _said(w["cpu_percent"]), _said(w["rss_peak_mb"]))
    console.print(workers)
    beside = Table("beside the workers", "cpu %", title="the rest of the machine")
    for name, percent in result["beside_cpu_percent"].items():
        beside.add_row(name, _said(percent))
    console.print(beside)
    met = Table("target", "met", title="targets")
    for name, ok in result["targets"].items():
        met.add_row(name, "[green]yes[/]" if ok else "[red]no[/]")
    console.print(met)
    for note in result["notes"]:
        console.print(f"note: {note}", markup=False)
    missed = [name for name, ok in result["targets"].items() if not ok]
    verdict = f"[red]missed:[/] {', '.join(missed)}" if missed else "[green]every target met[/]"
    console.print(verdict)
