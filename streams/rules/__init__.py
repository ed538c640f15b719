"""Rules: pure functions of (state, event) → triggers, registered by decorator."""

from streams.rules.registry import RuleConfig, RuleEngine, rule

__all__ = ["RuleConfig", "RuleEngine", "rule"]
