"""Block Kit messages about one decision: what happened, why (the events behind it), what was
done (each detail in words), benchmarks, and how to see more."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from actions.slack.kit import Block, context, cut, header, section
from actions.slack.message import Message
from actions.slack.words import fold, label, plural, spoken, when
from schemas.events import Trigger
from schemas.events.actions import BenchmarkCompletedPayload

_MAX_CAUSES = 5
_TEXT_CHARS = 2900
_NOT_TOLD = frozenset({"benchmarks", "notified"})  # shown as a table; about Slack itself


def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "-" if value is None else format(value, spec)


def benchmark_table(results: Sequence[BenchmarkCompletedPayload]) -> str:
    rows = [("node", "gpu", "TFLOP/s", "mem GB/s", "busbw GB/s", "verdict")]
    for r in results:
        busbw = _fmt(r.nccl_busbw_gbps)
        for g in r.gpus or ():
            rows.append(
                (r.node, str(g.gpu), _fmt(g.matmul_tflops), _fmt(g.memory_bandwidth_gbps), busbw,
                 r.verdict)
            )  # fmt: skip
        if not r.gpus:
            rows.append((r.node, "-", "-", "-", busbw, r.verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in rows]
    reasons = [f"{r.node}: {why}" for r in results for why in r.reasons]
    return "```\n" + cut("\n".join(lines + reasons), _TEXT_CHARS - 20) + "\n```"


def done_words(detail: Mapping[str, Any]) -> str:
    """What an action did, a line per step, in words."""
    told = [f"• {label(k)}: {spoken(v)}" for k, v in detail.items() if k not in _NOT_TOLD]
    return "\n".join(told) or "• done"


def incident_message(
    trigger: Trigger,
    *,
    headline: str,
    line: str = "",
    note: str | None = None,
    done: Mapping[str, Any] | None = None,
    error: str | None = None,
    refused: bool = False,
    held: bool = False,
    benchmarks: Sequence[BenchmarkCompletedPayload] = (),
) -> Message:
    """`note`: what people are told (a Notify's text); `done`: what an action did; `error`: why
    it did not, `refused` when nothing was even tried, `held` when a silence held it; `line`:
    the headline as a digest folds it (`{nodes}` left to fill)."""
    outcome = None
    if error is not None:
        outcome = "held" if held else "refused" if refused else "failed"
    blocks = [header(headline), *([section(note)] if note else []), *_decided(trigger)]
    if outcome in ("held", "refused"):
        blocks.append(section(f"*What was done:* nothing — {outcome}: {error}"))
    elif error is not None:
        blocks.append(section(f"*What was done:* it failed — {error}"))
    elif done:
        blocks.append(section(f"*What was done:*\n{done_words(done)}"))
    if benchmarks:
        blocks.append(section("*Benchmarks:*\n" + benchmark_table(benchmarks)))
    blocks.append(context(*_more(trigger)))
    # The text is what notifications and clients without blocks show: the why of a refusal too.
    text = f"{headline}: {trigger.payload.reason}" + (f" — {outcome}: {error}" if outcome else "")
    nodes = tuple(getattr(trigger.payload, "nodes", ()))
    return Message(cut(text, _TEXT_CHARS), blocks, line=line, nodes=nodes)


def _decided(trigger: Trigger) -> list[Block]:
    p = trigger.payload
    nodes = tuple(getattr(p, "nodes", ()))
    who = f"operator *{p.operator}*" if p.operator else f"rule `{p.rule}`"
    verb = "Commanded" if p.operator else "Decided"
    forced = " — *forced* past the circuit breakers" if p.force else ""
    causes = ", ".join(f"`{c}`" for c in p.caused_by[:_MAX_CAUSES]) or "-"
    if len(p.caused_by) > _MAX_CAUSES:
        causes += f" and {plural(len(p.caused_by) - _MAX_CAUSES, 'more event')}"
    return [
        section(
            f"*{verb}* by {who}: {_action(trigger)} on cluster `{trigger.cluster}`, "
            f"about `{trigger.subject}` ({p.severity}){forced}"
            + (f"\n*Nodes:* `{fold(nodes)}` ({plural(len(nodes), 'node')})" if nodes else "")
        ),
        section(f"*Why:* {p.reason}\n*Caused by:* {causes}"),
    ]


def _action(trigger: Trigger) -> str:
    """`QuarantineNodes` as people say it: quarantine nodes."""
    name = trigger.type
    return "".join(f" {c.lower()}" if c.isupper() else c for c in name).strip()


def _more(trigger: Trigger) -> list[str]:
    nodes = tuple(getattr(trigger.payload, "nodes", ()))
    if len(nodes) == 1:
        see = f"centrality node {nodes[0]}"
    elif nodes:
        see = f"centrality nodes '{fold(nodes)}'"
    elif "/" in trigger.subject:  # a job: its id is scheduler-qualified
        see = f"centrality job {trigger.subject}"
    else:
        see = f"centrality node {trigger.subject}"
    return [when(trigger.occurred_at), f"more: `{see}`", f"trigger `{trigger.event_id}`"]
