"""Serving the console until SIGTERM or Ctrl-C: the live feed first (the status topic read
whole), then the page on its address, printed once with the login token when it was made here.
"""

from __future__ import annotations

import asyncio
import secrets
import ssl
import sys

import structlog
from aiohttp import web
from pydantic import SecretStr

from centrality.console.app import make_app
from centrality.console.guard import Guard
from centrality.console.live import Live
from centrality.console.settings import ConsoleSettings
from centrality.console.signer import signer
from schemas.runtime.settings import KafkaSettings

log = structlog.get_logger("console")


def _tls(settings: ConsoleSettings) -> ssl.SSLContext | None:
    if not settings.tls:
        return None
    assert settings.tls_cert_file is not None and settings.tls_key_file is not None
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(settings.tls_cert_file, settings.tls_key_file)
    return context


async def serve(settings: ConsoleSettings, kafka: KafkaSettings, stop: asyncio.Event) -> None:
    live = Live(kafka, settings.refresh_s)
    await live.start()
    made = settings.token is None
    token = settings.token or SecretStr(secrets.token_urlsafe(24))
    who = signer(kafka)
    app = make_app(settings, live, Guard(token, settings.port), who)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.host, settings.port, ssl_context=_tls(settings))
        await site.start()
        port = runner.addresses[0][1]
        where = settings.address(port)
        log.info("console_serving", address=where, operator=who.operator, can_act=who.can_act)
        # The token goes to the person who started it (stdout), never to a log.
        login = f"{where}?token={token.get_secret_value()}" if made else where
        print(f"Centrality console: {login}", flush=True)
        if who.why_read_only:
            print(who.why_read_only, file=sys.stderr, flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()
        await live.stop()
