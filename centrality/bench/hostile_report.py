"""The hostile bench's outcome: its figures, its targets, and how they are shown."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
from rich.console import Console
from rich.table import Table

from centrality.bench.hostile_send import Sent

if TYPE_CHECKING:
    from centrality.bench.hostile import Options


def _r(value: float | None, digits: int = 2) -> float | None:
    return None if value is None else round(value, digits)


@dataclass
class Outcome:
    messages: int
    opts: Options
    build_s: float = 0.0
    ready_s: float | None = None
    warmup_decided_s: float | None = None
    sent: Sent = field(default_factory=Sent)
    unsigned: set[uuid.UUID] = field(default_factory=set)
    unsigned_obeyed: int | None = None
    alive: dict[str, bool] = field(default_factory=dict)
    exit_codes: dict[str, int | None] = field(default_factory=dict)
    log_tails: dict[str, str] = field(default_factory=dict)
    consumed_s: dict[str, float | None] = field(default_factory=dict)
    storm_read: dict[str, int] = field(default_factory=dict)
    """Storm records in each worker's inputs (their end offsets before and after it was sent)."""
    storm_cpu_s: dict[str, float | None] = field(default_factory=dict)
    """Each worker's CPU from the storm's first send until its group had consumed it; None for
    one whose inputs the storm did not go to (`--topics`): what it did then was not the storm's."""
    lag: dict[str, int] = field(default_factory=dict)
    wedged: list[str] = field(default_factory=list)
    """Workers whose group stopped moving for `stall_s` while the storm was not consumed."""
    restart_seen: bool = False
    story_decided_s: float | None = None
    decided_after_storm_s: float | None = None
    peak_rss_mb: dict[str, float | None] = field(default_factory=dict)
    stop_s: dict[str, float | None] = field(default_factory=dict)
    dead_letters: dict[str, int] = field(default_factory=dict)
    dead_letters_by_worker: dict[str, dict[str, int]] = field(default_factory=dict)
    logs: str | None = None

    @property
    def targets(self) -> dict[str, bool]:
        after = self.decided_after_storm_s
        stops = list(self.stop_s.values())
        return {
            "ready": self.warmup_decided_s is not None and self.sent.send_s > 0,
            "workers_alive": bool(self.alive) and all(self.alive.values()),
            "storm_consumed": bool(self.consumed_s)
            and all(s is not None for s in self.consumed_s.values()),
            "story_decided": after is not None and after <= self.opts.decide_within_s,
            "unsigned_ignored": self.unsigned_obeyed == 0,
            "stops": bool(stops)
            and all(s is not None and s <= self.opts.stop_within_s for s in stops),
        }

    def cpu_ms_per_message(self) -> dict[str, float | None]:
        """What a storm record cost each worker, in CPU: on a machine the producers and the
        other workers share, the storm's wall time says less about the worker than this."""
        return {
            w: None if cpu is None or not self.storm_read.get(w) else cpu * 1e3 / self.storm_read[w]
            for w, cpu in self.storm_cpu_s.items()
        }

    @property
    def ok(self) -> bool:
        return all(self.targets.values())

    def to_json(self) -> dict[str, Any]:
        sent = self.sent.summary()
        return {
            "messages": self.messages,
            "sent": sent,
            "send_s": _r(self.sent.send_s),
            "send_rate_mps": round(sent["total"] / self.sent.send_s) if self.sent.send_s else None,
            "build_s": _r(self.build_s),
            "ready_s": _r(self.ready_s),
            "warmup_decided_s": _r(self.warmup_decided_s),
            "dead_letters": self.dead_letters,
            "dead_letters_by_worker": self.dead_letters_by_worker,
            "workers_alive": self.alive,
            "exit_codes": self.exit_codes,
            "storm_consumed_s": {w: _r(s) for w, s in self.consumed_s.items()},
            "storm_read": self.storm_read,
            "storm_cpu_ms_per_message": {
                w: _r(ms, 3) for w, ms in self.cpu_ms_per_message().items()
            },
            "lag_left": self.lag,
            "wedged": self.wedged,
            "story_restart_seen": self.restart_seen,
            "story_decided_s": _r(self.story_decided_s),
            "decided_after_storm_s": _r(self.decided_after_storm_s),
            "unsigned_sent": len(self.unsigned),
            "unsigned_obeyed": self.unsigned_obeyed,
            "peak_rss_mb": self.peak_rss_mb,
            "stop_s": {w: _r(s) for w, s in self.stop_s.items()},
            "targets": self.targets,
            "ok": self.ok,
            "logs": self.logs,
        }


