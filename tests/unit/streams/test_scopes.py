"""Node groups: rule config scoped by selectors over a node's facts and its cluster; the most
specific scope decides and is named in the decision's reason; a scope set that cannot work is
one line at load."""

from __future__ import annotations

import json
from typing import Any

import pytest

from streams.rules.ladder import LadderConfig, plan
from streams.rules.registry import RuleConfigError, RuleEngine
from streams.rules.scopes import Match, clash
from streams.settings import BUILTIN_RULES
from streams.state.node import Node, NodeFacts
from streams.state.story import Stage
from streams.state.story import Story as NodeStory
from streams.state.training_job import TrainingJob
from streams.testing import T0, Story, facts, health
from tests.support.docs_examples import examples

A100 = {"gpu_model": "NVIDIA A100-SXM4-80GB"}
H100 = {"gpu_model": "NVIDIA H100 80GB HBM3"}
RULE = "repeated_health_failures"
A100_PATIENT = {RULE: {"scopes": [{"match": {"gpu_model": "NVIDIA A100*"}, "threshold": 5}]}}


def node(name: str = "gpu-01", cluster: str = "a", **known: Any) -> Node:
    return Node(node_id=name, cluster=cluster, facts=NodeFacts(**known))


def load(config: dict[str, Any]) -> RuleEngine:
    return RuleEngine.load(BUILTIN_RULES, config)


def bound(engine: RuleEngine, name: str = RULE) -> Any:
    return next(b for b in engine.rules if b.spec.name == name)


def test_each_key_selects_by_its_fact() -> None:
    gpu = node(
        partitions=("debug", "gpu"), features=("a100", "ib"), labels={"zone": "eu-1a"}, **A100
    )
    assert Match(gpu_model="NVIDIA A100*").selects(gpu)
    assert not Match(gpu_model="NVIDIA H100*").selects(gpu)
    assert Match(partition="gpu").selects(gpu) and not Match(partition="long").selects(gpu)
    assert Match(feature="ib").selects(gpu) and Match(feature="a1*").selects(gpu)
    assert Match(label={"zone": "eu-*"}).selects(gpu)
    assert not Match(label={"zone": "eu-*", "pool": "*"}).selects(gpu)  # no such label
    assert Match(cluster="a", node="gpu-[01-04]").selects(gpu)
    assert not Match(cluster="b").selects(gpu) and not Match(node="gpu-1*").selects(gpu)
    assert not Match(gpu_model="*").selects(node())  # a model not reported matches no glob


def test_a_job_has_no_node_facts_and_matches_by_cluster_only() -> None:
    job = TrainingJob.model_construct(job_id="slurm/a/1", cluster="a")
    assert Match(cluster="a").selects(job)
    assert not Match(cluster="a", gpu_model="*").selects(job)


def test_the_most_specific_scope_decides_else_the_rules_own() -> None:
    engine = load(
        {
            RULE: {
                "threshold": 3,
                "scopes": [
                    {"match": {"gpu_model": "NVIDIA A100*"}, "threshold": 5},
                    {"match": {"gpu_model": "NVIDIA A100*", "partition": "gpu"}, "threshold": 7},
                    {"match": {"cluster": "b", "gpu_model": "NVIDIA H*"}, "threshold": 9},
                ],
            }
        }
    )
    rule = bound(engine)
    assert rule.config_for(node(**H100)).threshold == 3
    assert rule.config_for(node(**A100)).threshold == 5
    assert rule.config_for(node(partitions=("gpu",), **A100)).threshold == 7
    assert rule.config_for(node(cluster="b", partitions=("gpu",), **A100)).threshold == 7
    assert rule.config_for(node(cluster="b", **H100)).threshold == 9
    # The scope's overrides go over the rule's own config, not over its defaults.
    assert rule.config_for(node(**A100)).window_s == rule.config.window_s


def test_one_rule_two_node_groups() -> None:
    story = Story(config=A100_PATIENT)
    story.tell(facts("a100", **A100), facts("h100", at_s=1, **H100))
    decided = []
    for i in range(5):
        for name in ("a100", "h100"):
            decided += story.tell(health(name, "gpu_burn", "CRITICAL", at_s=10 + 10 * i))
    drains = [t for t in decided if t.type == "QuarantineNodes"]
    assert [(t.subject, t.occurred_at.second) for t in drains] == [("h100", 30), ("a100", 50)]
    h100, a100 = (t.payload.reason for t in drains)
    assert a100.endswith("(scope gpu_model=NVIDIA A100*)")
    assert "scope" not in h100  # the rule's own config decided


def test_a_scope_in_shadow_or_off_for_its_group() -> None:
    config = {
        RULE: {
            "threshold": 1,
            "scopes": [
                {"match": {"gpu_model": "NVIDIA A100*"}, "mode": "shadow"},
                {"match": {"cluster": "test", "gpu_model": "NVIDIA H100*"}, "enabled": False},
            ],
        }
    }
    story = Story(config=config)
    story.tell(facts("a100", **A100), facts("h100", **H100), facts("other"))
    decided = story.tell(
        *(health(n, "gpu_burn", "CRITICAL", at_s=5) for n in ("a100", "h100", "other"))
    )
    drains = {t.subject: t.payload.shadow for t in decided if t.type == "QuarantineNodes"}
    assert drains == {"a100": True, "other": False}


