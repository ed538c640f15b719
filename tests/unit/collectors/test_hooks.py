"""Completion hooks as declared on a job (Slurm comment, k8s annotation, Ray metadata)."""

from __future__ import annotations

from collectors.watchers.hooks import parse_hooks
from schemas.events import CompletionHook


def test_entries_are_parsed_and_malformed_ones_dropped_alone() -> None:
    hooks = parse_hooks(
        "succeeded:slurm/c1/4312, ended:k8s/ml/eval-7  bogus failed: later:slurm/c1/9",
        job="slurm/c1/1",
    )
    assert hooks == (
        CompletionHook(when="succeeded", release="slurm/c1/4312"),
        CompletionHook(when="ended", release="k8s/ml/eval-7"),
    )


def test_nothing_declared_is_no_hooks_and_too_many_are_cut_to_the_contract_limit() -> None:
    assert parse_hooks(None, job="j") == () == parse_hooks("  ", job="j")
    many = " ".join(f"succeeded:slurm/c1/{i}" for i in range(40))
    assert len(parse_hooks(many, job="j")) == 16


def test_the_slurm_comment_carries_hooks_beside_other_words() -> None:
    from collectors.watchers.hooks import HOOKS_KEY, comment_value

    comment = "nightly run; centrality.hooks=succeeded:slurm/c1/77 ended:slurm/c1/78; owner=ml"
    assert parse_hooks(comment_value(comment, HOOKS_KEY), job="1") == (
        CompletionHook(when="succeeded", release="slurm/c1/77"),
        CompletionHook(when="ended", release="slurm/c1/78"),
    )
    assert comment_value("xcentrality.hooks=a:b", HOOKS_KEY) is None
    assert comment_value(None, HOOKS_KEY) is None
