"""`centrality nodes`, `jobs`, `node NAME`, `job ID`: the fleet as the streams app sees it now."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table

from centrality import fleet_detail, fleet_tables
from centrality.errors import UserError
from centrality.fleet import (
    Fleet,
    FleetReader,
    Kind,
    Status,
    checked_states,
    did_you_mean,
    matcher,
    out_of_service_states,
    read_fleet,
    selected,
    unmatched,
)
from centrality.output import console, tsv
from schemas.envelope import utcnow
from schemas.runtime.settings import KafkaSettings

JSON = typer.Option(False, "--json", help="One JSON document instead of a table.")
TSV = typer.Option(False, "--tsv", help="Tab-separated lines, a header first, times in ISO 8601.")
CLUSTER = typer.Option(None, "--cluster", help="Only this cluster.")
STATES = typer.Option(None, "--state", help="Only these states (repeat the flag).")
WATCH = typer.Option(
    False,
    "--watch",
    help="Keep watching: a terminal redraws on each change (Ctrl-C ends); a pipe, `--tsv` or "
    "`--json` gets one line per status that changed.",
)
SORT = typer.Option(
    None, "--sort", help="Sort by this column (`-since`: newest first); default: cluster, name."
)
WHY = typer.Option(None, "--why", help="Only those with these words in their why or problem.")
err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    app.command("nodes")(nodes)
    app.command("jobs")(jobs)
    app.command("node")(node)
    app.command("job")(job)


@dataclass(frozen=True)
class Listing:
    """What a listing selects, checked before anything is read."""

    kind: Kind
    cluster: str | None
    states: frozenset[str]
    pattern: str | None
    names: set[str] | str | None
    by: str | None
    why: str | None
    order: Callable[[list[Status]], list[Status]]

    def table(self, fleet: Fleet) -> dict[str, Any]:
        return fleet.nodes if self.kind == "node" else fleet.jobs

    def pick(self, fleet: Fleet) -> list[Status]:
        found = selected(
            self.table(fleet).values(),
            cluster=self.cluster,
            states=self.states,
            names=self.names,
            by=self.by,
            why=self.why,
        )
        return self.order(found)

    def named_known(self, fleet: Fleet) -> None:
        """A NAMES argument that names no known subject is a mistake, said with what is close;
        one naming some unknown ones says which on stderr."""
        if self.pattern is None:
            return
        known = list(self.table(fleet))
        missing = unmatched(self.pattern, self.names, known)
        if missing and (isinstance(self.names, str) or len(missing) == len(self.names or ())):
            raise UserError(
                f"no {self.kind} is called {self.pattern!r}{did_you_mean(missing[0], known)}",
                f"`centrality {self.kind}s` lists the {len(known)} known",
            )
        if missing:
            err.print(f"not known: {', '.join(missing)}", soft_wrap=True, markup=False)


def listing(
    kind: Kind,
    names: str | None,
    cluster: str | None,
    *,
    states: list[str] | None,
    out_of_service: bool = False,
    by: str | None = None,
    why: str | None = None,
    sort: str | None = None,
) -> Listing:
    try:
        wanted = checked_states(kind, states or ())
        if out_of_service:
            wanted |= out_of_service_states()
        order = fleet_tables.sorter(kind, sort)
        return Listing(kind, cluster, wanted, names, matcher(names), by, why, order)
    except ValueError as exc:
        raise UserError(str(exc), f"see `centrality {kind}s --help`") from None


def show(listing: Listing, json: bool, tsv_: bool, watch: bool) -> None:
    kafka = KafkaSettings()
    if watch:
        streamed = json or tsv_ or not console().is_terminal
        asyncio.run(_watch(kafka, listing, json if streamed else None))
        return
    fleet = asyncio.run(read_fleet(kafka))
    listing.named_known(fleet)
    found = listing.pick(fleet)
    if json:
        body = b",".join(fleet_detail.listed(s, listing.kind) for s in found)
        sys.stdout.buffer.write(b"[" + body + b"]\n")
    elif tsv_:
        clock = fleet_tables.Clock(utcnow(), plain=True)
        tsv(list(fleet_tables.COLUMNS[listing.kind]), fleet_tables.rows(listing.kind, found, clock))
    else:
        console().print(fleet_tables.table(listing.kind, found, utcnow()))


def _lines(listing: Listing, found: list[Status], json: bool, header: bool) -> None:
    """Statuses as lines: JSON Lines, or tab-separated (a header first)."""
    if json:
        for s in found:
            sys.stdout.buffer.write(fleet_detail.listed(s, listing.kind) + b"\n")
        sys.stdout.flush()
        return
    clock = fleet_tables.Clock(utcnow(), plain=True)
    columns = list(fleet_tables.COLUMNS[listing.kind]) if header else None
    tsv(columns, fleet_tables.rows(listing.kind, found, clock))


async def _watch(kafka: KafkaSettings, listing: Listing, json: bool | None) -> None:
    """`json` None: redraw a table in the terminal; else append a line per status changed
    (one that stopped matching the filters too: the line says where it went)."""
    reader = FleetReader(kafka)
    try:
        fleet = await reader.load()
        listing.named_known(fleet)
        if json is None:
            await _redraw(reader, listing)
            return
        shown = listing.pick(fleet)
        _lines(listing, shown, json, header=True)
        while True:
            await asyncio.sleep(1.0)
            before = {k: s.event_id for k, s in listing.table(fleet).items()}
            fleet = await reader.refresh()
            now = listing.pick(fleet)
            watched = {s.subject for s in (*shown, *now)}
            every = selected(listing.table(fleet).values())
            changed = [
                s
                for s in listing.order(every)
                if s.subject in watched and before.get(s.subject) != s.event_id
            ]
            _lines(listing, changed, json, header=False)
            shown = now
    finally:
        await reader.stop()


async def _redraw(reader: FleetReader, listing: Listing) -> None:
    fleet = reader.fleet

    def draw() -> Table:
        return fleet_tables.table(listing.kind, listing.pick(fleet), utcnow())

    with Live(draw(), auto_refresh=False) as live:
        while True:
            await asyncio.sleep(1.0)
            fleet.changed = False
            await reader.refresh()
            if fleet.changed:
                live.update(draw(), refresh=True)


def nodes(
    names: Annotated[str | None, typer.Argument(help="A hostlist or a glob.")] = None,
    cluster: str | None = CLUSTER,
    state: list[str] | None = STATES,
    out_of_service: bool = typer.Option(
        False, "--out-of-service", help="Only those taking no work, whatever their state."
    ),
    by: str | None = typer.Option(
        None, "--by", help="Only those taken out by: a rule, operator/NAME, scheduler (a glob)."
    ),
    why: str | None = WHY,
    sort: str | None = SORT,
    json: bool = JSON,
    tsv_: bool = TSV,
    watch: bool = WATCH,
) -> None:
    """Every node as the streams app sees it now.

    Its state, who took it out and why, since when, and what is pending."""
    asked = listing(
        "node",
        names,
        cluster,
        states=state,
        out_of_service=out_of_service,
        by=by,
        why=why,
        sort=sort,
    )
    show(asked, json, tsv_, watch)


def jobs(
    names: Annotated[str | None, typer.Argument(help="A glob of job ids.")] = None,
    cluster: str | None = CLUSTER,
    state: list[str] | None = STATES,
    why: str | None = WHY,
    sort: str | None = SORT,
    json: bool = JSON,
    tsv_: bool = TSV,
    watch: bool = WATCH,
) -> None:
    """Every training job as the streams app sees it now.

    Its state, attempt, restarts used and left, what it waits for and since when, and its
    checkpoint."""
    show(listing("job", names, cluster, states=state, why=why, sort=sort), json, tsv_, watch)


def _one(kind: Kind, subject: str, cluster: str | None) -> Status:
    fleet = asyncio.run(read_fleet(KafkaSettings()))
    known = fleet.nodes if kind == "node" else fleet.jobs
    status = known.get(subject)
    if status is None or cluster not in (None, status.cluster):
        raise UserError(
            f"no {kind} {subject!r}"
            + (f" in cluster {cluster}" if cluster else "")
            + did_you_mean(subject, known),
            f"`centrality {kind}s` lists the {len(known)} known",
        )
    return status


def _detail(kind: Kind, subject: str, cluster: str | None, json: bool) -> None:
    status = _one(kind, subject, cluster)
    from centrality.client import Fleet as Client

    handle = Client().node(subject) if kind == "node" else Client().job(subject)
    try:
        story = handle.timeline()
        missing = None
    except Exception as exc:  # the history is a help here, not the answer
        story, missing = [], f"{type(exc).__name__}: {exc}"
    show_ = fleet_detail.print_json if json else fleet_detail.print_detail
    show_(kind, status, story, missing)


def node(
    name: Annotated[str, typer.Argument(help="The node.")],
    cluster: str | None = CLUSTER,
    json: bool = JSON,
) -> None:
    """One node in full: its state, who took it out and why, and its decisions and actions."""
    _detail("node", name, cluster, json)


def job(
    job_id: Annotated[str, typer.Argument(help="The job id, e.g. slurm/a/4242.")],
    cluster: str | None = CLUSTER,
    json: bool = JSON,
) -> None:
    """One job in full: its state, attempts, checkpoint, and the decisions about it."""
    _detail("job", job_id, cluster, json)
