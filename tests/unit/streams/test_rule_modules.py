"""Rule modules that are safe to deploy: they add to the built-ins, built-ins are switched off by
name, and what cannot work is refused at load in one line naming what to fix."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from schemas.events import QuarantineNodes
from streams.rules.registry import RuleConfigError, RuleEngine
from streams.settings import BUILTIN_RULES, StreamsSettings
from streams.testing import Story, ended, log_signal, xid

_names = itertools.count()

LOGGED = """
from schemas.events import LogSignalDetected, Notify
from streams.rules import rule


@rule("{name}", on=(LogSignalDetected,))
def logged(job, event, config):
    yield Notify.decide(
        cause=event, source="rule/{name}", rule="{name}", window=str(event.event_id),
        reason="a signal", title="a signal", incident=job.job_id,
    )
"""


def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str) -> tuple[str, str]:
    """A rule module of one's own, importable as the worker would import it; its name and the
    name of the rule in it (`{name}` in the source), both new to this process."""
    n = next(_names)
    name, rule = f"own_rules_{n}", f"own_rule_{n}"
    (tmp_path / f"{name}.py").write_text(source.replace("{name}", rule))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name, rule


def test_a_module_of_ones_own_is_loaded_beside_the_built_ins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, rule = module(tmp_path, monkeypatch, LOGGED)
    settings = StreamsSettings.model_validate({"CENTRALITY_RULES": mine})
    assert settings.rule_modules == [*BUILTIN_RULES, mine]
    story = Story(rules=[mine])
    loaded = {b.spec.name for b in story.brain.engine.rules}
    assert {rule, "fatal_xid", "quarantine_story", "benchmark_verdict"} <= loaded
    assert [t.payload.rule for t in story.tell(log_signal(at_s=1))] == [rule]
    assert [type(t) for t in story.tell(xid("n1", 79, at_s=2))] == [QuarantineNodes]
    # A built-in named among one's own is loaded once.
    again = StreamsSettings.model_validate({"CENTRALITY_RULES": f"{BUILTIN_RULES[0]},{mine}"})
    assert again.rule_modules == settings.rule_modules


def test_a_built_in_is_switched_off_by_name() -> None:
    story = Story(config={"fatal_xid": {"enabled": False}})
    assert story.tell(xid("n1", 79, at_s=1)) == []
    assert [b.spec.name for b in story.brain.engine.off] == ["fatal_xid"]
    assert "fatal_xid" not in {b.spec.name for b in story.brain.engine.rules}
    assert story.tell(ended(at_s=2))  # the others still decide


def test_a_rule_on_events_no_table_routes_is_refused_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = LOGGED.replace("LogSignalDetected", "ActionSucceeded")
    mine, rule = module(tmp_path, monkeypatch, source)
    with pytest.raises(RuleConfigError) as refused:
        Story(rules=[mine])
    said = str(refused.value)
    assert f"rule '{rule}' ({mine}) reacts to ActionSucceeded, which no table routes" in said
    assert "jobs: CheckpointSaved, CollectivesTimed, JobActionReported" in said  # what instead


def test_a_mistyped_rule_name_says_which_it_may_have_meant() -> None:
    with pytest.raises(RuleConfigError) as refused:
        Story(config={"fatal_xdi": {"mode": "shadow"}})
    said = str(refused.value)
    assert "configures no such rule: 'fatal_xdi' (did you mean 'fatal_xid'?)" in said
    assert "\n" not in said


def test_a_module_that_does_not_import_is_one_line_saying_where(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RuleConfigError, match=r"^no rule module 'not_installed_rules'"):
        Story(rules=["not_installed_rules"])
    failing, _ = module(tmp_path, monkeypatch, "import json\nLIMIT = 1 / 0\n")
    with pytest.raises(RuleConfigError) as refused:
        Story(rules=[failing])
    said = str(refused.value)
    assert said.startswith(f"rule module '{failing}' does not import: ZeroDivisionError")
    assert said.endswith(f"{failing}.py:2)")
    # A module that imports what is not installed is broken, not missing.
    missing_dependency, _ = module(tmp_path, monkeypatch, "import not_a_dependency_here\n")
    with pytest.raises(RuleConfigError, match="ModuleNotFoundError: No module named"):
        Story(rules=[missing_dependency])
    broken, _ = module(tmp_path, monkeypatch, "def rule(:\n")
    with pytest.raises(RuleConfigError, match=rf"SyntaxError: .*{broken}\.py:1\)$"):
        Story(rules=[broken])


def test_a_mode_that_does_not_exist_is_refused() -> None:
    with pytest.raises(RuleConfigError, match="rule 'fatal_xid': mode: Input should be 'live'"):
        RuleEngine.load(BUILTIN_RULES, {"fatal_xid": {"mode": "dry"}})