def print_outcome(outcome: Outcome, *, json: bool, console: Console, progress: Console) -> None:
    _tell_exits(outcome, progress)
    result = outcome.to_json()
    if json:
        print(orjson.dumps(result).decode())
        return
    mark = {True: "[green]yes[/]", False: "[red]NO[/]"}
    console.print(_targets(outcome, result, mark))
    console.print(_workers(outcome, result, mark))
    console.print(_sent(result))
    console.print(_dead_letters(outcome))
    if outcome.logs:
        console.print(f"worker logs kept in {outcome.logs}")


def _tell_exits(outcome: Outcome, progress: Console) -> None:
    """Each worker that exited, and the end of its log: on stderr, so a JSON line stays alone."""
    for name, tail in outcome.log_tails.items():
        progress.log(f"{name} worker exited with {outcome.exit_codes[name]}; its log ends:")
        print(tail, file=sys.stderr)


def _targets(outcome: Outcome, result: dict[str, Any], mark: dict[bool, str]) -> Table:
    """Each target: its figure, its limit, whether it was met."""
    opts = outcome.opts
    targets = Table("target", "value", "limit", "met", title="bench hostile: targets")
    met = outcome.targets
    targets.add_row(
        "ready: a first story decided on the idle pipeline",
        f"after {result['ready_s']} s (decided {result['warmup_decided_s']} s after its events)",
        f"within {opts.ready_timeout_s:g} s",
        mark[met["ready"]],
    )
    targets.add_row(
        "workers alive", str(result["workers_alive"]), "all", mark[met["workers_alive"]]
    )
    targets.add_row(
        "storm consumed (s after sent)",
        str(result["storm_consumed_s"]),
        f"every worker, within {opts.timeout_s:g} s",
        mark[met["storm_consumed"]],
    )
    targets.add_row(
        "story decided (s after the storm was consumed)",
        f"{result['decided_after_storm_s']} ({result['story_decided_s']} after its events)",
        f"≤ {opts.decide_within_s:g}",
        mark[met["story_decided"]],
    )
    targets.add_row(
        "unsigned triggers obeyed",
        f"{result['unsigned_obeyed']} of {result['unsigned_sent']}",
        "0",
        mark[met["unsigned_ignored"]],
    )
    targets.add_row(
        "stop on SIGTERM (s)",
        str(result["stop_s"]),
        f"≤ {opts.stop_within_s:g}",
        mark[met["stops"]],
    )
    return targets


def _sent(result: dict[str, Any]) -> Table:
    """The storm by kind, by codec, and what the producers refused to send."""
    sent = result["sent"]
    kinds = Table(
        "kind",
        "sent",
        title=f"sent {sent['total']} in {result['send_s']} s ({result['send_rate_mps']}/s)",
    )
    for kind, n in sent["by_kind"].items():
        kinds.add_row(kind, str(n))
    for codec, n in sent["by_codec"].items():
        kinds.add_row(f"[dim]codec[/] {codec}", str(n))
    for what, n in sent["refused"].items():
        kinds.add_row(f"[yellow]refused[/] {what}", str(n))
    return kinds


def _dead_letters(outcome: Outcome) -> Table:
    """Dead letters by reason: in all, and by the worker whose consumer wrote them."""
    names = list(outcome.dead_letters_by_worker)
    letters = Table("reason", "total", *names, title="dead letters")
    for reason, n in outcome.dead_letters.items():
        per = [str(outcome.dead_letters_by_worker[w].get(reason, "")) for w in names]
        letters.add_row(reason, str(n), *per)
    return letters


def _workers(outcome: Outcome, result: dict[str, Any], mark: dict[bool, str]) -> Table:
    """A row a figure and a column a worker: whole in an 80-column pipe, as a column a figure
    is not."""
    names = list(outcome.alive)
    figures: dict[str, Callable[[str], str]] = {
        "alive": lambda w: mark[outcome.alive[w]],
        "wedged": lambda w: "[red]yes[/]" if w in outcome.wedged else "no",
        "storm consumed, s after sent": lambda w: _cell(result["storm_consumed_s"].get(w)),
        "storm records read": lambda w: _cell(outcome.storm_read.get(w)),
        "CPU ms a storm record": lambda w: _cell(result["storm_cpu_ms_per_message"].get(w)),
        "lag left": lambda w: _cell(outcome.lag.get(w)),
        "peak RSS MB": lambda w: _cell(outcome.peak_rss_mb.get(w)),
        "stop s": lambda w: _cell(result["stop_s"].get(w)),
    }
    table = Table("worker", *names)
    for label, value in figures.items():
        table.add_row(label, *(value(w) for w in names))
    return table


def _cell(value: object) -> str:
    """A figure as people read it: none (a storm that did not reach the worker, a stop never
    timed) is a dash, not Python's `None`."""
    return "-" if value is None else str(value)
