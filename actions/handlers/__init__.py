"""Built-in handlers, one module each; importing this package registers them."""

from actions.handlers import (  # noqa: F401
    cancel_job,
    notify,
    quarantine_nodes,
    release_job,
    release_nodes,
    restart_job,
    run_benchmark,
)
