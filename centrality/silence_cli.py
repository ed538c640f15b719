"""`centrality silence add|list|expire`: hold what rules decide, for a while, signed by you.

A silence holds the decisions of rules on a cluster (or some of its nodes, one rule, one
action) until it ends: they are made and recorded as held, not carried out. Operators' own
commands are never held. Silences are events on a compacted topic, so they survive restarts.
"""

from __future__ import annotations

import asyncio
import difflib
import re
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

import orjson
import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from centrality.contract_cli import signing_operator
from centrality.errors import UserError
from centrality.fleet import matcher
from centrality.output import console, when
from schemas.codec import DecodeError, decode, encode
from schemas.envelope import Event, utcnow
from schemas.events import SilenceAdded, SilenceExpired, Trigger
from schemas.events.silences import DURATION_MAX_S
from schemas.operators import OperatorKey, OperatorSettings, Unauthenticated, authenticate
from schemas.registry import event_types
from schemas.runtime import kafka_clients
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import Records, TopicReader
from schemas.topics import topic_name

if TYPE_CHECKING:
    from actions.holds import Held

silence_app = typer.Typer(
    help="Silences: hold what rules decide on a cluster, nodes, a rule or an action.",
    no_args_is_help=True,
)
err = Console(stderr=True)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
JSON = typer.Option(False, "--json", help="One JSON document instead of a table.")


def register(app: typer.Typer) -> None:
    app.add_typer(silence_app, name="silence")


def duration_s(text: str) -> float:
    """`90s`, `30m`, `2h`, `1d` (or a sum: `1h30m`) → seconds."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([smhd])", text.strip())
    if not parts or "".join(n + u for n, u in parts) != text.strip():
        raise ValueError(f"{text!r} is not a duration like 30m, 2h or 1h30m")
    return sum(float(n) * _UNITS[u] for n, u in parts)


def _actions() -> dict[str, str]:
    """Names a silence's action may take: a trigger type, or its action's name."""
    types = [n for n, cls in event_types().items() if issubclass(cls, Trigger)]
    snake = {re.sub(r"(?<!^)(?=[A-Z])", "_", n).lower(): n for n in types}
    return {**{n: n for n in types}, **snake}


def _rules() -> list[str]:
    from streams.rules.registry import RuleEngine, registered_rules
    from streams.settings import StreamsSettings

    RuleEngine.load(StreamsSettings().rule_modules, {})  # imports them: they register
    return sorted(registered_rules())


def _must_be(value: str, known: list[str], what: str) -> None:
    if value not in known:
        near = difflib.get_close_matches(value, known, n=2)
        hint = f"did you mean {' or '.join(near)}?" if near else f"known: {', '.join(known)}"
        raise UserError(f"unknown {what} {value!r}", hint)


def _reason(text: str | None) -> str | None:
    """A reason people will read: a blank one is refused, not recorded."""
    if text is not None and not text.strip():
        raise typer.BadParameter("a reason people can read (it is recorded and shown)")
    return None if text is None else text.strip()


async def publish(kafka: KafkaSettings, event: Event, operator: OperatorKey) -> None:
    """Sends a silence (added or expired) signed with `operator`'s key."""
    headers = operator.headers(encode(event))
    producer = kafka_clients.producer(kafka, client_id=f"{kafka.client_id}-silence")
    await producer.start()
    try:
        await producer.send_and_wait(
            topic_name("silences", kafka), value=encode(event), key=event.key, headers=headers
        )
    finally:
        await producer.stop()


