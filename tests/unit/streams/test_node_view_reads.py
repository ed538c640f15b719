"""A node's view is left unbuilt when none of the fields it reads changed
(`streams.brain.views.NODE_VIEW_READS`): those are every field `node_status` reads, over whole
stories, and a view left unbuilt is always one that would have read the same."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from schemas.envelope import Event
from schemas.events import Trigger
from streams.brain.process import Brain
from streams.brain.views import NODE_VIEW_READS, Views, node_status
from streams.rules.registry import RuleEngine
from streams.settings import StreamsSettings
from streams.state.entities import NODES
from streams.state.node import Node
from streams.testing import (
    T0,
    benchmark,
    facts,
    heartbeat,
    result,
    running,
    sample,
    scheduler_says,
    xid,
)

Seen = tuple[Node | None, Node, Event]


class Recording(Brain):
    """A brain that keeps every change of a node: the state before, after, and its cause."""

    def __init__(self) -> None:
        super().__init__(RuleEngine.load(StreamsSettings().rule_modules, {}))
        self.seen: list[Seen] = []

    def handle(self, event: Event) -> list[Trigger]:
        before = dict(self.nodes)
        decided = super().handle(event)
        for key, node in self.nodes.items():
            if before.get(key) is not node:
                self.seen.append((before.get(key), node, event))
        return decided

    def feed(self, *events: Event) -> list[Trigger]:
        return [t for e in events for t in self.handle(e)]


class Reads:
    """A node that notes each field read of it, through its properties too."""

    def __init__(self, node: Node) -> None:
        self.node, self.read = node, set[str]()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(type(self.node), name, None)
        if isinstance(attr, property):  # read its fields through this proxy too
            return attr.fget(self) if attr.fget is not None else None
        self.read.add(name)
        return getattr(self.node, name)


def _at(at_s: float) -> datetime:
    return T0 + timedelta(seconds=at_s)


def stories() -> list[Seen]:
    """A node through a fault's whole story, with facts, samples, a job, a hand-made resume
    and silence; another drained by someone else."""
    b = Recording()
    b.feed(heartbeat("n1", at_s=0), facts("n1", at_s=0, gpu_model="H100", gpu_count=8))
    b.feed(running(attempt=1, at_s=1), sample("n1", at_s=2, ecc_single_bit=3))
    [drain] = b.feed(xid("n1", 79, at_s=3))
    [bench] = b.feed(result(drain, at_s=4))
    [release] = b.feed(result(bench, at_s=5), benchmark(at_s=6, trigger=bench))
    b.feed(result(release, at_s=7), heartbeat("n1", at_s=30))
    [drain] = b.feed(xid("n1", 79, at_s=40))
    b.feed(result(drain, at_s=41), scheduler_says("n1", "AVAILABLE", at_s=42, reason=None))
    b.feed(heartbeat("n2", at_s=0), scheduler_says("n2", "DRAINED", at_s=50, reason="admin"))
    b.tick(_at(3600))  # both silent for an hour: lost
    b.feed(heartbeat("n1", at_s=3601))
    return b.seen


def test_the_view_reads_only_the_fields_named() -> None:
    seen = stories()
    read: set[str] = set()
    for _, node, _ in seen:
        reads = Reads(node)
        assert node_status(reads) == node_status(node)  # type: ignore[arg-type]
        read |= reads.read
    assert read <= set(NODE_VIEW_READS), read - set(NODE_VIEW_READS)
    assert len(seen) > 20  # whole stories: every branch of the view was taken


def test_a_view_left_unbuilt_is_one_that_did_not_change() -> None:
    views, skipped = Views(Recording().engine), 0
    for before, after, cause in stories():
        published = views.status_change(NODES, before, after, cause)
        changed = before is None or node_status(before) != node_status(after)
        assert (published is not None) == changed, (cause.type, before, after)
        skipped += before is not None and all(
            getattr(before, f) is getattr(after, f) for f in NODE_VIEW_READS
        )
    assert skipped > 0  # heartbeats and samples: the view was never built for them
