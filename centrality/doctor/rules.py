"""The rules the streams worker would load here: they load, what runs live or in shadow, and
whether each node-group scope selects any node the streams app knows."""

from __future__ import annotations

from collections.abc import Iterator

from centrality.doctor import Finding, check
from centrality.scope_nodes import read_known_nodes
from streams.rules.registry import RuleConfigError, RuleEngine
from streams.settings import StreamsSettings

FIX = "fix CENTRALITY_RULES or CENTRALITY_STREAMS_RULE_CONFIG (docs/rules.md)"


@check("rules")
def rules() -> Iterator[Finding]:
    settings = StreamsSettings()
    try:
        engine = RuleEngine.load(settings.rule_modules, settings.rule_config)
    except RuleConfigError as exc:
        yield Finding("rules", "fail", str(exc), FIX)
        return
    shadow = sorted(b.spec.name for b in engine.rules if b.config.mode == "shadow")
    off = sorted(b.spec.name for b in engine.off)
    detail = f"{len(engine.rules)} rules from {len(settings.rule_modules)} modules load"
    if shadow:
        detail += f"; in shadow: {', '.join(shadow)}"
    if off:
        detail += f"; off: {', '.join(off)}"
    known = read_known_nodes()
    if known.facts is None:
        detail += f"; scopes not checked against the fleet: {known.unread}"
    empty = known.empty_scopes([*engine.rules, *engine.off])
    if empty:
        yield Finding(
            "rules",
            "warn",
            f"{detail}; scopes selecting no known node: {'; '.join(empty)}",
            "compare their match with the facts `centrality nodes --json` shows (GPU model, "
            "partitions, features, labels); a group not in this fleet needs no scope",
        )
        return
    yield Finding("rules", "ok", detail + " (`centrality rules` lists them)")