@silence_app.command("add")
def add(
    cluster: Annotated[str, typer.Option("--cluster", help="The cluster it holds decisions on.")],
    reason: Annotated[str, typer.Option("--reason", callback=_reason, help="Why (required).")],
    nodes: Annotated[str | None, typer.Option("--nodes", help="Only these (hostlist).")] = None,
    rule: Annotated[str | None, typer.Option("--rule", help="Only this rule's.")] = None,
    action: Annotated[
        str | None, typer.Option("--action", help="Only this action (QuarantineNodes, …).")
    ] = None,
    for_: Annotated[str | None, typer.Option("--for", help="How long: 30m, 2h, 1d.")] = None,
    until: Annotated[str | None, typer.Option("--until", help="Until (ISO time).")] = None,
    json: bool = JSON,
) -> None:
    """Hold rules' decisions from now until it ends (`--for` or `--until`)."""
    operator = signing_operator()
    event = new_silence(operator, cluster, reason, nodes, rule, action, for_, until)
    asyncio.run(publish(KafkaSettings(), event, operator))
    if json:
        print(orjson.dumps(row(event, None, True)).decode())
        return
    err.print(
        f"[green]{event.subject}[/] holds rules' decisions on {cluster} until "
        f"{when(event.payload.ends_at)}"
    )
    print(event.subject)


def new_silence(
    operator: OperatorKey,
    cluster: str,
    reason: str,
    nodes: str | None,
    rule: str | None,
    action: str | None,
    for_: str | None,
    until: str | None,
) -> SilenceAdded:
    """A silence as `silence add` makes it (what the console adds too); UserError says what
    is wrong with what was asked."""
    now = utcnow()
    if not reason.strip():
        raise UserError("a silence needs a reason", "say why: it is shown to people")
    if (for_ is None) == (until is None):
        raise UserError("give --for or --until (one of them)", "e.g. --for 2h")
    try:
        seconds = duration_s(for_) if for_ else _until_s(until or "", now)
        if nodes:
            matcher(nodes)
    except ValueError as exc:
        raise UserError(str(exc), "see `centrality silence add --help`") from None
    if not 0 < seconds <= DURATION_MAX_S:
        raise UserError(f"a silence of {seconds:g} s", "it must end after now, within a year")
    if rule:
        _must_be(rule, _rules(), "rule")
    if action:
        _must_be(action, sorted(_actions()), "action")
    silence_id = f"s-{uuid.uuid4().hex[:10]}"
    return SilenceAdded(
        source=f"operator/{operator.name}",
        cluster=cluster,
        subject=silence_id,
        occurred_at=now,
        payload={
            "silence_id": silence_id,
            "nodes": nodes,
            "rule": rule,
            "action": action,
            "starts_at": now,
            "duration_s": seconds,
            "reason": reason,
            "operator": operator.name,
        },
    )


def _until_s(text: str, now: datetime) -> float:
    try:
        until = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO time (2026-11-27T22:00:00+00:00)") from None
    if until.tzinfo is None:
        raise ValueError(f"{text!r} needs a time zone (Z or +00:00)")
    return (until - now).total_seconds()


class Book:
    """Every silence on the topic, and whether a trusted operator signed it (None: no trust
    configured here to tell)."""

    def __init__(self) -> None:
        self.trusted = OperatorSettings().trusted()
        self.added: dict[str, tuple[SilenceAdded, bool | None]] = {}
        self.expired: dict[str, SilenceExpired] = {}

    def take(self, records: Records) -> None:
        for r in records:
            try:
                [event] = decode(r.value or b"")
            except (DecodeError, ValueError):
                continue
            verified = None
            if self.trusted:
                try:
                    name, _ = authenticate(r.value, r.headers, self.trusted)
                    verified = name == getattr(event.payload, "operator", None)
                except Unauthenticated:
                    verified = False
            if isinstance(event, SilenceAdded):
                self.added[event.payload.silence_id] = (event, verified)
            elif isinstance(event, SilenceExpired) and verified is not False:
                self.expired[event.payload.silence_id] = event


async def read_book(kafka: KafkaSettings) -> Book:
    book = Book()
    reader = TopicReader(kafka, topic_name("silences", kafka), book.take, client_id="silences")
    try:
        await reader.load()
    finally:
        await reader.stop()
    return book


async def _book_and_holds(kafka: KafkaSettings) -> tuple[Book, dict[str, Held]]:
    """The silences, and what each one held (from the action ledger). The action worker's
    ledger needs the workers' extra: imported here, so the base install's CLI still loads."""
    from actions.holds import held_by_silence
    from actions.ledger import read_ledger

    book, ledger = await asyncio.gather(read_book(kafka), read_ledger(kafka))
    return book, held_by_silence(ledger.entries())


