"""What the page changes: operators' commands (after a preview of what they will do), and
silences (add, expire); each signed with the key of the person who runs the console."""

from __future__ import annotations

from typing import Any

import orjson
import structlog
from aiohttp import web

from actions.settings import ActionsSettings
from centrality.client import NoOutcome, UnknownSubject
from centrality.console.acting import Order, Refused, carry_out, preview
from centrality.console.app import LIVE, SIGNER, json_response, refused
from centrality.errors import UserError
from centrality.silence_cli import new_silence, publish, silence_expiry
from centrality.silence_cli import row as silence_row
from schemas.operators import OperatorKey

log = structlog.get_logger("console")


def routes(app: web.Application) -> None:
    app.router.add_post("/api/preview", preview_command)
    app.router.add_post("/api/command", command)
    app.router.add_post("/api/silences", add_silence)
    app.router.add_post("/api/silences/expire", expire_silence)


async def _doc(request: web.Request) -> dict[str, Any]:
    try:
        doc = orjson.loads(await request.read())
    except orjson.JSONDecodeError:
        raise Refused("the request is not JSON") from None
    if not isinstance(doc, dict):
        raise Refused("the request is not a JSON object")
    return doc


def _key(request: web.Request) -> OperatorKey:
    signer = request.app[SIGNER]
    if signer.client is None:
        raise Refused(signer.why_read_only or "read-only")
    return signer.client.operator


async def preview_command(request: web.Request) -> web.Response:
    try:
        order = Order.parse(await _doc(request), reason_required=False)
        said = preview(order, request.app[LIVE].fleet, ActionsSettings())
    except Refused as exc:
        return refused(400, str(exc))
    return json_response(said | {"signed_as": request.app[SIGNER].operator})


async def command(request: web.Request) -> web.Response:
    try:
        _key(request)
    except Refused as exc:
        return refused(403, str(exc))
    try:
        order = Order.parse(await _doc(request))
    except Refused as exc:
        return refused(400, str(exc))
    client = request.app[SIGNER].client
    assert client is not None
    log.info("console_command", operator=client.operator.name, command=order.said)
    try:
        outcome = await carry_out(order, client)
    except UnknownSubject as exc:
        return refused(400, str(exc))
    except NoOutcome as exc:
        return json_response({"verdict": "no answer", "words": str(exc), "detail": {}})
    except Exception as exc:  # Kafka away, a topic missing: said on the page, as the CLI says it
        log.warning("console_command_not_sent", command=order.said, error=type(exc).__name__)
        return refused(502, f"not sent: {type(exc).__name__}: {exc}")
    log.info("console_outcome", command=order.said, verdict=outcome.verdict)
    return json_response(
        {"verdict": outcome.verdict, "words": outcome.words, "detail": outcome.detail}
    )


def _text(doc: dict[str, Any], name: str) -> str | None:
    value = doc.get(name)
    return str(value).strip() or None if value is not None else None


async def add_silence(request: web.Request) -> web.Response:
    try:
        operator = _key(request)
    except Refused as exc:
        return refused(403, str(exc))
    try:
        doc = await _doc(request)
        cluster = _text(doc, "cluster")
        if cluster is None:
            raise Refused("name the cluster the silence holds decisions on")
        event = new_silence(
            operator,
            cluster,
            _text(doc, "reason") or "",
            _text(doc, "nodes"),
            _text(doc, "rule"),
            _text(doc, "action"),
            _text(doc, "for"),
            None,
        )
    except (Refused, UserError) as exc:
        return refused(400, str(exc))
    await publish(request.app[LIVE].kafka, event, operator)
    log.info("console_silence_added", operator=operator.name, silence=event.subject)
    return json_response(silence_row(event, None, True))


async def expire_silence(request: web.Request) -> web.Response:
    try:
        operator = _key(request)
    except Refused as exc:
        return refused(403, str(exc))
    try:
        doc = await _doc(request)
    except Refused as exc:
        return refused(400, str(exc))
    silence_id, reason = _text(doc, "id") or "", _text(doc, "reason")
    if reason is None:
        return refused(400, "a reason is required to end a silence early")
    found = request.app[LIVE].book.added.get(silence_id)
    if found is None:
        return refused(404, f"no silence {silence_id!r}")
    event = silence_expiry(operator, found[0], reason)
    await publish(request.app[LIVE].kafka, event, operator)
    log.info("console_silence_expired", operator=operator.name, silence=silence_id)
    return json_response({"id": silence_id, "expired": True})
