"""Built-in handlers, one module each; importing this package registers them."""

from actions.handlers import (  # noqa: F401
    notify,
    quarantine_nodes,
    release_nodes,
    restart_job,
    run_benchmark,
)
