"""A command from the page: what is sent, what it will do, and what the breaker would say."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from actions.settings import ActionsSettings
from centrality.bench.console_fleet import fleet
from centrality.console.acting import Order, Refused, preview
from schemas.events import JobStatusChanged, NodeStatusChanged
from schemas.runtime.fleet import Fleet

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
FLEET = Fleet()
for _event in fleet(200, NOW):
    if isinstance(_event, NodeStatusChanged):
        FLEET.nodes[_event.subject] = _event
    elif isinstance(_event, JobStatusChanged):
        FLEET.jobs[_event.subject] = _event
SETTINGS = ActionsSettings(quarantine_max_share=0.04, quarantine_window_s=3600)


def order(**doc: object) -> Order:
    return Order.parse({"verb": "quarantine", "targets": ["gpu-00010"], "reason": "x"} | doc)


@pytest.mark.parametrize(
    ("doc", "why"),
    [
        ({"verb": "reboot"}, "unknown command 'reboot'"),
        ({"targets": []}, "name at least one node or job"),
        ({"reason": "  "}, "a reason is required"),
        ({"verb": "cancel", "targets": ["a", "b"]}, "cancel takes one job"),
    ],
)
def test_what_is_not_sent(doc: dict[str, object], why: str) -> None:
    with pytest.raises(Refused, match=why):
        order(**doc)


def test_a_quarantine_says_what_happens_and_what_the_breaker_would_say() -> None:
    said = preview(order(), FLEET, SETTINGS)
    assert said["what"].startswith("Drain and taint gpu-00010 (c0); they stay quarantined until")
    # c0: 100 nodes, 4 drained or draining already (benchmarking, draining; a held decision
    # drained nothing), with this one 5.
    assert said["breaker"].startswith("The breaker would refuse it: 5 of 100 nodes of c0")
    small = preview(order(), FLEET, ActionsSettings(quarantine_max_share=0.5))
    assert small["breaker"].startswith("The breaker would let it through")
    forced = preview(order(force=True), FLEET, SETTINGS)
    assert forced["breaker"].endswith("Forced: the breaker is passed, and the result says so.")


def test_a_benchmark_of_a_node_in_service_is_refused_by_the_breaker() -> None:
    said = preview(order(verb="benchmark", targets=["gpu-00011", "gpu-00001"]), FLEET, SETTINGS)
    assert said["breaker"].startswith("The breaker refuses it: gpu-00011 not drained")
    drained = preview(order(verb="benchmark", targets=["gpu-00001"]), FLEET, SETTINGS)
    assert drained["breaker"] == "The breaker lets it run: every node named is drained."


def test_a_requeue_names_its_checkpoint_and_the_restart_budget() -> None:
    said = preview(order(verb="requeue", targets=["slurm/c0/3"]), FLEET, SETTINGS)
    assert said["what"] == (
        "Requeue job slurm/c0/3 (c0) from its checkpoint at step 300 (s3://ckpt/3)."
    )
    assert "it has used 0; its restart rule has 3 left" in said["breaker"]
    scratch = preview(
        order(verb="requeue", targets=["slurm/c0/3"], from_scratch=True), FLEET, SETTINGS
    )
    assert scratch["what"].endswith("from scratch.")


def test_unknown_or_mixed_subjects_are_refused() -> None:
    with pytest.raises(Refused, match="unknown node"):
        preview(order(targets=["gpu-99999"]), FLEET, SETTINGS)
    with pytest.raises(Refused, match="several clusters"):
        preview(order(targets=["gpu-00001", "gpu-00002"]), FLEET, SETTINGS)
    with pytest.raises(Refused, match="unknown job"):
        preview(order(verb="cancel", targets=["slurm/x/1"]), FLEET, SETTINGS)
