"""`centrality emit` and `centrality schemas`: the contract from a shell."""

from __future__ import annotations

import asyncio
import difflib
import socket
import sys
import types
import typing
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any

import orjson
import typer
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from rich.console import Console
from rich.table import Table

from centrality.errors import START_HINT, UserError
from centrality.oneshot import sending
from schemas.codec import encode
from schemas.envelope import Event
from schemas.events import Trigger
from schemas.jsonschema import JSON_DIR, export, stale
from schemas.operators import OperatorKey, OperatorKeyError, OperatorSettings
from schemas.registry import event_types
from schemas.runtime.emitter.settings import EmitterSettings
from schemas.runtime.settings import KafkaSettings
from schemas.topics import spec, topic_name

ENVELOPE = {"event_id", "source", "cluster", "subject", "occurred_at", "observed_at"}
schemas_app = typer.Typer(
    help="The event contract: JSON Schema files for other languages.", no_args_is_help=True
)
err = Console(stderr=True)


def register(app: typer.Typer) -> None:
    app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})(emit)
    app.add_typer(schemas_app, name="schemas")


def emit(
    ctx: typer.Context,
    event_type: str = typer.Argument(..., metavar="TYPE", help="e.g. JobExited"),
    json: bool = typer.Option(False, "--json", help="Print the sent event as one JSON line."),
    spool: bool = typer.Option(
        False, "--spool", help="If Kafka does not take it, keep it in the spool for later."
    ),
) -> None:
    """Send one event, its fields as options.

    `centrality emit JobExited --cluster c --subject slurm/c/7 --state FAILED --exit_code 1
    --nodes n1 --nodes n2`. Envelope fields go to the envelope, the rest to the
    payload; repeat a flag for a list; pass JSON for a mapping."""
    cls = event_types().get(event_type)
    if cls is None:
        near = difflib.get_close_matches(event_type, event_types(), n=3)
        raise UserError(
            f"unknown event type {event_type!r}"
            + (f" (did you mean {' or '.join(near)}?)" if near else ""),
            "`centrality schemas list` shows them all",
        )
    operator = None
    if issubclass(cls, Trigger):  # a trigger sent by a person is that operator's command
        operator = signing_operator()
    try:
        fields = _parse_flags(ctx.args)
        if operator is not None:
            fields.setdefault("operator", [operator.name])
        event = _build(cls, fields)
    except (ValueError, ValidationError) as exc:
        raise UserError(
            f"invalid {event_type}: {_explain(exc)}", "fix those fields and send it again"
        ) from None
    headers: list[tuple[str, bytes]] = []
    if operator is not None:  # workers act only on what the streams app or an operator signed
        headers = operator.headers(encode(event))
    kafka = KafkaSettings()
    spooled = asyncio.run(_send(kafka, event, headers, spool))  # Undelivered: one line, exit 1
    if json:
        print(event.model_dump_json())
    where = topic_name(event.topic, kafka)
    if spooled:  # asked for: the spool delivers it later
        print(
            f"warning: Kafka at {kafka.bootstrap} is unreachable; {event.type} {event.event_id} "
            f"is spooled in {EmitterSettings().spool_dir} and goes out with the next "
            f"`centrality emit --spool` or collector using that spool; {START_HINT}",
            file=sys.stderr,
        )
    else:
        err.print(f"sent {event.type} {event.event_id} to {where} (key {event.subject})")


async def _send(
    kafka: KafkaSettings, event: Event, headers: list[tuple[str, bytes]], spool: bool
) -> bool:
    """Whether it waits in the spool (`spool` only; else undelivered raises)."""
    async with sending(kafka, spool=spool) as emitter:
        await emitter.emit(event, headers)
        await emitter.flush()
        return not emitter.spool.empty


def signing_operator() -> OperatorKey:
    """The operator this CLI signs as, or one clear line on why there is none."""
    try:
        return OperatorSettings().key()
    except OperatorKeyError as exc:
        raise UserError(str(exc), "an operator's key signs what people send by hand") from None


def _parse_flags(args: list[str]) -> dict[str, list[str]]:
    fields: dict[str, list[str]] = {}
    it = iter(args)
    for flag in it:
        if not flag.startswith("--") or len(flag) < 3:
            raise ValueError(f"expected --field value, got {flag!r}")
        name, eq, inline = flag[2:].partition("=")
        value = inline if eq else next(it, None)
        if value is None:
            raise ValueError(f"--{name} needs a value")
        fields.setdefault(name.replace("-", "_"), []).append(value)
    return fields


def _build(cls: type[Event], fields: dict[str, list[str]]) -> Event:
    payload_model = _model(cls.model_fields["payload"])
    envelope = {k: _coerce(cls.model_fields[k], v) for k, v in fields.items() if k in ENVELOPE}
    payload = {
        k: _coerce(payload_model.model_fields.get(k), v)
        for k, v in fields.items()
        if k not in ENVELOPE
    }
    envelope.setdefault("source", f"cli@{socket.gethostname()}")
    envelope.setdefault("occurred_at", _now())
    return cls.model_validate({**envelope, "payload": payload})


def _coerce(field: FieldInfo | None, values: list[str]) -> Any:
    """Strings as typed on a shell → what the field wants; pydantic does scalar coercion."""
    origin = typing.get_origin(_unwrap(field.annotation)) if field else None
    if origin in (list, tuple):
        if len(values) == 1 and values[0].startswith("["):
            return orjson.loads(values[0])
        return values
    if len(values) > 1:
        raise ValueError(f"given {len(values)} times but takes one value")
    if origin is dict or (field is None and values[0][:1] in "{["):
        return orjson.loads(values[0])
    return values[0]


def _unwrap(annotation: Any) -> Any:
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    is_union = typing.get_origin(annotation) in (typing.Union, types.UnionType)
    return args[0] if is_union and args else annotation


def _model(field: FieldInfo) -> type[BaseModel]:
    model = field.annotation
    assert isinstance(model, type) and issubclass(model, BaseModel)
    return model


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _explain(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
    return str(exc)


@schemas_app.command("export")
def export_cmd(
    directory: Annotated[
        Path, typer.Option("--directory", "--out", "-o", help="Where to write the files.")
    ] = JSON_DIR,
    check: Annotated[bool, typer.Option("--check", help="Exit 1 if files would change.")] = False,
) -> None:
    """Write the contract's JSON Schema files into a directory.

    One file per event type, message.json (one event or a batch) and keywords.json (the `x-`
    keywords they use, for validators in strict mode)."""
    if check:
        changes = stale(directory)
        if changes:
            err.print(f"[red]stale schema files[/] in {directory}: {', '.join(changes)}")
            raise typer.Exit(1)
        err.print(f"schema files are current in {directory}")
        return
    changed = export(directory)
    err.print(f"{len(changed)} file(s) changed in {directory}")


@schemas_app.command("list")
def list_cmd(json: bool = typer.Option(False, "--json", help="One JSON line.")) -> None:
    """Every event type with its topic and schema version."""
    rows = [
        {
            "type": name,
            "topic": cls.topic,
            "version": cls.current_version,
            "batched": spec(cls.topic).batched,
        }
        for name, cls in sorted(event_types().items())
    ]
    if json:
        sys.stdout.write(orjson.dumps(rows).decode() + "\n")
        return
    table = Table("type", "topic", "version", "batched")
    for r in rows:
        table.add_row(
            str(r["type"]), str(r["topic"]), str(r["version"]), "yes" if r["batched"] else ""
        )
    Console().print(table)
