"""Rules the streams worker would refuse to load: the loader's own line, and where to look."""

from __future__ import annotations

from centrality.errors import USAGE, Failure, explains
from streams.rules.registry import RuleConfigError


@explains(RuleConfigError)
def _rules(exc: RuleConfigError) -> Failure:
    return Failure(
        USAGE,
        str(exc),
        "fix CENTRALITY_RULES or CENTRALITY_STREAMS_RULE_CONFIG (`centrality config` shows them; "
        "docs/rules.md)",
    )
