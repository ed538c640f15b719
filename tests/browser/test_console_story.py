"""The console on the real stack after a simulated bad day (`centrality simulate`, the three
workers): the fleet as the streams app holds it, filtered; an incident and a node with its story
from ClickHouse; a quarantine from the page, carried out by the action worker (checked in
ClickHouse); a silence added and expired; the jobs. The screenshots of docs/operations.md are
taken here (`CENTRALITY_DOCS_SCREENSHOTS=1`)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import hostlist
from playwright.async_api import Page, expect

from centrality.bench.browser import CLI, ConsoleProcess
from centrality.pipeline import Pipeline
from centrality.slack_fake import SlackFake
from collectors.simulate.config import SimConfig
from collectors.simulate.model import ClusterModel
from schemas.runtime.settings import KafkaSettings
from streams.history.query import rows_for
from streams.history.settings import ClickHouseSettings
from tests.browser.conftest import Shots, console_env, logged_in, trusted_on
from tests.support.operators import ALICE

NODES, XID_NODES, JOBS, SEED = 40, 2, 4, 5
STORY_S = 120_000  # ms: how long the workers may take over a step of the story
NAMES = [f"node-{i:04d}" for i in range(NODES)]


async def until(
    what: str, check: Callable[[], Any], pipeline: Pipeline, timeout_s: float = 120
) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (found := check()):
        pipeline.check()
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout_s:g} s")
        await asyncio.sleep(1.0)
    return found


def simulate(env: dict[str, str]) -> None:
    done = subprocess.run(
        [CLI, "simulate", "--nodes", str(NODES), "--jobs", str(JOBS), "--xid-nodes",
         str(XID_NODES), "--seed", str(SEED), "--duration-s", "330", "--json"],
        env={**os.environ, **env}, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def results(clickhouse: ClickHouseSettings, subject: str) -> list[tuple[str, dict[str, Any]]]:
    return [(r.type, json.loads(r.payload)) for r in rows_for(clickhouse, [subject])]


async def test_the_console_after_a_bad_day(
    page: Page,
    worker_env: dict[str, str],
    kafka_settings: KafkaSettings,
    clickhouse_settings: ClickHouseSettings,
    tmp_path: Path,
    shots: Shots,
) -> None:
    trusted = trusted_on("sim")
    xid_nodes = ClusterModel(
        SimConfig(nodes=NODES, xid_nodes=XID_NODES, seed=SEED), datetime.now(UTC)
    ).xid_nodes
    with SlackFake() as slack:
        workers = {
            **worker_env,
            "CENTRALITY_OPERATORS": json.dumps(trusted),
            "CENTRALITY_SLACK_TOKEN": "xoxb-browser",
            "CENTRALITY_SLACK_BASE_URL": slack.base_url,
        }
        env = console_env(worker_env, tmp_path, ALICE, trusted=trusted)
        with Pipeline(workers, tmp_path / "logs") as pipeline:
            simulate(workers)
            with ConsoleProcess(env, tmp_path / "console.log") as console:
                base = await logged_in(page, console)
                await fleet_and_filters(page, xid_nodes, shots)
                await incident_and_node(page, base, xid_nodes, shots, pipeline)
                target = next(n for n in NAMES if n not in xid_nodes)
                await quarantine(page, base, target, shots)
                await until(
                    "the quarantine in ClickHouse",
                    lambda: any(
                        t == "ActionSucceeded"
                        and p["trigger_type"] == "QuarantineNodes"
                        and p["operator"] == "alice"
                        for t, p in results(clickhouse_settings, target)
                    ),
                    pipeline,
                )
                silence_id = await silence(page, base, target, shots)
                await until(
                    "the silence added and expired in ClickHouse",
                    lambda: (
                        {t for t, _ in results(clickhouse_settings, silence_id)}
                        >= {"SilenceAdded", "SilenceExpired"}
                    ),
                    pipeline,
                )
                await page.goto(f"{base}#/jobs")
                jobs = page.locator(".listing-jobs")
                await expect(jobs).to_have_attribute("data-shown", str(JOBS))
                await shots.take(page, "jobs")


async def fleet_and_filters(page: Page, xid_nodes: list[str], shots: Shots) -> None:
    listing = page.locator(".listing-nodes")
    await expect(listing).to_have_attribute("data-shown", str(NODES), timeout=STORY_S)
    search = page.locator("input[name='q']")
    await search.fill("Xid 79")  # every XID node, once the streams app decided on it
    await expect(listing).to_have_attribute("data-shown", str(XID_NODES), timeout=STORY_S)
    await search.fill("")
    await expect(listing).to_have_attribute("data-shown", str(NODES))
    await shots.take(page, "fleet")
    names = page.locator("input[name='names']")
    await names.fill(hostlist.collect_hostlist(xid_nodes))
    await expect(listing).to_have_attribute("data-shown", str(XID_NODES))
    shown = await page.locator("td.col-node a").all_inner_texts()
    assert sorted(shown) == sorted(xid_nodes)
    await names.fill("")
    await page.locator("button.chip[data-state='in_service']").click()
    await only_in_service_shown(page)
    await page.locator("button.chip[data-state='in_service']").click()
    await expect(listing).to_have_attribute("data-shown", str(NODES))


async def only_in_service_shown(page: Page, timeout_s: float = 10) -> None:
    """The chip's count and the rows come from one listing document, so they are read together:
    the story goes on meanwhile (benchmarked nodes come back into service)."""
    read = """() => {
      const chip = document.querySelector("button.chip.chosen[data-state='in_service']");
      const listing = document.querySelector(".listing-nodes");
      const states = [...listing.querySelectorAll("td.col-state")].map((td) => td.textContent);
      const count = chip && Number(chip.textContent.split(" ").pop());
      return chip && [count, Number(listing.dataset.shown), states];
    }"""
    deadline = time.monotonic() + timeout_s
    while not (
        (seen := await page.evaluate(read))
        and seen[0] == seen[1]
        and set(seen[2]) == {"in_service"}  # the rows drawn: the table draws what fits
    ):
        assert time.monotonic() < deadline, f"in_service chip and rows shown: {seen}"
        await page.wait_for_timeout(200)


async def incident_and_node(
    page: Page, base: str, xid_nodes: list[str], shots: Shots, pipeline: Pipeline
) -> None:
    await page.goto(f"{base}#/incidents")
    xid = page.locator("tr", has_text="79").locator("a[href^='#/incident/']").first
    await expect(xid).to_be_visible(timeout=STORY_S)  # the streams app's incident of the XIDs
    await xid.click()
    await expect(page.locator("p.title")).to_contain_text("79")
    members = await page.locator("table.members a").all_inner_texts()
    assert set(members) & set(xid_nodes), members
    await expect(page.locator("div.told, p.told")).to_be_visible()
    await shots.take(page, "incident")
    node = xid_nodes[0]
    await page.goto(f"{base}#/node/{node}")
    story = page.locator("table.timeline")
    deadline = time.monotonic() + STORY_S / 1000
    while not await story.filter(has_text="fatal_xid").count():  # the sink's pace
        pipeline.check()
        seen = await page.locator("main").inner_text()
        assert time.monotonic() < deadline, f"no fatal_xid decision in the timeline: {seen}"
        await page.reload()
        await page.wait_for_timeout(1000)
    await expect(story.locator("tr.decision").first).to_contain_text("Xid 79")
    links = await story.locator("td.about a").evaluate_all("as => as.map(a => a.hash)")
    assert f"#/node/{node}" in links
    await shots.take(page, "node")


async def quarantine(page: Page, base: str, node: str, shots: Shots) -> None:
    await page.goto(f"{base}#/node/{node}")
    await expect(page.locator("h1 .state")).to_have_text("in_service")
    await page.click("button[data-verb='quarantine']")
    dialog = page.locator("dialog")
    await expect(dialog.locator(".what")).to_contain_text(f"Drain and taint {node} (sim)")
    await expect(dialog.locator(".breaker")).to_contain_text("The breaker would")
    confirm = dialog.locator("button.confirm")
    await expect(confirm).to_be_disabled()  # no reason, no command
    await dialog.locator("textarea[name='reason']").fill("flaky NVLink, checking by hand")
    await expect(confirm).to_have_text(f"Quarantine {node}")
    await shots.take(page, "quarantine")
    await confirm.click()
    result = dialog.locator(".result")
    await expect(result).to_have_attribute("data-verdict", "succeeded", timeout=60_000)
    await dialog.locator("button.cancel").click()
    await expect(page.locator("h1 .state")).to_have_text("quarantined", timeout=10_000)
    await expect(page.locator("table.fields")).to_contain_text("alice")


async def silence(page: Page, base: str, node: str, shots: Shots) -> str:
    await page.goto(f"{base}#/silences")
    await page.click("button[data-verb='silence']")
    dialog = page.locator("dialog")
    await dialog.locator("input[name='cluster']").fill("sim")
    await dialog.locator("input[name='nodes']").fill(node)
    await dialog.locator("textarea[name='reason']").fill("driver upgrade")
    await dialog.locator("button.confirm").click()
    await expect(dialog.locator(".result")).to_have_attribute("data-verdict", "added")
    await dialog.locator("button.cancel").click()
    row = page.locator("tr[data-silence]").filter(has_text=node)
    await expect(row).to_have_count(1, timeout=10_000)
    await expect(row).to_contain_text("driver upgrade")
    silence_id = await row.get_attribute("data-silence")
    assert silence_id
    await shots.take(page, "silences")
    await row.locator("button[data-verb='expire']").click()
    await dialog.locator("textarea[name='reason']").fill("upgrade done")
    await dialog.locator("button.confirm").click()
    await expect(dialog.locator(".result")).to_have_attribute("data-verdict", "expired")
    await dialog.locator("button.cancel").click()
    await expect(page.locator(f"tr[data-silence='{silence_id}']")).to_have_count(0, timeout=10_000)
    return silence_id
