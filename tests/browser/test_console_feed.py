"""Live: a status change is on the page within 2 s without a reload; when the console goes
away the page says it lost its feed, and it picks the feed up again once the console is back."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from playwright.async_api import Page, expect

from centrality.bench.browser import ConsoleProcess
from centrality.bench.console_fleet import fleet, node_status, publish
from schemas.runtime.settings import KafkaSettings
from tests.browser.conftest import Shots, console_env, logged_in
from tests.ports import free_port
from tests.support.operators import ALICE

LIVE_S = 2.0


async def changed(kafka: KafkaSettings, node: int, why: str) -> float:
    """Publishes a new status of one node, as the streams app would; when it was acknowledged."""
    status = node_status(node, datetime.now(UTC))
    payload = status.payload.model_copy(update={"state": "quarantined", "why": why})
    await publish(kafka, [status.model_copy(update={"payload": payload})])
    return time.monotonic()


async def test_changes_arrive_live_and_a_lost_feed_is_said_and_picked_up_again(
    page: Page,
    worker_env: dict[str, str],
    kafka_settings: KafkaSettings,
    tmp_path: Path,
    shots: Shots,
) -> None:
    await publish(kafka_settings, fleet(40, datetime.now(UTC)))
    env = console_env(worker_env, tmp_path, ALICE, port=free_port())
    feed = page.locator("#feed")
    console = ConsoleProcess(env, tmp_path / "console.log")
    with console:
        base = await logged_in(page, console)
        await page.goto(f"{base}#/node/gpu-00010")
        await expect(page.locator("h1 .state")).to_have_text("in_service")
        sent = await changed(kafka_settings, 10, "checked by the feed test")
        await expect(page.locator("h1 .state")).to_have_text("quarantined", timeout=LIVE_S * 1000)
        assert time.monotonic() - sent <= LIVE_S

        console.stop()
        await expect(feed).to_have_attribute("data-live", "no", timeout=10_000)
        await expect(feed).to_contain_text("feed lost")
        await shots.take(page, "feed-lost")

        console.start()  # the same port and token: the session holds
        await expect(feed).to_have_attribute("data-live", "yes", timeout=15_000)
        await page.goto(f"{base}#/fleet")
        await expect(page.locator(".listing-nodes")).to_have_attribute("data-shown", "40")
        await page.fill("input[name='q']", "back again")
        await changed(kafka_settings, 20, "back again")
        await expect(page.locator(".listing-nodes")).to_have_attribute(
            "data-shown", "1", timeout=LIVE_S * 1000 + 500
        )
