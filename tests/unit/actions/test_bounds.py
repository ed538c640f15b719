"""What the worker writes stays within a message, whatever a handler or trigger put in it."""

from __future__ import annotations

from pydantic_core import to_json

from actions.bounds import MAX_DETAIL_BYTES, MAX_TEXT_CHARS, bounded_detail, bounded_text


def test_short_values_are_kept_whole() -> None:
    assert bounded_text("slurmctld busy") == "slurmctld busy"
    assert bounded_detail({"drained": ["n1"]}) == {"drained": ["n1"]}


def test_long_text_keeps_its_start_and_says_how_long_it_was() -> None:
    text = "x" * 1_000_000
    out = bounded_text(text)
    assert out.startswith("x" * MAX_TEXT_CHARS) and "1000000 chars" in out
    assert len(out) < MAX_TEXT_CHARS + 50


def test_large_detail_is_replaced_by_a_summary() -> None:
    detail = {"nodes": [f"node-{i}" for i in range(50_000)], "scheduler": "slurm"}
    out = bounded_detail(detail)
    assert out["truncated"] is True and out["bytes"] == len(to_json(detail))
    assert out["keys"] == ["nodes", "scheduler"]
    assert len(to_json(out)) <= MAX_DETAIL_BYTES
