"""Built-in handlers, one module each; importing this package registers them."""

from actions.handlers import (  # noqa: F401
    cancel_job,
    escalate_nodes,
    notify,
    quarantine_nodes,
    reboot_nodes,
    release_job,
    release_nodes,
    request_checkpoint,
    reset_gpus,
    restart_job,
    run_benchmark,
)
