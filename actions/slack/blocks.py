"""Block Kit messages: what happened, why (the events behind it), what was done, benchmarks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from actions.slack.notifier import Message
from schemas.events import Trigger
from schemas.events.actions import BenchmarkCompletedPayload

_MAX_CAUSES = 5
_MAX_TEXT = 2900  # a section's text may hold 3000 characters


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:_MAX_TEXT]}}


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
    return "```\n" + "\n".join(lines + reasons) + "\n```"


def _done(detail: Mapping[str, Any]) -> str:
    return "\n".join(f"• {k}: `{v}`" for k, v in detail.items() if k != "benchmarks")


def incident_message(
    trigger: Trigger,
    *,
    headline: str,
    note: str | None = None,
    done: Mapping[str, Any] | None = None,
    error: str | None = None,
    refused: bool = False,
    held: bool = False,
    benchmarks: Sequence[BenchmarkCompletedPayload] = (),
) -> Message:
    """`note`: what people are told (a Notify's text); `done`: what an action did; `error`: why
    it did not, `refused` when nothing was even tried, `held` when a silence held it."""
    p = trigger.payload
    causes = ", ".join(f"`{c}`" for c in p.caused_by[:_MAX_CAUSES])
    more = f" (+{len(p.caused_by) - _MAX_CAUSES} more)" if len(p.caused_by) > _MAX_CAUSES else ""
    nodes = getattr(p, "nodes", ())
    who = f"operator `{p.operator}`" if p.operator else f"rule `{p.rule}`"
    verb = "Commanded" if p.operator else "Decided"
    forced = " — *forced* past the circuit breakers" if p.force else ""
    blocks = [
        {"type": "header", "text": {"type": "plain_text", "text": headline[:150]}},
        *([_section(note)] if note else []),
        _section(
            f"*{verb}:* `{trigger.type}` by {who} on `{trigger.cluster}` / "
            f"`{trigger.subject}` ({p.severity}){forced}"
            + (f"\n*Nodes:* {', '.join(f'`{n}`' for n in nodes)}" if nodes else "")
        ),
        _section(f"*Why:* {p.reason}\n*Caused by:* {causes or '-'}{more}"),
    ]
    outcome = None
    if error is not None:
        outcome = "held" if held else "refused" if refused else "failed"
    if outcome in ("held", "refused"):
        blocks.append(_section(f"*What was done:* nothing — {outcome}: {error}"))
    elif error is not None:
        blocks.append(_section(f"*What was done:* it failed — {error}"))
    elif done:
        blocks.append(_section(f"*What was done:*\n{_done(done)}"))
    if benchmarks:
        blocks.append(_section("*Benchmarks:*\n" + benchmark_table(benchmarks)))
    blocks.append(
        {
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": f"trigger `{trigger.event_id}`"}],
        }
    )
    # The text is what notifications and clients without blocks show: the why of a refusal too.
    text = f"{headline}: {p.reason}" + (f" — {outcome}: {error}" if outcome else "")
    return Message(text=text[:_MAX_TEXT], blocks=blocks)
