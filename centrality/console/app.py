"""The console's web application: the page and its assets, the JSON it reads, the feed of
changes, and the commands it sends; behind a login, and protected against cross-site requests.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any

import orjson
from aiohttp import web

from centrality.console.guard import Guard, loopback_host, same_origin
from centrality.console.live import Live
from centrality.console.settings import ConsoleSettings
from centrality.console.signer import Signer

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
STATIC = resources.files("centrality.console") / "static"
LIVE: web.AppKey[Live] = web.AppKey("live", Live)
GUARD: web.AppKey[Guard] = web.AppKey("guard", Guard)
SIGNER: web.AppKey[Signer] = web.AppKey("signer", Signer)
SETTINGS: web.AppKey[ConsoleSettings] = web.AppKey("settings", ConsoleSettings)
OPEN_PATHS = frozenset({"/login", "/static/console.css", "/favicon.ico"})
# Scripts, styles and connections from the console itself only; no inline script, no frames.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


def json_response(doc: Any, status: int = 200) -> web.Response:
    return web.Response(body=orjson.dumps(doc), status=status, content_type="application/json")


def refused(status: int, error: str) -> web.Response:
    return json_response({"error": error}, status)


def redirect(location: str) -> web.Response:
    return web.Response(status=303, headers={"Location": location})


def static_file(name: str, content_type: str) -> web.Response:
    return web.Response(body=(STATIC / name).read_bytes(), content_type=content_type)


@web.middleware
async def headers(request: web.Request, handler: Handler) -> web.StreamResponse:
    response = await handler(request)
    response.headers.update(HEADERS)
    if request.app[SETTINGS].tls:
        response.headers["Strict-Transport-Security"] = "max-age=31536000"
    return response


@web.middleware
async def gate(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Loopback only by a loopback name; a session for everything but the login; a same-origin
    request with the session's CSRF token for anything that changes state."""
    settings, guard = request.app[SETTINGS], request.app[GUARD]
    if settings.loopback() and not loopback_host(request.host):
        return refused(421, f"this console answers to loopback names, not {request.host!r}")
    changes = request.method not in ("GET", "HEAD", "OPTIONS")
    if changes and not same_origin(request.headers, request.scheme, request.host):
        return refused(403, "cross-site request refused")
    token = request.query.get("token")
    if request.method == "GET" and token is not None:
        return _login_by_link(request, guard, token)
    if request.path in OPEN_PATHS:
        return await handler(request)
    cookie = request.cookies.get(guard.cookie)
    if not guard.session_ok(cookie):
        if request.path.startswith("/api/"):
            return refused(401, "not logged in: open the console's address with its token")
        return redirect("/login")
    if changes and not guard.csrf_ok(cookie, request.headers.get("X-CSRF-Token")):
        return refused(403, "missing or wrong CSRF token: reload the page")
    return await handler(request)


def _login_by_link(request: web.Request, guard: Guard, token: str) -> web.StreamResponse:
    """The address printed at start carries the token once: traded for a session, and the
    address without it (so it stays out of the history and the Referer)."""
    if not guard.token_matches(token):
        return redirect("/login?failed=1")
    response = redirect(request.path)
    _set_session(request, response, guard)
    return response


def _set_session(request: web.Request, response: web.StreamResponse, guard: Guard) -> None:
    response.set_cookie(
        guard.cookie,
        guard.new_session(),
        httponly=True,
        samesite="Strict",
        secure=request.app[SETTINGS].tls,
        path="/",
    )


async def login_page(request: web.Request) -> web.StreamResponse:
    return static_file("login.html", "text/html")


async def login(request: web.Request) -> web.StreamResponse:
    form = await request.post()
    guard = request.app[GUARD]
    if not guard.token_matches(str(form.get("token", ""))):
        return redirect("/login?failed=1")
    response = redirect("/")
    _set_session(request, response, guard)
    return response


async def no_icon(request: web.Request) -> web.StreamResponse:
    return web.Response(status=204)


async def page(request: web.Request) -> web.StreamResponse:
    return static_file("index.html", "text/html")


async def asset(request: web.Request) -> web.StreamResponse:
    name = request.match_info["name"]
    kinds = {".js": "text/javascript", ".css": "text/css"}
    kind = kinds.get(name[name.rfind(".") :]) if "." in name else None
    if kind is None or "/" in name or not (STATIC / name).is_file():
        return refused(404, "no such file")
    return static_file(name, kind)


def make_app(
    settings: ConsoleSettings, live: Live, guard: Guard, signer: Signer
) -> web.Application:
    from centrality.console import posts, reads

    app = web.Application(middlewares=[headers, gate], client_max_size=64 * 1024)
    app[SETTINGS], app[LIVE], app[GUARD], app[SIGNER] = settings, live, guard, signer
    app.router.add_get("/", page)
    app.router.add_get("/favicon.ico", no_icon)
    app.router.add_get("/login", login_page)
    app.router.add_post("/login", login)
    app.router.add_get("/static/{name}", asset)
    reads.routes(app)
    posts.routes(app)
    return app