def _nothing_held(silence_id: str) -> Held:
    from actions.holds import Held  # the workers' extra: see `_book_and_holds`

    return Held(silence_id)


def row(
    added: SilenceAdded,
    expired: SilenceExpired | None,
    verified: bool | None,
    held: Held | None = None,
) -> Any:
    p = added.payload
    ends = p.ends_at if expired is None else min(p.ends_at, expired.occurred_at)
    return {
        "id": p.silence_id,
        "cluster": added.cluster,
        "nodes": p.nodes,
        "rule": p.rule,
        "action": p.action,
        "starts_at": p.starts_at.isoformat(),
        "ends_at": ends.isoformat(),
        "active": p.starts_at <= utcnow() < ends,
        "operator": p.operator,
        "reason": p.reason,
        "verified": verified,
        "held": (held or _nothing_held(p.silence_id)).document(),
    }


def _held_cell(held: dict[str, Any]) -> str:
    """What a silence held, for a terminal: how many, of which actions and rules, on what."""
    if not held["decisions"]:
        return "nothing"
    actions = ", ".join(f"{a} ({n})" for a, n in held["actions"].items())
    lines = [f"{held['decisions']}: {actions}"]
    lines.append("rules " + ", ".join(f"{r} ({n})" for r, n in held["rules"].items()))
    if held["nodes"]:
        lines.append(f"nodes {held['nodes']} ({held['nodes_count']})")
    if held["jobs"]:
        lines.append("jobs " + ", ".join(held["jobs"]))
    return "\n".join(lines)


@silence_app.command("list")
def list_cmd(
    cluster: Annotated[str | None, typer.Option("--cluster", help="Only this cluster.")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Ended ones too.")] = False,
    json: bool = JSON,
) -> None:
    """The silences in force (with `--all`, those that ended too), and what each one held.

    For each: how many decisions, of which actions and rules, on which nodes or jobs."""
    book, holds = asyncio.run(_book_and_holds(KafkaSettings()))
    rows = [
        row(a, book.expired.get(i), verified, holds.get(i))
        for i, (a, verified) in book.added.items()
        if cluster in (None, a.cluster)
    ]
    rows = sorted((r for r in rows if all_ or r["active"]), key=lambda r: r["starts_at"])
    if json:
        print(orjson.dumps(rows).decode())
        return
    table = Table("id", "cluster", "scope", "until", "by", "reason", "held", title="silences")
    for r in rows:
        scope = ", ".join(f"{k} {r[k]}" for k in ("nodes", "rule", "action") if r[k]) or "all"
        by = r["operator"] + ("" if r["verified"] is not False else " [red](not trusted)[/]")
        until = when(datetime.fromisoformat(r["ends_at"])) + ("" if r["active"] else " (ended)")
        held = Text(_held_cell(r["held"]))
        table.add_row(r["id"], r["cluster"], Text(scope), until, by, Text(r["reason"]), held)
    console().print(table)


@silence_app.command("expire")
def expire(
    silence_id: Annotated[str, typer.Argument(help="The silence's id (from `silence list`).")],
    reason: Annotated[
        str | None, typer.Option("--reason", callback=_reason, help="Why it ends early.")
    ] = None,
) -> None:
    """End a silence now: rules' next decisions are carried out again."""
    kafka = KafkaSettings()
    book = asyncio.run(read_book(kafka))
    found = book.added.get(silence_id)
    if found is None:
        raise UserError(f"no silence {silence_id!r}", "`centrality silence list --all` shows them")
    operator = signing_operator()
    event = silence_expiry(operator, found[0], reason)
    asyncio.run(publish(kafka, event, operator))
    print(f"{silence_id} ended: rules' decisions on {found[0].cluster} are carried out again")


def silence_expiry(
    operator: OperatorKey, added: SilenceAdded, reason: str | None
) -> SilenceExpired:
    return SilenceExpired(
        source=f"operator/{operator.name}",
        cluster=added.cluster,
        subject=added.subject,
        occurred_at=utcnow(),
        payload={
            "silence_id": added.payload.silence_id,
            "operator": operator.name,
            "reason": reason,
        },
    )
