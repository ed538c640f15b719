"""Rules: pure functions of (state, event) → triggers, registered by decorator (docs/rules.md)."""

from streams.rules.registry import RuleConfig, RuleEngine, rule
from streams.rules.signals import Signals

__all__ = ["RuleConfig", "RuleEngine", "Signals", "rule"]