def test_a_rule_off_but_on_in_one_scope() -> None:
    config = {
        RULE: {"enabled": False, "threshold": 1, "scopes": [{"match": A100, "enabled": True}]}
    }
    story = Story(config=config)
    story.tell(facts("a100", **A100), facts("h100", **H100))
    decided = story.tell(health("a100", "c", "CRITICAL", 5), health("h100", "c", "CRITICAL", 6))
    assert [t.subject for t in decided if t.type == "QuarantineNodes"] == ["a100"]


@pytest.mark.parametrize(
    ("scopes", "said"),
    [
        ([{"match": {"gpu_modle": "x"}, "threshold": 5}], "scopes.0.match.gpu_modle: Extra inputs"),
        ([{"match": {"gpu_model": "x"}, "idle_s": 5}], "scopes.0.idle_s: Extra inputs"),
        ([{"match": {"gpu_model": "x"}, "threshold": 0}], "scopes.0.threshold: Input should be"),
        ([{"match": {}, "threshold": 5}], "scopes.0.match: selects by nothing"),
        ([{"threshold": 5}], "scopes.0: a list of scopes, each {match"),
        ([{"match": {"node": "gpu-[01"}}], "scopes.0.match.node: Value error"),
        (
            [{"match": A100, "threshold": 5}, {"match": A100, "threshold": 6}],
            "scopes.0 (gpu_model=NVIDIA A100-SXM4-80GB) and scopes.1",
        ),
    ],
)
def test_a_scope_that_cannot_work_is_one_line_at_load(
    scopes: list[dict[str, Any]], said: str
) -> None:
    with pytest.raises(RuleConfigError) as raised:
        load({RULE: {"scopes": scopes}})
    message = str(raised.value)
    assert message.startswith(f"rule {RULE!r}: ") and said in message and "\n" not in message


def test_a_job_rule_scoped_by_node_facts_is_refused() -> None:
    with pytest.raises(RuleConfigError, match="not nodes, which have no node facts"):
        load({"checkpoint_stall": {"scopes": [{"match": {"gpu_model": "x"}, "limit_s": 60}]}})
    load({"checkpoint_stall": {"scopes": [{"match": {"cluster": "b"}, "limit_s": 60}]}})


@pytest.mark.parametrize(
    ("a", "b", "tie"),
    [
        (Match(gpu_model="NVIDIA A100*"), Match(gpu_model="NVIDIA A100*"), True),
        (Match(gpu_model="NVIDIA A100*"), Match(gpu_model="NVIDIA A100-SXM4-80GB"), True),
        (Match(gpu_model="NVIDIA A100*"), Match(gpu_model="NVIDIA H100*"), False),  # unproven
        (Match(gpu_model="NVIDIA A100*"), Match(partition="gpu"), True),  # a node may be both
        (Match(partition="gpu"), Match(partition="long"), True),  # in both partitions
        (Match(cluster="a"), Match(cluster="b"), False),
        (Match(node="gpu-[01-04]"), Match(node="gpu-[04-08]"), True),
        (Match(node="gpu-[01-04]"), Match(node="gpu-[05-08]"), False),
        (Match(node="gpu-[01-04]"), Match(node="gpu-0*"), True),
        (Match(label={"zone": "a"}), Match(label={"zone": "b"}), False),
        (Match(gpu_model="NVIDIA A100*"), Match(gpu_model="NVIDIA A100*", cluster="a"), False),
    ],
)
def test_ties_are_found_where_provable(a: Match, b: Match, tie: bool) -> None:
    assert clash(a, b) is tie and clash(b, a) is tie


def test_a_ladder_for_a_node_group() -> None:
    ladders = [
        LadderConfig(match=Match(gpu_model="NVIDIA A100*"), rungs={"other": ("reboot",)}),
        LadderConfig(nodes="gpu-*"),
    ]
    story = NodeStory(stage=Stage.DRAINED, reason="r", decided_at=T0, since=T0, triggers=())
    a100 = node(**A100).model_copy(update={"story": story})
    h100 = node(**H100).model_copy(update={"story": story})
    assert plan(a100, ladders) == ("reboot",)
    assert plan(h100, ladders) == ("validate", "reboot")


def test_the_rules_page_node_groups_load_and_decide() -> None:
    config = json.loads(examples("docs/rules.md")["node_groups.json"])
    rule = bound(load(config))
    assert rule.config_for(node(partitions=("long",), **A100)).mode == "shadow"
    lab = node(cluster="lab", labels={"nvidia.com/gpu.product": "NVIDIA-L40S", "pool": "inference"})
    assert not rule.config_for(lab).enabled
    assert (
        bound(load(config), "idle_allocation").config_for(node(partitions=("interactive",))).idle_s
        == 900
    )
