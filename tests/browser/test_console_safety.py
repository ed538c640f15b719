"""What must change nothing: values from events that look like markup or addresses, a key the
action workers do not trust, a console that knows its key is not trusted, and a request from
another site."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from playwright.async_api import Page, expect

from centrality.bench.browser import ConsoleProcess
from centrality.bench.console_fleet import fleet, node_status, publish
from centrality.local_http import LocalServer, QuietHandler
from centrality.pipeline import Pipeline
from schemas.events import NodeStatusChanged
from schemas.runtime.settings import KafkaSettings
from schemas.runtime.topic_reader import TopicReader
from schemas.topics import topic_name
from tests.browser.conftest import Shots, console_env, logged_in, trusted_on
from tests.support.operators import ALICE, MALLORY

HOSTILE = (
    "<script>window.pwned='name'</script>",
    "javascript:window.pwned='link'",
    '"><img src=x onerror="window.pwned=\'img\'">',
)


def hostile_statuses() -> list[NodeStatusChanged]:
    now = datetime.now(UTC)
    found = []
    for i, name in enumerate(HOSTILE):
        status = node_status(1 + i * 100, now)  # quarantined, in cluster c1
        payload = status.payload.model_copy(
            update={"why": f"<img src=x onerror=\"window.pwned='why'\"> {i}", "incident": name}
        )
        found.append(status.model_copy(update={"subject": name, "payload": payload}))
    return found


async def seed(kafka: KafkaSettings, extra: list[Any] | None = None) -> None:
    await publish(kafka, fleet(20, datetime.now(UTC)) + (extra or []))


async def records(kafka: KafkaSettings, name: str) -> list[bytes]:
    """Every record on one of the test's topics."""
    found: list[bytes] = []
    reader = TopicReader(
        kafka,
        topic_name(name, kafka),
        lambda batch: found.extend(r.value or b"" for r in batch),
        client_id="test-records",
    )
    try:
        await reader.load()
    finally:
        await reader.stop()
    return found


async def test_hostile_strings_are_shown_as_text_and_run_nothing(
    page: Page,
    worker_env: dict[str, str],
    kafka_settings: KafkaSettings,
    tmp_path: Path,
    shots: Shots,
) -> None:
    await seed(kafka_settings, hostile_statuses())
    env = console_env(worker_env, tmp_path, ALICE, trusted=trusted_on("c0", "c1"))
    with ConsoleProcess(env, tmp_path / "console.log") as console:
        await logged_in(page, console)
        await page.fill("input[name='q']", "onerror")
        await expect(page.locator(".listing-nodes")).to_have_attribute("data-shown", "3")
        for name in HOSTILE:
            node = page.locator("td.col-node a").filter(has_text=name)
            await expect(node).to_have_text(name)
            assert (await node.get_attribute("href") or "").startswith("#/node/")
            incident = page.locator("td.col-incident a").filter(has_text=name)
            assert (await incident.get_attribute("href") or "").startswith("#/incident/")
        assert await page.locator("main img, main script").count() == 0
        await shots.take(page, "hostile")
        await page.locator("td.col-node a").filter(has_text=HOSTILE[1]).click()
        await expect(page.locator("h1 .subject")).to_have_text(HOSTILE[1])
        await expect(page.locator("table.fields")).to_contain_text("onerror=\"window.pwned='why'\"")
        assert await page.evaluate("() => window.pwned === undefined")
        assert await page.locator("main img, main script").count() == 0


