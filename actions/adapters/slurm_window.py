"""Let a job of ours run on drained nodes without letting anyone else's in.

Slurm schedules nothing on a DRAIN node, not even inside a reservation, yet a quarantined node is
exactly where the benchmark must run. So: reserve the nodes for our user (a MAINT reservation
keeps every other job off), resume them, run, then drain them again with their old reasons and
drop the reservation.

What people did by hand meanwhile wins: a node someone drained for a reason of their own stays
drained for theirs. (Resuming a node inside the window, Slurm refuses itself: it is not drained
there; and a reservation with a job running in it cannot be deleted.)
"""

from __future__ import annotations

import getpass
import math
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from actions.adapters.slurm_cli import SlurmCli, hostlist_of
from actions.errors import PermanentError
from schemas.slurm import WINDOW_PREFIX

DRAINED = frozenset({"drained", "draining", "drain"})


@contextmanager
def maintenance_window(
    cli: SlurmCli, nodes: Sequence[str], duration_s: float
) -> Iterator[str | None]:
    """Yields the reservation to submit into, or None when no node is drained."""
    if not _drained(cli, nodes):
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
    drained: dict[str, str] = {}
    try:
        # Read again now that the window holds the nodes: one resumed by someone meanwhile is
        # theirs, neither resumed nor drained again by us.
        drained = _drained(cli, nodes)
        if drained:
            cli.run("scontrol", "update", f"nodename={hostlist_of(list(drained))}", "state=resume")
    except BaseException:
        _close(cli, name, drained)
        raise
    if not drained:  # every node was resumed meanwhile: in service, nothing to hold
        _close(cli, name, drained)
        yield None
        return
    try:
        yield name
    finally:
        _close(cli, name, drained)


def _drained(cli: SlurmCli, nodes: Sequence[str]) -> dict[str, str]:
    """node → the reason it is drained for, of those drained."""
    states = cli.nodes(list(nodes))
    return {node: reason for node, (state, reason) in states.items() if state in DRAINED}


def _close(cli: SlurmCli, name: str, drained: dict[str, str]) -> None:
    now = cli.nodes(list(drained)) if drained else {}
    for node, reason in drained.items():
        state, said = now[node]
        if state in DRAINED and said != reason:
            continue  # drained meanwhile by someone, for a reason of their own
        cli.run("scontrol", "update", f"nodename={node}", "state=drain", f"reason={reason}")
    if _exists(cli, name):  # it may have ended by itself, or been deleted once the run was over
        cli.run("scontrol", "delete", f"reservation={name}")


def _exists(cli: SlurmCli, name: str) -> bool:
    try:
        cli.run("scontrol", "show", f"reservation={name}")
    except PermanentError:  # `Reservation … not found`
        return False
    return True
