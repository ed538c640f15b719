"""Built-in checks, one module each; listed in `collectors.health.registry.BUILTIN_CHECKS`."""