async def test_a_command_signed_with_a_key_the_workers_do_not_trust_is_refused_and_shown(
    page: Page, worker_env: dict[str, str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    await seed(kafka_settings)
    workers = {**worker_env, "CENTRALITY_OPERATORS": json.dumps(trusted_on("c0", "c1"))}
    # Where mallory runs the console nobody is trusted: it cannot tell, so it sends.
    env = console_env(worker_env, tmp_path, MALLORY)
    with (
        Pipeline(workers, tmp_path / "logs", workers=("actions",)),
        ConsoleProcess(env, tmp_path / "console.log") as console,
    ):
        base = await logged_in(page, console)
        await expect(page.locator("#who")).to_contain_text("signed as mallory")
        await page.goto(f"{base}#/node/gpu-00003")
        await page.click("button[data-verb='quarantine']")
        await page.fill("dialog textarea[name='reason']", "let me in")
        await page.click("dialog button.confirm")
        result = page.locator("dialog .result")
        await expect(result).to_have_attribute("data-verdict", "dead-lettered", timeout=60_000)
        await expect(result).to_contain_text("unknown operator 'mallory'")
    assert not await records(kafka_settings, "actions"), "an action was taken on mallory's word"


async def test_a_console_whose_key_is_not_trusted_is_read_only_and_says_why(
    page: Page, worker_env: dict[str, str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    await seed(kafka_settings)
    env = console_env(worker_env, tmp_path, MALLORY, trusted=trusted_on("c0", "c1"))
    with ConsoleProcess(env, tmp_path / "console.log") as console:
        base = await logged_in(page, console)
        await expect(page.locator("#who")).to_contain_text("read-only: operator mallory's key")
        await page.goto(f"{base}#/node/gpu-00003")
        for verb in ("quarantine", "release", "benchmark"):
            await expect(page.locator(f"button[data-verb='{verb}']")).to_be_disabled()
        status, error = await page.evaluate(
            """async () => {
                const session = await (await fetch("/api/session")).json();
                const order = {verb: "quarantine", targets: ["gpu-00003"], reason: "x"};
                const r = await fetch("/api/command", {method: "POST",
                    headers: {"Content-Type": "application/json", "X-CSRF-Token": session.csrf},
                    body: JSON.stringify(order)});
                return [r.status, (await r.json()).error];
            }"""
        )
        assert status == 403 and error.startswith("read-only: operator mallory's key")
    assert not await records(kafka_settings, "triggers")


class EvilSite(LocalServer):
    """Another origin whose page posts to the console with the visitor's cookies: a form, and
    a fetch."""

    def __init__(self, console: str) -> None:
        self.console = console

    def __enter__(self) -> EvilSite:
        body = EVIL_PAGE.replace("CONSOLE", self.console).encode()

        class Evil(QuietHandler):
            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/html")
                self.end_headers()
                self.wfile.write(body)

        self.serve(Evil)
        return self


EVIL_PAGE = """<!doctype html><html><body>
<form id="f" method="post" action="CONSOLE/api/command" enctype="text/plain">
<input name='{"verb":"quarantine","targets":["gpu-00003"],"reason":"x","pad":"' value='"}'>
</form>
<script>
fetch("CONSOLE/api/command", {method: "POST", mode: "no-cors", credentials: "include",
  headers: {"Content-Type": "text/plain"},
  body: JSON.stringify({verb: "quarantine", targets: ["gpu-00003"], reason: "x"})})
  .catch(() => null)  // the console's answer is not this site's to read (CORP)
  .finally(() => document.getElementById("f").submit());
</script></body></html>"""


async def test_a_cross_site_post_changes_nothing(
    page: Page, worker_env: dict[str, str], kafka_settings: KafkaSettings, tmp_path: Path
) -> None:
    await seed(kafka_settings)
    env = console_env(worker_env, tmp_path, ALICE, trusted=trusted_on("c0", "c1"))
    with ConsoleProcess(env, tmp_path / "console.log") as console:
        base = await logged_in(page, console)  # the visitor has a session with the console
        with EvilSite(base.rstrip("/")) as evil:
            answers: list[int] = []
            page.on(
                "response",
                lambda r: answers.append(r.status) if r.url.endswith("/api/command") else None,
            )
            await page.goto(f"http://127.0.0.1:{evil.port}/")
            await page.wait_for_timeout(2000)
    assert answers and all(status in (401, 403) for status in answers), answers
    assert not await records(kafka_settings, "triggers"), "a command from another site was sent"
