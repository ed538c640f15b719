"""Operators' commands: `centrality quarantine|release|benchmark NODE…`, `requeue|cancel JOB`.

Each is signed with the operator's key (`CENTRALITY_OPERATOR_KEY_FILE`), goes through the
action worker like a rule's decision (ledger, breakers, results, Slack), and waits for what the
worker did, on stdout. Exit 0 when it was done (or nothing was to be done: a release of nodes
in service says so), 1 when it was refused, failed or not answered, 2 when nothing was sent (an
unknown node or job, a missing or blank reason, no key).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

import orjson
import typer
from rich.console import Console
from rich.text import Text

from centrality.client import WAIT_S, Fleet, NoOutcome, UnknownSubject
from centrality.commands import checked_reason
from centrality.contract_cli import signing_operator
from centrality.errors import UserError
from centrality.outcome import Outcome


def _reason(text: str) -> str:
    try:
        return checked_reason(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


REASON = typer.Option(
    ..., "--reason", callback=_reason, help="Why (required): recorded, and shown to people."
)
CLUSTER = typer.Option(None, "--cluster", help="The cluster (needed when a name is ambiguous).")
FORCE = typer.Option(
    False, "--force", help="Pass the circuit breakers (recorded as forced in the audit)."
)
WAIT = typer.Option(WAIT_S, "--wait-s", help="How long to wait for the action worker's answer.")
JSON = typer.Option(False, "--json", help="Print the outcome as one JSON line.")
NODES = Annotated[list[str], typer.Argument(help="The nodes.", metavar="NODE...")]
JOB = Annotated[str, typer.Argument(help="The job id, e.g. slurm/a/4242.")]
err = Console(stderr=True)
out = Console(soft_wrap=True, highlight=False)


def register(app: typer.Typer) -> None:
    for fn in (quarantine, release, benchmark, requeue, cancel):
        app.command(fn.__name__)(fn)


def _run(what: str, send: Callable[[Fleet], Outcome], json: bool) -> None:
    fleet = Fleet(operator=signing_operator())
    try:
        outcome = send(fleet)
    except UnknownSubject as exc:
        raise UserError(str(exc), "`centrality nodes` / `centrality jobs` list them") from None
    except NoOutcome as exc:
        err.print(f"[yellow]{exc}[/]", soft_wrap=True)
        raise typer.Exit(1) from None
    if json:
        doc = {"command": what, "verdict": outcome.verdict, "words": outcome.words}
        print(orjson.dumps(doc | {"detail": outcome.detail}).decode())
    else:
        done = {"succeeded": "done"}.get(outcome.verdict, outcome.verdict)
        style = "green" if outcome.ok else "red"
        out.print(Text.assemble((f"{what}: {done}", style), f" ({outcome.words})"))
    if not outcome.ok:
        raise typer.Exit(1)


def quarantine(
    nodes: NODES,
    reason: str = REASON,
    cluster: str | None = CLUSTER,
    force: bool = FORCE,
    wait_s: float = WAIT,
    json: bool = JSON,
) -> None:
    """Drain and taint nodes now; they stay out until an operator releases them."""
    _run(
        f"quarantine {' '.join(nodes)}",
        lambda f: f.quarantine(nodes, reason, cluster=cluster, force=force, wait_s=wait_s),
        json,
    )


def release(
    nodes: NODES,
    reason: str = REASON,
    cluster: str | None = CLUSTER,
    force: bool = FORCE,
    wait_s: float = WAIT,
    json: bool = JSON,
) -> None:
    """Return nodes to service (resume, untaint), whatever took them out."""
    _run(
        f"release {' '.join(nodes)}",
        lambda f: f.release(nodes, reason, cluster=cluster, force=force, wait_s=wait_s),
        json,
    )


def benchmark(
    nodes: NODES,
    reason: str = REASON,
    cluster: str | None = CLUSTER,
    force: bool = FORCE,
    wait_s: float = typer.Option(
        1200.0, "--wait-s", help="How long to wait for the benchmark's result."
    ),
    json: bool = JSON,
) -> None:
    """Benchmark drained nodes (`--force`: one still in service too)."""
    _run(
        f"benchmark {' '.join(nodes)}",
        lambda f: f.benchmark(nodes, reason, cluster=cluster, force=force, wait_s=wait_s),
        json,
    )


def requeue(
    job: JOB,
    reason: str = REASON,
    from_scratch: bool = typer.Option(
        False, "--from-scratch", help="Do not resume from the last checkpoint."
    ),
    cluster: str | None = CLUSTER,
    force: bool = FORCE,
    wait_s: float = WAIT,
    json: bool = JSON,
) -> None:
    """Requeue a job from its last checkpoint (or from scratch)."""
    _run(
        f"requeue {job}",
        lambda f: f.requeue(
            job, reason, from_scratch=from_scratch, cluster=cluster, force=force, wait_s=wait_s
        ),
        json,
    )


def cancel(
    job: JOB,
    reason: str = REASON,
    cluster: str | None = CLUSTER,
    wait_s: float = WAIT,
    json: bool = JSON,
) -> None:
    """Cancel a job."""
    _run(f"cancel {job}", lambda f: f.cancel(job, reason, cluster=cluster, wait_s=wait_s), json)
