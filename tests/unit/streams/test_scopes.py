"""Node groups: rule config scoped by selectors over a node's facts and its cluster; the most
specific scope decides and is named in the decision's reason; a scope set that cannot work is
one line at load."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas.groups import ALL, JOBS, Match
from streams.brain.views import restart_budget
from streams.rules.ladder import LadderConfig, plan
from streams.rules.registry import RuleConfigError, RuleEngine
from streams.rules.scopes import clash
from streams.settings import BUILTIN_RULES
from streams.state.node import Node, NodeFacts
from streams.state.story import Stage
from streams.state.story import Story as NodeStory
from streams.state.training_job import TrainingJob
from streams.testing import JOB, T0, Story, ended, facts, health, running, submitted
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
    ).group_facts
    assert Match(gpu_model="NVIDIA A100*").selects(gpu)
    assert not Match(gpu_model="NVIDIA H100*").selects(gpu)
    assert Match(partition="gpu").selects(gpu) and not Match(partition="long").selects(gpu)
    assert Match(feature="ib").selects(gpu) and Match(feature="a1*").selects(gpu)
    assert Match(label={"zone": "eu-*"}).selects(gpu)
    assert not Match(label={"zone": "eu-*", "pool": "*"}).selects(gpu)  # no such label
    assert Match(cluster="a", node="gpu-[01-04]").selects(gpu)
    assert not Match(cluster="b").selects(gpu) and not Match(node="gpu-1*").selects(gpu)
    assert not Match(gpu_model="*").selects(node().group_facts)  # a model not reported
    assert not Match(job_name="*").selects(gpu) and not Match(min_nodes=1).selects(gpu)


def test_a_job_is_selected_by_what_it_was_submitted_with() -> None:
    story = Story()
    story.tell(submitted(name="llama-70b", user="ana", queue="preemptible", nodes_requested=64))
    seen = story.jobs[JOB].group_facts
    assert Match(cluster="test", partition="preempt*").selects(seen)
    assert Match(job_name="llama-*", user="ana").selects(seen)
    assert Match(min_nodes=64).selects(seen) and not Match(min_nodes=65).selects(seen)
    assert not Match(partition="gpu").selects(seen) and not Match(user="bo").selects(seen)
    # Node keys never match a job, whatever its other keys say.
    assert not Match(cluster="test", gpu_model="*").selects(seen)
    assert not Match(partition="preemptible", feature="*").selects(seen)
    # Its size is as it asked, else the nodes it ran on; unknown matches no min_nodes.
    ran = TrainingJob(job_id="k8s/ns/j", cluster="a", nodes=("n1", "n2"))
    assert Match(min_nodes=2).selects(ran.group_facts)
    assert not Match(min_nodes=1).selects(TrainingJob(job_id="x", cluster="a").group_facts)


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


def test_a_scope_on_keys_of_another_kind_is_refused() -> None:
    with pytest.raises(RuleConfigError, match=r"selects no subject the rule decides about \(jobs"):
        load({"checkpoint_stall": {"scopes": [{"match": {"gpu_model": "x"}, "limit_s": 60}]}})
    with pytest.raises(RuleConfigError, match=r"\(gpu_model=x, user=ana\): selects no subject"):
        load({"checkpoint_stall": {"scopes": [{"match": {"gpu_model": "x", "user": "ana"}}]}})
    with pytest.raises(RuleConfigError, match=r"decides about \(nodes\)"):
        load({RULE: {"scopes": [{"match": {"job_name": "x"}, "threshold": 5}]}})
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
    assert clash(a, b, ALL) is tie and clash(b, a, ALL) is tie


@pytest.mark.parametrize(
    ("a", "b", "tie"),
    [
        (Match(partition="preemptible"), Match(partition="gpu"), False),  # a job has one queue
        (Match(partition="gpu*"), Match(partition="gpu-long"), True),
        (Match(user="ana"), Match(job_name="llama-*"), True),  # ana may run a llama
        (Match(user="ana"), Match(user="bo"), False),
        (Match(min_nodes=64), Match(min_nodes=512), True),  # a job of 600 nodes is both
        (Match(min_nodes=64), Match(gpu_model="x"), False),  # no subject is both
    ],
)
def test_ties_between_job_classes(a: Match, b: Match, tie: bool) -> None:
    assert clash(a, b, frozenset({JOBS})) is tie and clash(b, a, frozenset({JOBS})) is tie


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
    with pytest.raises(ValueError, match="user=ana selects jobs, not nodes"):
        LadderConfig(match=Match(user="ana"))


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


def test_restart_budgets_per_job_class() -> None:
    config = {
        "restart_incomplete_exit": {
            "max_restarts": 1,
            "scopes": [
                {"match": {"partition": "preemptible"}, "max_restarts": 3},
                {"match": {"partition": "preemptible", "min_nodes": 512}, "max_restarts": 0},
            ],
        }
    }

    def restarts(**asked: Any) -> list[str]:
        story = Story(config=config)
        story.tell(submitted(**asked))
        said = []
        for attempt in (1, 2, 3, 4):
            story.tell(running(attempt=attempt, at_s=100 * attempt))
            decided = story.tell(ended(attempt=attempt, at_s=100 * attempt + 50))
            said += [t.payload.reason for t in decided if t.type == "RestartJob"]
        return said

    assert len(restarts(queue="gpu")) == 1  # the rule's own budget
    preemptible = restarts(queue="preemptible", nodes_requested=8)
    assert len(preemptible) == 3
    assert all(r.endswith("(scope partition=preemptible)") for r in preemptible)
    assert restarts(queue="preemptible", nodes_requested=600) == []  # big ones: a person's


def test_the_rules_page_job_classes_load_and_decide() -> None:
    config = json.loads(examples("docs/rules.md")["job_classes.json"])
    engine = load(config)
    rule = bound(engine, "restart_incomplete_exit")

    def job(**known: Any) -> TrainingJob:
        return TrainingJob(job_id="slurm/a/1", cluster="a", **known)

    assert rule.config_for(job(queue="gpu")).max_restarts == 3
    assert rule.config_for(job(queue="preemptible")).max_restarts == 10
    big = rule.config_for(job(queue="preemptible", nodes_requested=600))
    assert (big.max_restarts, big.backoff_s) == (1, 600)
    # What `centrality jobs` shows a job has left is its class's budget.
    assert restart_budget(engine, job(queue="preemptible")) == 10
    assert restart_budget(engine, job(queue="gpu")) == 3
    shadow = load(
        {"restart_incomplete_exit": {"scopes": [{"match": {"user": "x"}, "mode": "shadow"}]}}
    )
    assert restart_budget(shadow, job(user="x")) is None


def test_what_decides_for_a_subject_names_its_scope_config_and_memo() -> None:
    """One answer for a rule's evaluation and its timers: the scope, its config, and where the
    memo keeps it (a rule in shadow apart); nothing where the scope switches the rule off."""
    plain = bound(load({}))
    assert plain.deciding(node(**A100)) == (None, plain.config, RULE)
    scoped = bound(
        load(
            {
                RULE: {
                    "scopes": [
                        {"match": {"gpu_model": "NVIDIA A100*"}, "mode": "shadow"},
                        {"match": {"gpu_model": "NVIDIA H100*"}, "enabled": False},
                    ]
                }
            }
        )
    )
    scope, config, key = scoped.deciding(node(**A100))
    assert scope is scoped.scopes[0] and config.mode == "shadow" and key == f"shadow/{RULE}"
    assert scoped.deciding(node(**H100)) is None
    assert scoped.deciding(node()) == (None, scoped.config, RULE)
    off = next(b for b in load({RULE: {"enabled": False}}).off if b.spec.name == RULE)
    assert off.deciding(node()) is None  # not bound, and asked anyway: it decides nothing
