"""Health-check plugins, node-problem-detector style: executables or decorated functions."""

from collectors.health.registry import CheckContext, CheckResult, HealthCheck, health_check

__all__ = ["CheckContext", "CheckResult", "HealthCheck", "health_check"]
