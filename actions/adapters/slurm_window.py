"""Let a job of ours run on drained nodes without letting anyone else's in.

Slurm schedules nothing on a DRAIN node, not even inside a reservation, yet a quarantined node is
exactly where the benchmark must run. So: reserve the nodes for our user (a MAINT reservation
keeps every other job off), resume them, run, then drain them again with their old reasons and
drop the reservation.
"""

from __future__ import annotations

import getpass
import math
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from actions.adapters.slurm_cli import SlurmCli, hostlist_of
from schemas.slurm import WINDOW_PREFIX

DRAINED = frozenset({"drained", "draining", "drain"})


@contextmanager
def maintenance_window(
    cli: SlurmCli, nodes: Sequence[str], duration_s: float
) -> Iterator[str | None]:
    """Yields the reservation to submit into, or None when no node is drained."""
    states = cli.nodes(list(nodes))
    drained = {node: reason for node, (state, reason) in states.items() if state in DRAINED}
    if not drained:
        yield None
        return
    name = f"{WINDOW_PREFIX}{uuid.uuid4().hex[:8]}"
    cli.run(
        "scontrol",
        "create",
        "reservation",
        f"reservation={name}",
        f"nodes={hostlist_of(nodes)}",
        f"users={getpass.getuser()}",
        "flags=maint,ignore_jobs",
        "starttime=now",
        f"duration={max(1, math.ceil(duration_s / 60)) + 1}",
    )
    try:
        cli.run("scontrol", "update", f"nodename={hostlist_of(list(drained))}", "state=resume")
        yield name
    finally:
        for node, reason in drained.items():
            cli.run("scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}")
        cli.run("scontrol", "delete", f"reservation={name}")
