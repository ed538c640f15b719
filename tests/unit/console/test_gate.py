"""Who may read the console and who may change anything through it."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.unit.console.conftest import TOKEN, logged_in

Client = TestClient
ORDER = {"verb": "quarantine", "targets": ["gpu-00001"], "reason": "checking"}


def origin(client: Client) -> str:
    return f"http://{client.host}:{client.port}"


async def test_nothing_is_read_without_logging_in(acting: Client) -> None:
    page = await acting.get("/", allow_redirects=False)
    assert page.status == 303 and page.headers["Location"] == "/login"
    api = await acting.get("/api/nodes")
    assert api.status == 401
    wrong = await acting.get("/?token=guess", allow_redirects=False)
    assert wrong.headers["Location"] == "/login?failed=1"
    assert (await acting.get("/api/nodes")).status == 401


async def test_the_login_form_and_link_give_a_session(acting: Client) -> None:
    form = await acting.post(
        "/login", data={"token": TOKEN}, headers={"Origin": origin(acting)}, allow_redirects=False
    )
    assert form.status == 303
    cookie = next(iter(form.cookies.values()))
    assert cookie["httponly"] and cookie["samesite"] == "Strict"
    listing = await (await acting.get("/api/nodes")).json()
    assert listing["total"] == 200


async def test_every_answer_forbids_scripts_and_frames_from_elsewhere(acting: Client) -> None:
    await logged_in(acting)
    for path in ("/", "/api/nodes", "/login", "/static/main.js"):
        answer = await acting.get(path)
        csp = answer.headers["Content-Security-Policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert answer.headers["X-Content-Type-Options"] == "nosniff"
    page = await (await acting.get("/")).text()
    assert TOKEN not in page and '<script type="module" src="/static/main.js">' in page


async def test_a_cross_site_post_is_refused(acting: Client) -> None:
    csrf = await logged_in(acting)
    evil = {"Origin": "http://evil.example", "X-CSRF-Token": csrf}
    answer = await acting.post("/api/command", json=ORDER, headers=evil)
    assert answer.status == 403
    assert (await answer.json())["error"] == "cross-site request refused"
    by_metadata = {"Sec-Fetch-Site": "cross-site", "X-CSRF-Token": csrf}
    assert (await acting.post("/api/command", json=ORDER, headers=by_metadata)).status == 403


async def test_a_post_without_the_csrf_token_is_refused(acting: Client) -> None:
    csrf = await logged_in(acting)
    for headers in ({}, {"X-CSRF-Token": "0" * len(csrf)}):
        answer = await acting.post(
            "/api/preview", json=ORDER, headers={"Origin": origin(acting), **headers}
        )
        assert answer.status == 403
        assert "CSRF" in (await answer.json())["error"]
    fine = await acting.post(
        "/api/preview", json=ORDER, headers={"Origin": origin(acting), "X-CSRF-Token": csrf}
    )
    assert fine.status == 200


async def test_a_name_that_is_not_loopback_is_refused(acting: Client) -> None:
    """A site whose DNS name was rebound to 127.0.0.1 is not the console's origin."""
    await logged_in(acting)
    answer = await acting.get("/api/nodes", headers={"Host": f"evil.example:{acting.port}"})
    assert answer.status == 421


async def test_a_read_only_console_changes_nothing_and_says_why(read_only: Client) -> None:
    csrf = await logged_in(read_only)
    session: dict[str, Any] = await (await read_only.get("/api/session")).json()
    assert session["can_act"] is False
    assert session["why_read_only"] == "read-only: mallory is not trusted here"
    headers = {"Origin": origin(read_only), "X-CSRF-Token": csrf}
    for path, body in (
        ("/api/command", ORDER),
        ("/api/silences", {"cluster": "c0", "for": "1h", "reason": "x"}),
        ("/api/silences/expire", {"id": "s-1", "reason": "x"}),
    ):
        answer = await read_only.post(path, json=body, headers=headers)
        assert answer.status == 403
        assert (await answer.json())["error"] == "read-only: mallory is not trusted here"


async def test_a_command_without_a_reason_is_not_sent(acting: Client) -> None:
    csrf = await logged_in(acting)
    headers = {"Origin": origin(acting), "X-CSRF-Token": csrf}
    answer = await acting.post("/api/command", json=ORDER | {"reason": " "}, headers=headers)
    assert answer.status == 400
    assert (await answer.json())["error"].startswith("a reason is required")
    previewed = await acting.post("/api/preview", json=ORDER | {"reason": ""}, headers=headers)
    assert (await previewed.json())["what"].startswith("Drain and taint gpu-00001 (c1)")
