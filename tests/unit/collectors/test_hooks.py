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
