"""Built-in handlers, one module each; importing this package registers them."""

from actions.handlers import restart_job  # noqa: F401
