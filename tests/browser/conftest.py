"""The console in a real browser: Debian's chromium through Playwright, one per session, a
fresh context (cookies, storage) per test; `centrality console` as its own process.

Playwright's async API, on the session's event loop: its sync API runs a loop of its own in the
test's thread, where the stack's fixtures need `asyncio.run`.

Screenshots go to the test's own folder, or to docs/images/ when
`CENTRALITY_DOCS_SCREENSHOTS=1` asks for them (how docs/operations.md's are made).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, Playwright, async_playwright

from centrality.bench.browser import ConsoleProcess, chromium
from schemas.operators import OperatorKey
from tests.ports import free_port
from tests.support.operators import TRUSTED

DOCS_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"
TOKEN = "browser-test-token"


@pytest.fixture(scope="session")
async def playwright() -> AsyncIterator[Playwright]:
    async with async_playwright() as started:
        yield started


@pytest.fixture(scope="session")
async def browser(playwright: Playwright) -> AsyncIterator[Browser]:
    launched = await chromium(playwright)
    yield launched
    await launched.close()


@pytest.fixture
async def page(browser: Browser) -> AsyncIterator[Page]:
    """A page whose scripts must not fail, nor open a dialog of the browser's own."""
    context = await browser.new_context(viewport={"width": 1280, "height": 720})
    opened = await context.new_page()
    failures: list[str] = []
    opened.on("pageerror", lambda exc: failures.append(str(exc)))
    opened.on("dialog", lambda dialog: failures.append(f"a dialog opened: {dialog.message}"))
    yield opened
    await context.close()
    assert not failures, failures


class Shots:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def take(self, page: Page, name: str) -> Path:
        path = self.folder / f"console-{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        await page.screenshot(path=str(path))
        return path


@pytest.fixture
def shots(tmp_path: Path) -> Shots:
    wanted = os.environ.get("CENTRALITY_DOCS_SCREENSHOTS") == "1"
    return Shots(DOCS_IMAGES if wanted else tmp_path)


def console_env(
    worker_env: dict[str, str],
    tmp_path: Path,
    key: OperatorKey | None,
    *,
    trusted: dict[str, object] | None = None,
    port: int | None = None,
) -> dict[str, str]:
    """How a person runs the console against the test's stack: their key (or none), the
    operators trusted where it runs (None: none configured there), a port and a token."""
    key_file = tmp_path / f"{key.name if key else 'nobody'}.key"
    if key is not None and not key_file.exists():
        key.save(key_file)
    env = {
        **worker_env,
        "CENTRALITY_OPERATOR_KEY_FILE": str(key_file),
        "CENTRALITY_OPERATORS_FILE": str(tmp_path / "console-operators.json"),
        "CENTRALITY_CONSOLE_PORT": str(port or free_port()),
        "CENTRALITY_CONSOLE_TOKEN": TOKEN,
    }
    if trusted is not None:
        env["CENTRALITY_OPERATORS"] = json.dumps(trusted)
    return env


def trusted_on(*clusters: str) -> dict[str, object]:
    """The test operators (tests.support.operators), alice trusted on `clusters`."""
    found: dict[str, dict[str, object]] = {n: o.model_dump(mode="json") for n, o in TRUSTED.items()}
    found["alice"]["clusters"] = list(clusters)
    return dict(found)


async def logged_in(page: Page, console: ConsoleProcess) -> str:
    """Opens the console's printed address with its token: the address to use after."""
    base = console.address.partition("?")[0]
    await page.goto(f"{base}?token={TOKEN}")
    await page.wait_for_selector("#feed[data-live='yes']")
    return base
